package localkube

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/gomomento/valkey-operator/internal/localkube/procscan"
	"github.com/gomomento/valkey-operator/internal/testbin"
)

// ControlPlaneOptions configures StartControlPlane.
type ControlPlaneOptions struct {
	// BinDir holds etcd, kube-apiserver, kube-controller-manager and
	// kube-scheduler. Default: testbin.Dir (bin/testbin, built by
	// hack/build-testbin.sh).
	BinDir string
	// Dir receives kubeconfigs and component logs (Dir/logs). Default: a
	// temporary directory removed by Stop.
	Dir string
	// CRDDirectoryPaths are installed once the apiserver is up; missing or
	// empty directories are fine.
	CRDDirectoryPaths []string
	// ServiceAccountAdmission turns the apiserver's ServiceAccount admission
	// plugin back on (envtest disables it). With it, a pod can only be created
	// once the controller-manager has made the namespace's "default"
	// ServiceAccount, and every pod gets a projected token volume.
	ServiceAccountAdmission bool
	// APIServerArgs, ControllerManagerArgs and SchedulerArgs are extra
	// "--flag=value" arguments; APIServerArgs override envtest's defaults.
	APIServerArgs         []string
	ControllerManagerArgs []string
	SchedulerArgs         []string
	// PodNetwork, when set, serves the control plane to the pods of real
	// nodes. Without it the apiserver listens on loopback alone, which is
	// all localkube's pods (processes of this machine) need.
	PodNetwork *PodNetwork
	// StartTimeout bounds each component's start. Default 60s (two cores
	// and a cold etcd can be slow).
	StartTimeout time.Duration
}

// ControlPlane is a running etcd + kube-apiserver (through envtest) plus the
// real kube-controller-manager and kube-scheduler.
type ControlPlane struct {
	// Env is the envtest environment running etcd and the apiserver.
	Env *envtest.Environment
	// Config is an admin (system:masters) client configuration.
	Config *rest.Config
	// PodNetwork is ControlPlaneOptions.PodNetwork with its defaults
	// filled in, nil without one.
	PodNetwork *PodNetwork

	dir        string
	ownDir     bool
	kubeconfig []byte
	procs      *processes
	components []*component
}

type component struct {
	name string
	proc *process
	log  string
}

// StartControlPlane starts etcd and kube-apiserver, installs CRDs, then
// starts kube-controller-manager and kube-scheduler and waits until both
// report healthy. On error everything already started is stopped.
func StartControlPlane(ctx context.Context, opts ControlPlaneOptions) (cp *ControlPlane, err error) {
	if err := opts.complete(); err != nil {
		return nil, err
	}
	if cp, err = newControlPlane(opts.Dir); err != nil {
		return nil, err
	}
	cp.PodNetwork = opts.PodNetwork
	started := cp
	defer func() {
		if err != nil {
			_ = started.Stop()
		}
	}()
	logDir := filepath.Join(cp.dir, "logs")
	if err := os.MkdirAll(logDir, 0o755); err != nil {
		return nil, err
	}
	if err := cp.startEtcdAndAPIServer(opts, logDir); err != nil {
		return nil, err
	}
	if err := cp.startControllers(ctx, opts, logDir); err != nil {
		return nil, err
	}
	if err := cp.waitForControllers(ctx, opts.StartTimeout, logDir); err != nil {
		return nil, err
	}
	return cp, nil
}

// complete fills in defaults and checks every binary is there before
// anything starts.
func (opts *ControlPlaneOptions) complete() (err error) {
	if opts.BinDir == "" {
		if opts.BinDir, err = testbin.Dir(testbin.AllBinaries...); err != nil {
			return err
		}
	}
	for _, b := range testbin.AllBinaries {
		if _, err := os.Stat(filepath.Join(opts.BinDir, b)); err != nil {
			return fmt.Errorf("control plane binary %s missing in %s: run hack/build-testbin.sh", b, opts.BinDir)
		}
	}
	if opts.StartTimeout == 0 {
		opts.StartTimeout = 60 * time.Second
	}
	if opts.PodNetwork != nil {
		pn := *opts.PodNetwork
		if err := pn.complete(); err != nil {
			return err
		}
		opts.PodNetwork = &pn
	}
	return nil
}

// newControlPlane makes the work directory, a temporary one when dir is
// empty.
func newControlPlane(dir string) (cp *ControlPlane, err error) {
	cp = &ControlPlane{procs: newProcesses(), dir: dir}
	if cp.dir == "" {
		if cp.dir, err = os.MkdirTemp("", "localkube-controlplane-"); err != nil {
			return nil, err
		}
		cp.ownDir = true
	}
	if cp.dir, err = filepath.Abs(cp.dir); err != nil {
		return nil, err
	}
	return cp, nil
}

