package localkube

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
)

// container is the run state of one (init) container.
type container struct {
	spec corev1.Container
	init bool

	proc    *process // guarded by podWorker.mu
	logFile string   // guarded by podWorker.mu

	gen         int
	startedAt   time.Time
	term        *corev1.ContainerStateTerminated
	last        *corev1.ContainerStateTerminated
	restarts    int32
	ready       bool
	started     bool
	nextStart   time.Time
	waitReason  string
	waitMessage string
	containerID string
	imageID     string
	killMessage string
	killGrace   time.Duration
	shims       bool
	probeCancel context.CancelFunc
}

// succeeded is an init container done: its last run exited 0.
func (c *container) succeeded() bool { return c.term != nil && c.term.ExitCode == 0 }

func (c *container) stopProbes() {
	if c.probeCancel != nil {
		c.probeCancel()
		c.probeCancel = nil
	}
}

const (
	hostPATH          = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
	imageRetryDelay   = 5 * time.Second
	defaultPodGraceS  = 30
	reasonCrashLoop   = "CrashLoopBackOff"
	reasonConfigError = "CreateContainerConfigError"
)

func podGrace(pod *corev1.Pod) time.Duration {
	if pod.Spec.TerminationGracePeriodSeconds != nil {
		return time.Duration(*pod.Spec.TerminationGracePeriodSeconds) * time.Second
	}
	return defaultPodGraceS * time.Second
}

// maybeStart starts c if it should run now: first start, restart after
// backoff, or retry after an error.
func (w *podWorker) maybeStart(ctx context.Context, pod *corev1.Pod, c *container, now time.Time, isInit bool) {
	if c.proc != nil {
		return
	}
	if c.term != nil {
		policy := pod.Spec.RestartPolicy
		restart := policy == corev1.RestartPolicyAlways || (policy == corev1.RestartPolicyOnFailure && c.term.ExitCode != 0)
		if isInit {
			restart = policy != corev1.RestartPolicyNever && c.term.ExitCode != 0
		}
		if !restart {
			return
		}
		if c.nextStart.IsZero() {
			delay := restartDelay(pod.Annotations, c.restarts, w.r.opts.RestartBackoff, w.r.opts.MaxRestartBackoff)
			c.nextStart = c.term.FinishedAt.Add(delay)
			c.waitReason = reasonCrashLoop
			c.waitMessage = fmt.Sprintf("back-off %s restarting failed container=%s pod=%s_%s(%s)", delay, c.spec.Name, w.name, w.ns, w.uid)
		}
	}
	if !c.nextStart.IsZero() && now.Before(c.nextStart) {
		return
	}
	w.startContainer(ctx, pod, c, now)
}

func (w *podWorker) startContainer(ctx context.Context, pod *corev1.Pod, c *container, now time.Time) {
	fail := func(reason string, err error, retry time.Duration) {
		c.waitReason, c.waitMessage = reason, err.Error()
		c.nextStart = now.Add(retry)
	}
	env, values, _, err := w.containerEnv(pod, &c.spec)
	if err != nil {
		fail(reasonConfigError, err, retryDelay)
		return
	}
	paths := w.ctrPaths[c.spec.Name]
	argv, err := resolveArgv(w.r.opts.Images, c.spec.Image, expandAll(c.spec.Command, paths, values), expandAll(c.spec.Args, paths, values))
	if err != nil {
		reason := "RunContainerError"
		if errors.Is(err, errImage) {
			reason = "ErrImagePull"
		}
		fail(reason, err, imageRetryDelay)
		return
	}
	if !c.shims {
		if err := w.writeShims(c); err != nil {
			fail("RunContainerError", err, retryDelay)
			return
		}
		c.shims = true
	}
	restarts := c.restarts
	if c.term != nil {
		restarts++
	}
	logDir := filepath.Join(w.dir, "logs", c.spec.Name)
	logPath := filepath.Join(logDir, strconv.Itoa(int(restarts))+".log")
	p, err := w.startProcess(c, argv, env, logPath)
	if err != nil {
		fail("RunContainerError", err, retryDelay)
		return
	}
	w.markStarted(pod, c, p, restarts, logPath, argv[0], now)
	gen := c.gen
	go func() {
		<-p.done
		w.send(ctx, event{kind: evExit, c: c, gen: gen, p: p})
	}()
	if c.spec.StartupProbe != nil || c.spec.LivenessProbe != nil || c.spec.ReadinessProbe != nil {
		pctx, cancel := context.WithCancel(ctx)
		c.probeCancel = cancel
		pc := &probeContext{
			podIP:   w.addr.String(),
			started: now,
			env:     env,
			dir:     w.workDir(c),
			static:  staticEnv(c.spec.Env),
			paths:   paths,
			image:   c.spec.Image,
			ports:   c.spec.Ports,
			outDir:  logDir,
		}
		go w.runProbes(pctx, c, gen, c.spec, pc)
	}
}

