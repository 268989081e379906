package localkube

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

type probeKind int

const (
	probeStartup probeKind = iota
	probeLiveness
	probeReadiness
)

func (k probeKind) String() string {
	return [...]string{"Startup", "Liveness", "Readiness"}[k]
}

// probeContext is what a container's probes need from its start.
type probeContext struct {
	podIP   string
	started time.Time
	env     []string
	dir     string
	static  map[string]string
	paths   pathMap
	image   string
	ports   []corev1.ContainerPort
	outDir  string
}

// runProbes runs the startup probe to success, then liveness and readiness
// side by side, reporting transitions to the worker until ctx ends.
func (w *podWorker) runProbes(ctx context.Context, c *container, gen int, spec corev1.Container, pc *probeContext) {
	if spec.StartupProbe != nil {
		if !w.probeLoop(ctx, c, gen, probeStartup, spec.StartupProbe, pc) {
			return
		}
	}
	if spec.LivenessProbe != nil {
		go w.probeLoop(ctx, c, gen, probeLiveness, spec.LivenessProbe, pc)
	}
	if spec.ReadinessProbe != nil {
		go w.probeLoop(ctx, c, gen, probeReadiness, spec.ReadinessProbe, pc)
	}
}

func seconds(v int32, def int32) time.Duration {
	if v <= 0 {
		v = def
	}
	return time.Duration(v) * time.Second
}

// probeLoop applies one probe's timing and thresholds. It returns true when
// a startup probe succeeded.
func (w *podWorker) probeLoop(ctx context.Context, c *container, gen int, kind probeKind, p *corev1.Probe, pc *probeContext) bool {
	period := seconds(p.PeriodSeconds, 10)
	timeout := seconds(p.TimeoutSeconds, 1)
	failureThreshold := int(max(p.FailureThreshold, 1))
	if p.FailureThreshold == 0 {
		failureThreshold = 3
	}
	successThreshold := int(max(p.SuccessThreshold, 1))
	first := pc.started.Add(time.Duration(p.InitialDelaySeconds) * time.Second)
	if !sleepUntil(ctx, first) {
		return false
	}
	report := func(ok bool, msg string) {
		w.send(ctx, event{kind: evProbe, c: c, gen: gen, probe: kind, ok: ok, msg: msg})
	}
	var successes, failures int
	ready := false
	for {
		ok, msg := w.probeOnce(ctx, kind, p, pc, timeout)
		if ctx.Err() != nil {
			return false
		}
		if ok {
			successes++
			failures = 0
		} else {
			failures++
			successes = 0
		}
		switch kind {
		case probeStartup:
			if ok {
				report(true, "")
				return true
			}
			if failures >= failureThreshold {
				report(false, "Startup probe failed: "+msg)
				return false
			}
		case probeLiveness:
			if failures >= failureThreshold {
				report(false, "Liveness probe failed: "+msg)
				return false
			}
		case probeReadiness:
			if !ready && successes >= successThreshold {
				ready = true
				report(true, "")
			} else if ready && failures >= failureThreshold {
				ready = false
				report(false, "Readiness probe failed: "+msg)
			}
		}
		if !sleepUntil(ctx, time.Now().Add(period)) {
			return false
		}
	}
}

func sleepUntil(ctx context.Context, t time.Time) bool {
	d := time.Until(t)
	if d <= 0 {
		return ctx.Err() == nil
	}
	tm := time.NewTimer(d)
	defer tm.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-tm.C:
		return true
	}
}

func (w *podWorker) probeOnce(ctx context.Context, kind probeKind, p *corev1.Probe, pc *probeContext, timeout time.Duration) (bool, string) {
	switch {
	case p.Exec != nil:
		return w.execProbe(ctx, kind, p.Exec.Command, pc, timeout)
	case p.TCPSocket != nil:
		host := p.TCPSocket.Host
		if host == "" {
			host = pc.podIP
		}
		port, err := probePort(p.TCPSocket.Port, pc.ports)
		if err != nil {
			return false, err.Error()
		}
		addr := net.JoinHostPort(host, strconv.Itoa(port))
		conn, err := (&net.Dialer{Timeout: timeout}).DialContext(ctx, "tcp", addr)
		if err != nil {
			return false, fmt.Sprintf("dial tcp %s: %v", addr, err)
		}
		conn.Close()
		return true, ""
	case p.HTTPGet != nil:
		return httpProbe(ctx, p.HTTPGet, pc, timeout)
	case p.GRPC != nil:
		return false, "grpc probes are not supported by localkube"
	}
	return false, "probe has no handler"
}

