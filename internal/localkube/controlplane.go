package localkube

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
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
	if opts.BinDir == "" {
		if opts.BinDir, err = testbin.Dir(testbin.AllBinaries...); err != nil {
			return nil, err
		}
	}
	for _, b := range testbin.AllBinaries {
		if _, err := os.Stat(filepath.Join(opts.BinDir, b)); err != nil {
			return nil, fmt.Errorf("control plane binary %s missing in %s: run hack/build-testbin.sh", b, opts.BinDir)
		}
	}
	if opts.StartTimeout == 0 {
		opts.StartTimeout = 60 * time.Second
	}
	cp = &ControlPlane{procs: newProcesses(), dir: opts.Dir}
	if cp.dir == "" {
		if cp.dir, err = os.MkdirTemp("", "localkube-controlplane-"); err != nil {
			return nil, err
		}
		cp.ownDir = true
	}
	if cp.dir, err = filepath.Abs(cp.dir); err != nil {
		return nil, err
	}
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

	etcdPath, err := cp.deathSignalWrapper(opts.BinDir, "etcd")
	if err != nil {
		return nil, err
	}
	apiPath, err := cp.deathSignalWrapper(opts.BinDir, "kube-apiserver")
	if err != nil {
		return nil, err
	}
	etcdLog, err := openLog(filepath.Join(logDir, "etcd.log"))
	if err != nil {
		return nil, err
	}
	defer etcdLog.Close()
	apiLog, err := openLog(filepath.Join(logDir, "kube-apiserver.log"))
	if err != nil {
		return nil, err
	}
	defer apiLog.Close()

	var crdPaths []string
	for _, p := range opts.CRDDirectoryPaths {
		if hasFiles(p) {
			crdPaths = append(crdPaths, p)
		}
	}
	env := &envtest.Environment{
		BinaryAssetsDirectory:    opts.BinDir,
		CRDDirectoryPaths:        crdPaths,
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
			return nil, err
		}
	}
	env.ControlPlane.Etcd = &envtest.Etcd{Path: etcdPath, DataDir: etcdData, Out: etcdLog, Err: etcdLog}
	env.ControlPlane.APIServer = &envtest.APIServer{Path: apiPath, CertDir: certDir, Out: apiLog, Err: apiLog}
	args := env.ControlPlane.APIServer.Configure()
	if opts.ServiceAccountAdmission {
		args.Set("disable-admission-plugins", "")
	}
	for _, a := range opts.APIServerArgs {
		k, v, _ := strings.Cut(strings.TrimLeft(a, "-"), "=")
		args.Set(k, v)
	}
	cfg, err := env.Start()
	if err != nil {
		return nil, fmt.Errorf("starting etcd and kube-apiserver (logs in %s): %w", logDir, err)
	}
	cp.Env = env
	cp.Config = cfg

	admin, err := env.AddUser(envtest.User{Name: "localkube-admin", Groups: []string{"system:masters"}}, rest.CopyConfig(cfg))
	if err != nil {
		return nil, fmt.Errorf("provisioning admin user: %w", err)
	}
	if cp.kubeconfig, err = admin.KubeConfig(); err != nil {
		return nil, err
	}

	kcmKubeconfig, err := cp.componentKubeconfig(env, cfg, "system:kube-controller-manager")
	if err != nil {
		return nil, err
	}
	schedKubeconfig, err := cp.componentKubeconfig(env, cfg, "system:kube-scheduler")
	if err != nil {
		return nil, err
	}

	kcmArgs := []string{
		"--kubeconfig=" + kcmKubeconfig,
		"--authentication-kubeconfig=" + kcmKubeconfig,
		"--authorization-kubeconfig=" + kcmKubeconfig,
		"--leader-elect=false",
		"--use-service-account-credentials=false",
		"--cluster-name=localkube",
		"--authentication-skip-lookup=true",
		// Legacy token Secrets need the signing key and nothing here uses
		// them; bound tokens come from the TokenRequest API. EndpointSlices
		// and Endpoints refuse loopback addresses (API validation), so
		// with pods on 127.x their controllers could only fail and raise a
		// Warning Event on every Service; the runtime's resolver serves
		// Service names instead.
		"--controllers=*,-serviceaccount-token-controller,-endpointslice-controller,-endpoints-controller,-endpointslice-mirroring-controller",
	}
	if err := cp.startComponent(ctx, opts.BinDir, "kube-controller-manager", append(kcmArgs, opts.ControllerManagerArgs...), logDir, opts.StartTimeout); err != nil {
		return nil, err
	}
	schedArgs := []string{
		"--kubeconfig=" + schedKubeconfig,
		"--authentication-kubeconfig=" + schedKubeconfig,
		"--authorization-kubeconfig=" + schedKubeconfig,
		"--authentication-skip-lookup=true",
		"--leader-elect=false",
	}
	if err := cp.startComponent(ctx, opts.BinDir, "kube-scheduler", append(schedArgs, opts.SchedulerArgs...), logDir, opts.StartTimeout); err != nil {
		return nil, err
	}

	// The serviceaccount controller making "default" in "default" proves the
	// controller-manager's controllers run, not just its health endpoint.
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	if err := poll(ctx, opts.StartTimeout, func() (bool, error) {
		_, err := cs.CoreV1().ServiceAccounts(corev1.NamespaceDefault).Get(ctx, "default", getOpts)
		return err == nil, nil
	}); err != nil {
		return nil, fmt.Errorf("kube-controller-manager did not create the default ServiceAccount (log %s): %w", filepath.Join(logDir, "kube-controller-manager.log"), err)
	}
	return cp, nil
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