// startEtcdAndAPIServer starts both through envtest and provisions the
// admin kubeconfig.
func (cp *ControlPlane) startEtcdAndAPIServer(opts ControlPlaneOptions, logDir string) error {
	etcdPath, err := cp.deathSignalWrapper(opts.BinDir, "etcd")
	if err != nil {
		return err
	}
	apiPath, err := cp.deathSignalWrapper(opts.BinDir, "kube-apiserver")
	if err != nil {
		return err
	}
	etcdLog, err := openLog(filepath.Join(logDir, "etcd.log"))
	if err != nil {
		return err
	}
	defer etcdLog.Close()
	apiLog, err := openLog(filepath.Join(logDir, "kube-apiserver.log"))
	if err != nil {
		return err
	}
	defer apiLog.Close()

	env := &envtest.Environment{
		BinaryAssetsDirectory:    opts.BinDir,
		CRDDirectoryPaths:        dirsWithFiles(opts.CRDDirectoryPaths),
		ErrorIfCRDPathMissing:    false,
		ControlPlaneStartTimeout: opts.StartTimeout,
		ControlPlaneStopTimeout:  20 * time.Second,
	}
	// Keep etcd's data and the apiserver's certificates with the rest, so
	// one directory holds (and one RemoveAll clears) the whole cluster.
	etcdData := filepath.Join(cp.dir, "etcd")
	certDir := filepath.Join(cp.dir, "apiserver")
	for _, d := range []string{etcdData, certDir} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			return err
		}
	}
	env.ControlPlane.Etcd = &envtest.Etcd{Path: etcdPath, DataDir: etcdData, Out: etcdLog, Err: etcdLog}
	env.ControlPlane.APIServer = &envtest.APIServer{Path: apiPath, CertDir: certDir, Out: apiLog, Err: apiLog}
	if opts.PodNetwork != nil {
		if err := opts.PodNetwork.configure(env.ControlPlane.APIServer); err != nil {
			return err
		}
	}
	configureAPIServer(env.ControlPlane.APIServer, opts)
	cfg, err := env.Start()
	if err != nil {
		return fmt.Errorf("starting etcd and kube-apiserver (logs in %s): %w", logDir, err)
	}
	cp.Env = env
	cp.Config = cfg
	return cp.provisionAdmin()
}

// configureAPIServer applies the options over envtest's default flags.
func configureAPIServer(api *envtest.APIServer, opts ControlPlaneOptions) {
	args := api.Configure()
	if opts.ServiceAccountAdmission {
		args.Set("disable-admission-plugins", "")
	}
	for _, a := range opts.APIServerArgs {
		k, v, _ := strings.Cut(strings.TrimLeft(a, "-"), "=")
		args.Set(k, v)
	}
}

func (cp *ControlPlane) provisionAdmin() (err error) {
	admin, err := cp.Env.AddUser(envtest.User{Name: "localkube-admin", Groups: []string{"system:masters"}}, rest.CopyConfig(cp.Config))
	if err != nil {
		return fmt.Errorf("provisioning admin user: %w", err)
	}
	cp.kubeconfig, err = admin.KubeConfig()
	return err
}

// waitForControllers waits for the serviceaccount controller to make
// "default" in "default": that proves the controller-manager's controllers
// run, not just its health endpoint.
func (cp *ControlPlane) waitForControllers(ctx context.Context, timeout time.Duration, logDir string) error {
	cs, err := kubernetes.NewForConfig(cp.Config)
	if err != nil {
		return err
	}
	if err := poll(ctx, timeout, func() (bool, error) {
		_, err := cs.CoreV1().ServiceAccounts(corev1.NamespaceDefault).Get(ctx, "default", getOpts)
		return err == nil, nil
	}); err != nil {
		return fmt.Errorf("kube-controller-manager did not create the default ServiceAccount (log %s): %w", filepath.Join(logDir, "kube-controller-manager.log"), err)
	}
	return nil
}

// deathSignalWrapper returns a path that runs bin/name with SIGKILL as its
// parent-death signal (see envReexec). envtest starts etcd and the apiserver
// in their own process group but without one, so a test binary killed by a
// timeout would leave them running.
func (cp *ControlPlane) deathSignalWrapper(binDir, name string) (string, error) {
	real := filepath.Join(binDir, name)
	self, err := os.Executable()
	if err != nil {
		return real, nil
	}
	dir := filepath.Join(cp.dir, "bin")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	p := filepath.Join(dir, name)
	script := "#!/bin/sh\n" + envReexec + "=" + shellQuote(real) + " exec " + shellQuote(self) + " \"$@\"\n"
	if err := os.WriteFile(p, []byte(script), 0o755); err != nil {
		return "", err
	}
	return p, nil
}