func probePort(port intstr.IntOrString, ports []corev1.ContainerPort) (int, error) {
	if port.Type == intstr.Int {
		return port.IntValue(), nil
	}
	for _, p := range ports {
		if p.Name == port.StrVal {
			return int(p.ContainerPort), nil
		}
	}
	if n, err := strconv.Atoi(port.StrVal); err == nil {
		return n, nil
	}
	return 0, fmt.Errorf("no container port named %q", port.StrVal)
}

func httpProbe(ctx context.Context, g *corev1.HTTPGetAction, pc *probeContext, timeout time.Duration) (bool, string) {
	port, err := probePort(g.Port, pc.ports)
	if err != nil {
		return false, err.Error()
	}
	host := g.Host
	if host == "" {
		host = pc.podIP
	}
	scheme := strings.ToLower(string(g.Scheme))
	if scheme == "" {
		scheme = "http"
	}
	path := g.Path
	if !strings.HasPrefix(path, "/") {
		path = "/" + path
	}
	url := scheme + "://" + net.JoinHostPort(host, strconv.Itoa(port)) + path
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return false, err.Error()
	}
	for _, h := range g.HTTPHeaders {
		req.Header.Add(h.Name, h.Value)
	}
	resp, err := probeHTTPClient.Do(req)
	if err != nil {
		return false, err.Error()
	}
	resp.Body.Close()
	if resp.StatusCode >= 200 && resp.StatusCode < 400 {
		return true, ""
	}
	return false, fmt.Sprintf("HTTP probe failed with statuscode: %d", resp.StatusCode)
}

var probeHTTPClient = &http.Client{
	Transport: &http.Transport{TLSClientConfig: insecureTLS(), DisableKeepAlives: true},
	CheckRedirect: func(*http.Request, []*http.Request) error {
		return http.ErrUseLastResponse
	},
}

// execProbe runs an exec probe's command as the container would: image
// mapping, mount path rewriting and the container's environment.
func (w *podWorker) execProbe(ctx context.Context, kind probeKind, command []string, pc *probeContext, timeout time.Duration) (bool, string) {
	expanded := make([]string, len(command))
	lookup := mapLookup(pc.static)
	for i, s := range command {
		expanded[i] = pc.paths.rewrite(expand(s, lookup))
	}
	argv, err := resolveArgv(w.r.opts.Images, pc.image, expanded, nil)
	if err != nil {
		return false, err.Error()
	}
	outPath := filepath.Join(pc.outDir, strings.ToLower(kind.String())+"-probe.out")
	out, err := os.Create(outPath)
	if err != nil {
		return false, err.Error()
	}
	defer out.Close()
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env = pc.env
	cmd.Dir = pc.dir
	cmd.Stdout, cmd.Stderr = out, out
	proc, err := w.r.procs.start(cmd)
	if err != nil {
		return false, err.Error()
	}
	t := time.NewTimer(timeout)
	defer t.Stop()
	select {
	case <-proc.done:
	case <-t.C:
		proc.stop(0)
		return false, fmt.Sprintf("command timed out after %s", timeout)
	case <-ctx.Done():
		proc.stop(0)
		return false, "probe cancelled"
	}
	if proc.exitCode == 0 {
		return true, ""
	}
	tail, _ := os.ReadFile(outPath)
	if len(tail) > 512 {
		tail = tail[len(tail)-512:]
	}
	return false, fmt.Sprintf("command exited with %d: %s", proc.exitCode, strings.TrimSpace(string(tail)))
}

// insecureTLS is what the kubelet's HTTPS probes use: no verification.
func insecureTLS() *tls.Config {
	return &tls.Config{InsecureSkipVerify: true} //nolint:gosec // kubelet probe semantics
}