// expandAll expands $(VAR) references the way the kubelet does, then maps
// the container's paths onto the node's.
func expandAll(in []string, paths pathMap, values map[string]string) []string {
	lookup := mapLookup(values)
	out := make([]string, len(in))
	for i, s := range in {
		out[i] = paths.rewrite(expand(s, lookup))
	}
	return out
}

// startProcess starts argv in the container's working directory, its
// output going to a log of its own for each run.
func (w *podWorker) startProcess(c *container, argv, env []string, logPath string) (*process, error) {
	if err := os.MkdirAll(filepath.Dir(logPath), 0o755); err != nil {
		return nil, err
	}
	logFile, err := openLog(logPath)
	if err != nil {
		return nil, err
	}
	defer logFile.Close()
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env = env
	cmd.Dir = w.workDir(c)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	p, err := w.r.procs.start(cmd)
	if err != nil {
		return nil, fmt.Errorf("starting %s: %w", argv[0], err)
	}
	return p, nil
}

// markStarted records a new run of c, keeping the one before as its last
// termination.
func (w *podWorker) markStarted(pod *corev1.Pod, c *container, p *process, restarts int32, logPath, program string, now time.Time) {
	if c.term != nil {
		c.last = c.term
		c.term = nil
	}
	c.restarts = restarts
	c.gen++
	w.mu.Lock()
	c.proc = p
	c.logFile = logPath
	w.mu.Unlock()
	c.startedAt = now
	c.containerID = fmt.Sprintf("localkube://%s-%d", c.spec.Name, p.pid)
	c.imageID = "localkube://" + program
	c.ready = false
	c.started = c.spec.StartupProbe == nil
	c.waitReason, c.waitMessage = "", ""
	c.nextStart = time.Time{}
	c.killGrace = podGrace(pod)
}

func (w *podWorker) workDir(c *container) string {
	if c.spec.WorkingDir != "" {
		if p, ok := w.ctrPaths[c.spec.Name].resolve(c.spec.WorkingDir); ok {
			return p
		}
	}
	return w.dir
}

// writeShims puts the image's mapped commands on the container's PATH, so
// that a shell or exec probe calling valkey-cli gets the same build as the
// container's own command.
func (w *podWorker) writeShims(c *container) error {
	dir := filepath.Join(w.dir, "bin", c.spec.Name)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	m := findMapping(w.r.opts.Images, c.spec.Image)
	if m == nil {
		return nil
	}
	for name := range m.Commands {
		prefix, err := resolveProgram(m, c.spec.Image, name)
		if err != nil {
			continue
		}
		var b strings.Builder
		b.WriteString("#!/bin/sh\nexec")
		for _, a := range prefix {
			b.WriteString(" " + shellQuote(a))
		}
		b.WriteString(" \"$@\"\n")
		if err := os.WriteFile(filepath.Join(dir, filepath.Base(name)), []byte(b.String()), 0o755); err != nil {
			return err
		}
	}
	return nil
}