// Stop stops the scheduler, the controller-manager, the apiserver and etcd,
// in that order, and removes the work directory if StartControlPlane made it.
func (cp *ControlPlane) Stop() error {
	var errs []error
	for i := len(cp.components) - 1; i >= 0; i-- {
		cp.components[i].proc.stop(10 * time.Second)
	}
	cp.components = nil
	cp.procs.killAll()
	if cp.Env != nil {
		if err := cp.Env.Stop(); err != nil {
			errs = append(errs, fmt.Errorf("stopping apiserver and etcd: %w", err))
		}
		cp.Env = nil
	}
	if cp.ownDir && cp.dir != "" {
		if err := os.RemoveAll(cp.dir); err != nil {
			errs = append(errs, err)
		}
		cp.dir = ""
	}
	return errors.Join(errs...)
}

// StopAPIServer kills the kube-apiserver alone (SIGKILL: a crash, not a
// graceful shutdown, which would take it 20 s or more), as an outage of it
// would: etcd, the controller-manager, the scheduler and every pod keep
// running, and every client's requests fail until StartAPIServer.
func (cp *ControlPlane) StopAPIServer() error {
	if cp.Env == nil || cp.Env.ControlPlane.APIServer == nil {
		return errors.New("the control plane is not running")
	}
	// The process is started by envtest, which keeps it to itself; its
	// command line names this control plane's certificate directory.
	procs, err := procscan.Under(filepath.Join(cp.dir, "apiserver") + string(filepath.Separator))
	if err != nil {
		return err
	}
	killed := 0
	for _, p := range procs {
		if strings.Contains(p.Cmdline, "kube-apiserver") {
			if err := syscall.Kill(p.PID, syscall.SIGKILL); err == nil {
				killed++
			}
		}
	}
	if killed == 0 {
		return fmt.Errorf("no kube-apiserver process found under %s", cp.dir)
	}
	// Reaped by envtest, which then takes it as stopped.
	var stopErr error
	for range 50 {
		if stopErr = cp.Env.ControlPlane.APIServer.Stop(); stopErr == nil {
			return nil
		}
		time.Sleep(100 * time.Millisecond)
	}
	return fmt.Errorf("stopping kube-apiserver: %w", stopErr)
}

// StartAPIServer starts the kube-apiserver StopAPIServer stopped, on the
// same port with the same serving certificate and client CA, so every
// client configuration made before (Config, the kubeconfigs) stays valid.
func (cp *ControlPlane) StartAPIServer() error {
	if cp.Env == nil || cp.Env.ControlPlane.APIServer == nil {
		return errors.New("the control plane is not running")
	}
	// The first start's log file was closed once the process had it.
	logPath := filepath.Join(cp.dir, "logs", "kube-apiserver.log")
	apiLog, err := openLog(logPath)
	if err != nil {
		return err
	}
	defer apiLog.Close()
	api := cp.Env.ControlPlane.APIServer
	api.Out, api.Err = apiLog, apiLog
	if err := api.Start(); err != nil {
		return fmt.Errorf("starting kube-apiserver again (log %s): %w", logPath, err)
	}
	return nil
}

// KubeConfig returns an admin kubeconfig for the apiserver.
func (cp *ControlPlane) KubeConfig() []byte { return cp.kubeconfig }

// WriteKubeconfig writes the admin kubeconfig to path (mode 0600).
func (cp *ControlPlane) WriteKubeconfig(path string) error {
	return writeFileAtomic(path, cp.kubeconfig, 0o600)
}

// Dir is where kubeconfigs and component logs are kept.
func (cp *ControlPlane) Dir() string { return cp.dir }

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// dirsWithFiles keeps the directories holding at least one manifest.
func dirsWithFiles(dirs []string) []string {
	var with []string
	for _, d := range dirs {
		if hasFiles(d) {
			with = append(with, d)
		}
	}
	return with
}

func hasFiles(dir string) bool {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return false
	}
	for _, e := range entries {
		if !e.IsDir() && (strings.HasSuffix(e.Name(), ".yaml") || strings.HasSuffix(e.Name(), ".yml") || strings.HasSuffix(e.Name(), ".json")) {
			return true
		}
	}
	return false
}

func shellQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// writeFileAtomic replaces path with data through a rename, so a reader never
// sees a partial file.
func writeFileAtomic(path string, data []byte, mode os.FileMode) error {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	f, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp-")
	if err != nil {
		return err
	}
	tmp := f.Name()
	_, werr := f.Write(data)
	if werr == nil {
		werr = f.Chmod(mode)
	}
	if werr == nil {
		werr = f.Sync()
	}
	if cerr := f.Close(); werr == nil {
		werr = cerr
	}
	if werr == nil {
		werr = os.Rename(tmp, path)
	}
	if werr != nil {
		os.Remove(tmp)
	}
	return werr
}

// poll calls cond every 50ms until it reports done, returns an error, or
// timeout passes.
func poll(ctx context.Context, timeout time.Duration, cond func() (bool, error)) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	t := time.NewTicker(50 * time.Millisecond)
	defer t.Stop()
	for {
		ok, err := cond()
		if err != nil {
			return err
		}
		if ok {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-t.C:
		}
	}
}