func (cp *ControlPlane) componentKubeconfig(env *envtest.Environment, cfg *rest.Config, user string) (string, error) {
	u, err := env.AddUser(envtest.User{Name: user, Groups: []string{"system:masters"}}, rest.CopyConfig(cfg))
	if err != nil {
		return "", fmt.Errorf("provisioning %s: %w", user, err)
	}
	kc, err := u.KubeConfig()
	if err != nil {
		return "", err
	}
	p := filepath.Join(cp.dir, strings.ReplaceAll(strings.TrimPrefix(user, "system:"), ":", "-")+".kubeconfig")
	return p, os.WriteFile(p, kc, 0o600)
}

func (cp *ControlPlane) startComponent(ctx context.Context, binDir, name string, args []string, logDir string, timeout time.Duration) error {
	var lastErr error
	// A free port picked here can be taken before the component binds it;
	// try a few.
	for range 3 {
		port, err := freePort()
		if err != nil {
			return err
		}
		logPath := filepath.Join(logDir, name+".log")
		logFile, err := openLog(logPath)
		if err != nil {
			return err
		}
		full := append([]string{"--secure-port=" + strconv.Itoa(port), "--bind-address=127.0.0.1"}, args...)
		cmd := exec.Command(filepath.Join(binDir, name), full...)
		cmd.Stdout, cmd.Stderr = logFile, logFile
		cmd.Dir = cp.dir
		p, err := cp.procs.start(cmd)
		logFile.Close()
		if err != nil {
			return fmt.Errorf("starting %s: %w", name, err)
		}
		c := &component{name: name, proc: p, log: logPath}
		lastErr = waitHealthy(ctx, p, port, timeout)
		if lastErr == nil {
			cp.components = append(cp.components, c)
			return nil
		}
		p.stop(0)
	}
	return fmt.Errorf("%s did not become healthy (log %s): %w", name, filepath.Join(logDir, name+".log"), lastErr)
}

func waitHealthy(ctx context.Context, p *process, port int, timeout time.Duration) error {
	hc := &http.Client{
		Timeout:   2 * time.Second,
		Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}, //nolint:gosec // self-signed serving cert of a local component
	}
	defer hc.CloseIdleConnections()
	url := fmt.Sprintf("https://127.0.0.1:%d/healthz", port)
	return poll(ctx, timeout, func() (bool, error) {
		if p.exited() {
			return false, fmt.Errorf("exited with code %d", p.exitCode)
		}
		resp, err := hc.Get(url)
		if err != nil {
			return false, nil
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK, nil
	})
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