// staticEnv is what the kubelet expands exec probe commands with: literal
// values only, so a $(POD_IP) from the downward API becomes empty there.
func staticEnv(env []corev1.EnvVar) map[string]string {
	m := map[string]string{}
	for _, e := range env {
		m[e.Name] = e.Value
	}
	return m
}

// containerEnv computes a container's environment as the kubelet does:
// envFrom first, then env in order, each value expanded against the
// variables defined before it. It returns the process environment, the
// variables for $(VAR) expansion and the names in definition order.
func (w *podWorker) containerEnv(pod *corev1.Pod, c *corev1.Container) ([]string, map[string]string, []string, error) {
	values := map[string]string{}
	var order []string
	set := func(k, v string) {
		if _, ok := values[k]; !ok {
			order = append(order, k)
		}
		values[k] = v
	}
	for _, ef := range c.EnvFrom {
		var data map[string]string
		switch {
		case ef.ConfigMapRef != nil:
			cm, err := w.r.cms.ConfigMaps(w.ns).Get(ef.ConfigMapRef.Name)
			if err != nil {
				if apierrors.IsNotFound(err) && ptrTrue(ef.ConfigMapRef.Optional) {
					continue
				}
				return nil, nil, nil, fmt.Errorf("configmap %q not found", ef.ConfigMapRef.Name)
			}
			data = cm.Data
		case ef.SecretRef != nil:
			s, err := w.r.secrets.Secrets(w.ns).Get(ef.SecretRef.Name)
			if err != nil {
				if apierrors.IsNotFound(err) && ptrTrue(ef.SecretRef.Optional) {
					continue
				}
				return nil, nil, nil, fmt.Errorf("secret %q not found", ef.SecretRef.Name)
			}
			data = map[string]string{}
			for k, v := range s.Data {
				data[k] = string(v)
			}
		}
		for _, k := range slices.Sorted(maps.Keys(data)) {
			set(ef.Prefix+k, data[k])
		}
	}
	for _, e := range c.Env {
		if e.ValueFrom == nil {
			set(e.Name, expand(e.Value, mapLookup(values)))
			continue
		}
		v, skip, err := w.envValueFrom(pod, c, e.ValueFrom)
		if err != nil {
			return nil, nil, nil, fmt.Errorf("env %s: %w", e.Name, err)
		}
		if !skip {
			set(e.Name, v)
		}
	}
	hostname := pod.Spec.Hostname
	if hostname == "" {
		hostname = pod.Name
	}
	base := map[string]string{
		"PATH":     filepath.Join(w.dir, "bin", c.Name) + ":" + hostPATH,
		"HOSTNAME": hostname,
		"HOME":     w.dir,
	}
	var env []string
	for _, k := range []string{"PATH", "HOSTNAME", "HOME"} {
		if _, ok := values[k]; !ok {
			env = append(env, k+"="+base[k])
		}
	}
	for _, k := range order {
		env = append(env, k+"="+values[k])
	}
	return env, values, order, nil
}

func ptrTrue(b *bool) bool { return b != nil && *b }

func (w *podWorker) envValueFrom(pod *corev1.Pod, c *corev1.Container, src *corev1.EnvVarSource) (string, bool, error) {
	switch {
	case src.FieldRef != nil:
		v, err := w.fieldValue(pod, src.FieldRef.FieldPath)
		return v, false, err
	case src.ResourceFieldRef != nil:
		v, err := w.resourceValue(c, src.ResourceFieldRef)
		return v, false, err
	case src.ConfigMapKeyRef != nil:
		ref := src.ConfigMapKeyRef
		cm, err := w.r.cms.ConfigMaps(w.ns).Get(ref.Name)
		if err == nil {
			if v, ok := cm.Data[ref.Key]; ok {
				return v, false, nil
			}
			if v, ok := cm.BinaryData[ref.Key]; ok {
				return string(v), false, nil
			}
		}
		if ptrTrue(ref.Optional) {
			return "", true, nil
		}
		return "", false, fmt.Errorf("key %q of configmap %q not found", ref.Key, ref.Name)
	case src.SecretKeyRef != nil:
		ref := src.SecretKeyRef
		s, err := w.r.secrets.Secrets(w.ns).Get(ref.Name)
		if err == nil {
			if v, ok := s.Data[ref.Key]; ok {
				return string(v), false, nil
			}
		}
		if ptrTrue(ref.Optional) {
			return "", true, nil
		}
		return "", false, fmt.Errorf("key %q of secret %q not found", ref.Key, ref.Name)
	}
	return "", false, errors.New("unsupported valueFrom")
}

