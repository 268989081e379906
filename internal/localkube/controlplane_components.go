package localkube

import (
	"context"
	"crypto/tls"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
)

// startControllers starts kube-controller-manager, then kube-scheduler,
// each with its own kubeconfig, and waits until each reports healthy.
func (cp *ControlPlane) startControllers(ctx context.Context, opts ControlPlaneOptions, logDir string) error {
	kcmKubeconfig, err := cp.componentKubeconfig(cp.Env, cp.Config, "system:kube-controller-manager")
	if err != nil {
		return err
	}
	schedKubeconfig, err := cp.componentKubeconfig(cp.Env, cp.Config, "system:kube-scheduler")
	if err != nil {
		return err
	}
	kcmArgs := controllerManagerArgs(kcmKubeconfig, opts.PodNetwork, filepath.Join(cp.dir, "apiserver"))
	if err := cp.startComponent(ctx, opts.BinDir, "kube-controller-manager", append(kcmArgs, opts.ControllerManagerArgs...), logDir, opts.StartTimeout); err != nil {
		return err
	}
	return cp.startComponent(ctx, opts.BinDir, "kube-scheduler", append(schedulerArgs(schedKubeconfig), opts.SchedulerArgs...), logDir, opts.StartTimeout)
}

func controllerManagerArgs(kubeconfig string, pn *PodNetwork, certDir string) []string {
	common := []string{
		"--kubeconfig=" + kubeconfig,
		"--authentication-kubeconfig=" + kubeconfig,
		"--authorization-kubeconfig=" + kubeconfig,
		"--leader-elect=false",
		"--use-service-account-credentials=false",
		"--cluster-name=localkube",
		"--authentication-skip-lookup=true",
	}
	if pn != nil {
		return append(common, pn.controllerManagerArgs(certDir)...)
	}
	return append(common,
		// Legacy token Secrets need the signing key and nothing here uses
		// them; bound tokens come from the TokenRequest API. EndpointSlices
		// and Endpoints refuse loopback addresses (API validation), so
		// with pods on 127.x their controllers could only fail and raise a
		// Warning Event on every Service; the runtime's resolver serves
		// Service names instead.
		"--controllers=*,-serviceaccount-token-controller,-endpointslice-controller,-endpoints-controller,-endpointslice-mirroring-controller",
	)
}

func schedulerArgs(kubeconfig string) []string {
	return []string{
		"--kubeconfig=" + kubeconfig,
		"--authentication-kubeconfig=" + kubeconfig,
		"--authorization-kubeconfig=" + kubeconfig,
		"--authentication-skip-lookup=true",
		"--leader-elect=false",
	}
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
