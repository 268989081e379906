// Command valkey-local runs a local Kubernetes control plane whose pods are
// processes on this machine (see docs/local-runtime.md).
//
//	valkey-local up   [--dir DIR] [--projection-delay D] [--etc-hosts]
//	valkey-local demo [--dir DIR] [--projection-delay D] [--etc-hosts]
//	valkey-local demo --real-node [--dir DIR]
//	valkey-local operator [--dir DIR] [-- valkey-operator flags]
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"

	"github.com/go-logr/logr/funcr"

	"github.com/gomomento/valkey-operator/internal/controller"
	"github.com/gomomento/valkey-operator/internal/localkube"
	"github.com/gomomento/valkey-operator/internal/operatorcmd"
	"github.com/gomomento/valkey-operator/internal/playground"
)

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "valkey-local:", err)
		os.Exit(1)
	}
}

func usage() {
	fmt.Fprintln(os.Stderr, "usage: valkey-local up|demo [--dir DIR] [--projection-delay D] [--etc-hosts]")
	fmt.Fprintln(os.Stderr, "       valkey-local operator [--dir DIR] [-- valkey-operator flags]")
	fmt.Fprintln(os.Stderr, "  up        the control plane and the node runtime")
	fmt.Fprintln(os.Stderr, "  demo      the same, plus the operator and the sample TLS cluster;")
	fmt.Fprintln(os.Stderr, "            with --real-node, on a real kubelet with containerd (root)")
	fmt.Fprintln(os.Stderr, "  operator  the operator alone, as its own process, for the pods of an `up` in DIR")
}

func run(args []string) error {
	if len(args) > 0 && args[0] == "operator" {
		return operator(args[1:])
	}
	if len(args) == 0 || (args[0] != "up" && args[0] != "demo") {
		usage()
		return errors.New("unknown or missing command")
	}
	fs := flag.NewFlagSet(args[0], flag.ContinueOnError)
	dir := fs.String("dir", ".local", "directory for the kubeconfig, logs and pod files")
	delay := fs.Duration("projection-delay", 0, "delay before ConfigMap and Secret changes reach pod files (default 3s)")
	etcHosts := fs.Bool("etc-hosts", args[0] == "demo" && os.Geteuid() == 0, "keep pod and Service names in /etc/hosts (root only; default on for demo as root)")
	var realNode *bool
	if args[0] == "demo" {
		realNode = fs.Bool("real-node", false, "run the pods as containers on a real node (containerd, runc, kubelet) and the operator by its chart (root only)")
	}
	if err := fs.Parse(args[1:]); err != nil {
		return err
	}
	if realNode != nil && *realNode {
		if os.Geteuid() != 0 {
			return errors.New("--real-node needs root")
		}
		*etcHosts = false
	}
	if *etcHosts && os.Geteuid() != 0 {
		return errors.New("--etc-hosts needs root")
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	go func() {
		// A second signal should not wait for a graceful stop.
		<-ctx.Done()
		stop()
	}()
	if args[0] == "demo" {
		return playground.Demo(ctx, playground.DemoOptions{Dir: *dir, EtcHosts: *etcHosts, ProjectionDelay: *delay, RealNode: *realNode})
	}
	log := funcr.New(func(prefix, args string) {
		fmt.Fprintln(os.Stderr, prefix, args)
	}, funcr.Options{})
	return localkube.RunLocal(ctx, localkube.LocalOptions{
		Dir:             *dir,
		ProjectionDelay: *delay,
		EtcHosts:        *etcHosts,
		Log:             log,
	})
}

// operator runs valkey-operator with its flags against the cluster that
// `valkey-local up` runs in dir: the apiserver of dir/kubeconfig (unless
// KUBECONFIG says otherwise), and the pods' files where the runtime keeps
// them, so that it can be stopped, killed and restarted on its own.
func operator(args []string) error {
	fs := flag.NewFlagSet("operator", flag.ContinueOnError)
	dir := fs.String("dir", ".local", "the directory of the `valkey-local up` to run against")
	if err := fs.Parse(args); err != nil {
		return err
	}
	abs, err := filepath.Abs(*dir)
	if err != nil {
		return err
	}
	if os.Getenv("KUBECONFIG") == "" {
		if err := os.Setenv("KUBECONFIG", filepath.Join(abs, "kubeconfig")); err != nil {
			return err
		}
	}
	if code := operatorcmd.Run(fs.Args(), controller.Runtime{NodePath: localkube.HostPathsUnder(abs)}); code != 0 {
		os.Exit(code)
	}
	return nil
}