// fieldValue serves the downward API's field paths.
func (w *podWorker) fieldValue(pod *corev1.Pod, path string) (string, error) {
	if k, ok := subscript(path, "metadata.labels"); ok {
		return pod.Labels[k], nil
	}
	if k, ok := subscript(path, "metadata.annotations"); ok {
		return pod.Annotations[k], nil
	}
	switch path {
	case "metadata.name":
		return pod.Name, nil
	case "metadata.namespace":
		return pod.Namespace, nil
	case "metadata.uid":
		return string(pod.UID), nil
	case "metadata.labels":
		return formatMap(pod.Labels), nil
	case "metadata.annotations":
		return formatMap(pod.Annotations), nil
	case "spec.nodeName":
		return pod.Spec.NodeName, nil
	case "spec.serviceAccountName":
		return pod.Spec.ServiceAccountName, nil
	case "status.hostIP", "status.hostIPs":
		return nodeAddress, nil
	case "status.podIP", "status.podIPs":
		return w.addr.String(), nil
	}
	return "", fmt.Errorf("unsupported fieldPath %q", path)
}

func subscript(path, field string) (string, bool) {
	if !strings.HasPrefix(path, field+"['") || !strings.HasSuffix(path, "']") {
		return "", false
	}
	return path[len(field)+2 : len(path)-2], true
}

// formatMap renders labels or annotations as the downward API does.
func formatMap(m map[string]string) string {
	var b strings.Builder
	for i, k := range slices.Sorted(maps.Keys(m)) {
		if i > 0 {
			b.WriteString("\n")
		}
		b.WriteString(k + "=" + strconv.Quote(m[k]))
	}
	return b.String()
}

// resourceValue serves resourceFieldRef: the container's limit, else the
// node's allocatable, divided and rounded up as the kubelet does.
func (w *podWorker) resourceValue(c *corev1.Container, ref *corev1.ResourceFieldSelector) (string, error) {
	name, fromRequests := strings.CutPrefix(ref.Resource, "requests.")
	if !fromRequests {
		name = strings.TrimPrefix(ref.Resource, "limits.")
	}
	var q resource.Quantity
	var ok bool
	if fromRequests {
		q, ok = c.Resources.Requests[corev1.ResourceName(name)]
	} else {
		q, ok = c.Resources.Limits[corev1.ResourceName(name)]
	}
	if !ok {
		q, ok = w.r.opts.NodeCapacity[corev1.ResourceName(name)]
	}
	if !ok {
		return "", fmt.Errorf("unsupported resource %q", ref.Resource)
	}
	divisor := ref.Divisor
	if divisor.IsZero() {
		divisor = resource.MustParse("1")
	}
	if name == string(corev1.ResourceCPU) {
		return strconv.FormatInt(int64(math.Ceil(float64(q.MilliValue())/float64(divisor.MilliValue()))), 10), nil
	}
	return strconv.FormatInt(int64(math.Ceil(float64(q.Value())/float64(divisor.Value()))), 10), nil
}

// preStopHold is how long a container's preStop hook keeps it running
// before SIGTERM. Only the sleep action is supported: it is what the
// operator renders, and it needs nothing from the image.
func preStopHold(c corev1.Container) time.Duration {
	if c.Lifecycle == nil || c.Lifecycle.PreStop == nil || c.Lifecycle.PreStop.Sleep == nil {
		return 0
	}
	return time.Duration(c.Lifecycle.PreStop.Sleep.Seconds) * time.Second
}
