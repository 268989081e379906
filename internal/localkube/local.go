package localkube

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/client-go/rest"

	"github.com/gomomento/valkey-operator/internal/testbin"
)

// LocalOptions configures a local cluster: control plane plus runtime, as
// `valkey-local up` runs it.
type LocalOptions struct {
	// Dir holds everything: DIR/kubeconfig, DIR/controlplane (component
	// logs), DIR/pods. Default ".local".
	Dir string
	// ProjectionDelay, EtcHosts: see Options.
	ProjectionDelay time.Duration
	EtcHosts        bool
	// CRDDirectoryPaths are installed at start. Default: config/crd/bases of
	// the repository, when it has files.
	CRDDirectoryPaths []string
	// OnReady runs once the cluster is up and the kubeconfig written; the
	// operator joins here. An error stops the cluster.
	OnReady func(ctx context.Context, cfg *rest.Config) error
	// Out receives the how-to-use message. Default os.Stdout.
	Out io.Writer
	// Log receives the runtime's messages. Default: discarded.
	Log logr.Logger
	// ControlPlane and Runtime tune the parts; their Dir, BaseDir, Config
	// and CRD paths are filled in from the fields above.
	ControlPlane ControlPlaneOptions
	Runtime      Options
}

// Local is a running control plane with its runtime.
type Local struct {
	ControlPlane *ControlPlane
	Runtime      *Runtime
	// Kubeconfig is the path of the admin kubeconfig.
	Kubeconfig string

	lock *os.File
}

// StartLocal starts the control plane and the runtime and writes
// DIR/kubeconfig.
func StartLocal(ctx context.Context, opts LocalOptions) (l *Local, err error) {
	if opts.Dir == "" {
		opts.Dir = ".local"
	}
	dir, err := filepath.Abs(opts.Dir)
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	started := &Local{}
	defer func() {
		if err != nil {
			_ = started.Stop()
		}
	}()
	l = started
	if l.lock, err = lockDir(dir); err != nil {
		return nil, err
	}
	// Processes of an earlier run died with it (parent-death signal); their
	// files did not. Its volumes went with its etcd, which knew them.
	for _, d := range []string{"pods", "controlplane", "volumes"} {
		if err := os.RemoveAll(filepath.Join(dir, d)); err != nil {
			return nil, err
		}
	}
	cpOpts := opts.ControlPlane
	cpOpts.Dir = filepath.Join(dir, "controlplane")
	cpOpts.CRDDirectoryPaths = opts.CRDDirectoryPaths
	if cpOpts.CRDDirectoryPaths == nil {
		if root, err := testbin.RepoRoot(); err == nil {
			cpOpts.CRDDirectoryPaths = []string{filepath.Join(root, "config", "crd", "bases")}
		}
	}
	if l.ControlPlane, err = StartControlPlane(ctx, cpOpts); err != nil {
		return nil, err
	}
	rtOpts := opts.Runtime
	rtOpts.Config = l.ControlPlane.Config
	rtOpts.BaseDir = dir
	rtOpts.EtcHosts = rtOpts.EtcHosts || opts.EtcHosts
	if opts.ProjectionDelay != 0 {
		rtOpts.ProjectionDelay = opts.ProjectionDelay
	}
	if rtOpts.Log.GetSink() == nil {
		rtOpts.Log = opts.Log
	}
	if l.Runtime, err = StartRuntime(ctx, rtOpts); err != nil {
		return nil, err
	}
	l.Kubeconfig = filepath.Join(dir, "kubeconfig")
	if err := l.ControlPlane.WriteKubeconfig(l.Kubeconfig); err != nil {
		return nil, err
	}
	return l, nil
}

// lockDir keeps two clusters from sharing one directory.
func lockDir(dir string) (*os.File, error) {
	f, err := os.OpenFile(filepath.Join(dir, ".lock"), os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, err
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		return nil, fmt.Errorf("%s is in use by another valkey-local", dir)
	}
	return f, nil
}

// Stop stops the runtime (killing every pod process), then the control
// plane, and removes the kubeconfig.
func (l *Local) Stop() error {
	var errs []error
	if l.Runtime != nil {
		errs = append(errs, l.Runtime.Stop())
	}
	if l.ControlPlane != nil {
		errs = append(errs, l.ControlPlane.Stop())
	}
	if l.Kubeconfig != "" {
		if err := os.Remove(l.Kubeconfig); err != nil && !os.IsNotExist(err) {
			errs = append(errs, err)
		}
	}
	if l.lock != nil {
		l.lock.Close()
	}
	return errors.Join(errs...)
}

// RunLocal starts a local cluster, tells how to use it, runs OnReady and
// blocks until ctx ends, then stops everything. Stop also runs when this
// goroutine panics; should the process die some other way, every child
// gets SIGKILL from its parent-death signal.
func RunLocal(ctx context.Context, opts LocalOptions) (err error) {
	out := opts.Out
	if out == nil {
		out = os.Stdout
	}
	start := time.Now()
	l, err := StartLocal(ctx, opts)
	if err != nil {
		return err
	}
	defer func() {
		fmt.Fprintln(out, "stopping: pods, scheduler, controller-manager, apiserver, etcd")
		if serr := l.Stop(); serr != nil && err == nil {
			err = serr
		}
	}()
	nodes := l.Runtime.NodeNames()
	rel := l.Kubeconfig
	if wd, err := os.Getwd(); err == nil {
		if r, err := filepath.Rel(wd, l.Kubeconfig); err == nil && !strings.HasPrefix(r, "..") {
			rel = r
		}
	}
	fmt.Fprintf(out, "valkey-local is up after %s: nodes %s, pod addresses from %s\n",
		time.Since(start).Round(100*time.Millisecond), strings.Join(nodes, ", "), l.Runtime.opts.PodCIDR)
	fmt.Fprintf(out, "  kubectl --kubeconfig %s get nodes\n", rel)
	fmt.Fprintf(out, "  export KUBECONFIG=%s\n", l.Kubeconfig)
	if l.Runtime.hosts != nil {
		fmt.Fprintf(out, "  pod and Service names (*.svc.%s) are in %s\n", l.Runtime.ClusterDomain(), l.Runtime.opts.EtcHostsPath)
	}
	fmt.Fprintf(out, "  control plane logs: %s\n", filepath.Join(l.ControlPlane.Dir(), "logs"))
	fmt.Fprintln(out, "Press Ctrl-C to stop.")
	if opts.OnReady != nil {
		if err := opts.OnReady(ctx, rest.CopyConfig(l.ControlPlane.Config)); err != nil {
			return fmt.Errorf("on ready: %w", err)
		}
	}
	<-ctx.Done()
	return nil
}
