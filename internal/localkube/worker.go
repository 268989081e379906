package localkube

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
)

const (
	kindConfigMap = "ConfigMap"
	kindSecret    = "Secret"

	// goneGrace is the grace given to a pod whose object vanished without a
	// graceful deletion (force delete, namespace cleanup): there is no
	// deletionGracePeriodSeconds to honour.
	goneGrace  = time.Second
	retryDelay = time.Second
)

type sourceKey struct{ kind, name string }

type pendingSource struct {
	key sourceKey
	obj any // *corev1.ConfigMap, *corev1.Secret or nil when deleted
	due time.Time
}

// podWorker is the kubelet's view of one pod: it owns the pod's address,
// directory and processes, and writes the pod's status. Its state lives in
// the run goroutine; mu guards what other goroutines read or hand in.
type podWorker struct {
	r       *Runtime
	uid     types.UID
	ns      string
	name    string
	created time.Time
	refs    map[sourceKey]bool // sources projected into volumes; fixed
	dir     string

	mu     sync.Mutex
	latest *corev1.Pod
	gone   bool
	// resynced: the node was heard from again after a silence; the next
	// step writes the pod's whole status afresh.
	resynced bool
	pending  []pendingSource
	paths    pathMap // every container's mounts; set once mounted
	ctrPaths map[string]pathMap
	ctrs     []*container // fixed after construction; container.proc guarded by mu

	wake   chan struct{}
	events chan event

	// run-goroutine state
	addr        netip.Addr
	hasAddr     bool
	setUp       bool
	mounted     bool
	mountErr    error
	terminal    bool
	terminating bool
	startTime   time.Time
	retryAt     time.Time
	visible     map[sourceKey]any
	tokens      map[string]*projectedToken
	lastMeta    string
	lastPatch   []byte
	conds       map[corev1.PodConditionType]corev1.PodCondition
	phase       corev1.PodPhase
}

type eventKind int

const (
	evExit eventKind = iota
	evProbe
)

type event struct {
	kind  eventKind
	c     *container
	gen   int
	p     *process
	probe probeKind
	ok    bool
	msg   string
}

func newPodWorker(r *Runtime, pod *corev1.Pod) *podWorker {
	uid := string(pod.UID)
	if len(uid) > 8 {
		uid = uid[:8]
	}
	w := &podWorker{
		r:       r,
		uid:     pod.UID,
		ns:      pod.Namespace,
		name:    pod.Name,
		created: time.Now(),
		latest:  pod,
		refs:    podSources(pod),
		dir:     filepath.Join(r.opts.BaseDir, "pods", fmt.Sprintf("%s_%s_%s", pod.Namespace, pod.Name, uid)),
		wake:    make(chan struct{}, 1),
		events:  make(chan event, 16),
		visible: map[sourceKey]any{},
		tokens:  map[string]*projectedToken{},
	}
	for i := range pod.Spec.InitContainers {
		w.ctrs = append(w.ctrs, &container{spec: pod.Spec.InitContainers[i], init: true})
	}
	for i := range pod.Spec.Containers {
		w.ctrs = append(w.ctrs, &container{spec: pod.Spec.Containers[i]})
	}
	return w
}

func (w *podWorker) poke() {
	select {
	case w.wake <- struct{}{}:
	default:
	}
}

func (w *podWorker) update(pod *corev1.Pod) {
	w.mu.Lock()
	w.latest = pod
	w.mu.Unlock()
	w.poke()
}

// resync is the node heard from again (PauseNodeHeartbeat): the pod's
// status is written afresh, whatever others wrote meanwhile, and anything
// that waited for the apiserver is carried out.
func (w *podWorker) resync() {
	w.mu.Lock()
	w.resynced = true
	w.mu.Unlock()
	w.poke()
}

func (w *podWorker) objectGone() {
	w.mu.Lock()
	w.gone = true
	w.mu.Unlock()
	w.poke()
}

// sourceChanged queues a ConfigMap or Secret change; it reaches the pod's
// files once the projection delay has passed.
func (w *podWorker) sourceChanged(key sourceKey, obj any) {
	w.mu.Lock()
	w.pending = append(w.pending, pendingSource{key: key, obj: obj, due: time.Now().Add(w.r.opts.ProjectionDelay)})
	w.mu.Unlock()
	w.poke()
}

func (w *podWorker) isGone() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.gone
}

func (w *podWorker) snapshot() (*corev1.Pod, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.latest, w.gone
}

func (w *podWorker) send(ctx context.Context, ev event) {
	select {
	case w.events <- ev:
	case <-ctx.Done():
	}
}

func (w *podWorker) run(ctx context.Context) {
	defer w.cleanup()
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	for {
		if ctx.Err() != nil {
			w.killAll()
			return
		}
		if w.step(ctx) {
			return
		}
		if !timer.Stop() {
			select {
			case <-timer.C:
			default:
			}
		}
		timer.Reset(w.nextWake())
		select {
		case <-ctx.Done():
		case <-w.wake:
		case ev := <-w.events:
			w.handle(ev)
		case <-timer.C:
		}
	}
}

// nextWake is how long until something time-driven is due.
func (w *podWorker) nextWake() time.Duration {
	next := time.Now().Add(time.Minute)
	consider := func(t time.Time) {
		if !t.IsZero() && t.Before(next) {
			next = t
		}
	}
	consider(w.retryAt)
	// Only a pod that runs has volume updates and restarts to schedule.
	if w.mounted && !w.terminal && !w.terminating {
		w.mu.Lock()
		for _, p := range w.pending {
			consider(p.due)
		}
		w.mu.Unlock()
		for _, c := range w.ctrs {
			if c.proc == nil {
				consider(c.nextStart)
			}
		}
		for _, t := range w.tokens {
			consider(t.refreshAt)
		}
	}
	d := time.Until(next)
	if d < time.Millisecond {
		d = time.Millisecond
	}
	return d
}

// step moves the pod one notch towards what its object asks for and reports
// whether the worker is done.
func (w *podWorker) step(ctx context.Context) bool {
	pod, gone := w.snapshot()
	if w.r.nodePaused(pod.Spec.NodeName) {
		// A silent node's kubelet hears nothing from the apiserver and
		// tells it nothing: its processes run on as they are, and a
		// deletion waits until it is heard from again.
		return false
	}
	w.mu.Lock()
	if w.resynced {
		w.resynced, w.lastPatch, w.conds = false, nil, nil
	}
	w.mu.Unlock()
	now := time.Now()
	if !w.retryAt.IsZero() && !now.Before(w.retryAt) {
		w.retryAt = time.Time{}
	}
	if gone || pod.DeletionTimestamp != nil {
		return w.terminate(ctx, pod, gone)
	}
	if w.terminal {
		return false
	}
	if !w.setUp {
		if pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed {
			// Finished under an earlier runtime: nothing to run, only
			// the deletion to carry out.
			w.terminal = true
			return false
		}
		if err := w.setup(); err != nil {
			w.r.log.Error(err, "pod setup failed", "pod", w.ns+"/"+w.name)
			w.retryAt = now.Add(retryDelay)
			return false
		}
	}
	if !w.mounted {
		if !w.retryAt.IsZero() {
			return false
		}
		if err := w.mountAll(ctx, pod); err != nil {
			w.mountErr = err
			w.retryAt = now.Add(retryDelay)
			w.writeStatus(ctx, pod)
			return false
		}
		w.mountErr = nil
		w.mounted = true
	} else {
		w.refreshVolumes(ctx, pod, now)
	}

	initDone := true
	failedInit := false
	for _, c := range w.ctrs {
		if !c.init {
			continue
		}
		if c.term != nil && c.term.ExitCode == 0 {
			continue
		}
		initDone = false
		if c.term != nil && pod.Spec.RestartPolicy == corev1.RestartPolicyNever {
			failedInit = true
			break
		}
		w.maybeStart(ctx, pod, c, now, true)
		break
	}
	if initDone && !failedInit {
		for _, c := range w.ctrs {
			if !c.init {
				w.maybeStart(ctx, pod, c, now, false)
			}
		}
	}
	w.phase = w.computePhase(pod, failedInit, false)
	w.writeStatus(ctx, pod)
	if w.phase == corev1.PodSucceeded || w.phase == corev1.PodFailed {
		w.terminal = true
		for _, c := range w.ctrs {
			c.stopProbes()
		}
	}
	return false
}

// terminate carries out a deletion: SIGTERM, SIGKILL after the grace period,
// final status, then removal of the object with grace 0.
func (w *podWorker) terminate(ctx context.Context, pod *corev1.Pod, gone bool) bool {
	if !w.terminating {
		w.terminating = true
		grace := goneGrace
		if !gone {
			grace = 30 * time.Second
			if pod.DeletionGracePeriodSeconds != nil {
				grace = time.Duration(*pod.DeletionGracePeriodSeconds) * time.Second
			} else if pod.Spec.TerminationGracePeriodSeconds != nil {
				grace = time.Duration(*pod.Spec.TerminationGracePeriodSeconds) * time.Second
			}
		}
		w.mu.Lock()
		for _, c := range w.ctrs {
			c.stopProbes()
			if c.proc != nil {
				hold := time.Duration(0)
				if !gone {
					hold = preStopHold(c.spec)
				}
				go c.proc.stopAfter(hold, grace)
			}
		}
		w.mu.Unlock()
	}
	for _, c := range w.ctrs {
		if c.proc != nil {
			return false // exit events are on their way
		}
	}
	if gone {
		return true
	}
	if !w.retryAt.IsZero() {
		return false
	}
	if w.setUp {
		w.phase = w.computePhase(pod, false, true)
		w.writeStatus(ctx, pod)
	}
	err := w.r.cs.CoreV1().Pods(w.ns).Delete(ctx, w.name, metav1.DeleteOptions{
		GracePeriodSeconds: ptr.To[int64](0),
		Preconditions:      &metav1.Preconditions{UID: ptr.To(w.uid)},
	})
	if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
		if ctx.Err() == nil {
			w.r.log.Error(err, "deleting pod", "pod", w.ns+"/"+w.name)
		}
		w.retryAt = time.Now().Add(retryDelay)
		return false
	}
	return true
}

// setup gives the pod its address and directories.
func (w *podWorker) setup() error {
	if !w.hasAddr {
		a, err := w.r.addresses.allocate()
		if err != nil {
			return err
		}
		w.addr, w.hasAddr = a, true
	}
	for _, d := range []string{"volumes", "logs", "bin"} {
		if err := os.MkdirAll(filepath.Join(w.dir, d), 0o755); err != nil {
			return err
		}
	}
	w.startTime = time.Now()
	w.setUp = true
	return nil
}

func (w *podWorker) handle(ev event) {
	c := ev.c
	if ev.gen != c.gen {
		return
	}
	switch ev.kind {
	case evExit:
		p := ev.p
		w.mu.Lock()
		c.proc = nil
		w.mu.Unlock()
		c.stopProbes()
		c.ready = false
		reason := "Completed"
		if p.exitCode != 0 {
			reason = "Error"
		}
		c.term = &corev1.ContainerStateTerminated{
			ExitCode:    int32(p.exitCode),
			Reason:      reason,
			Message:     c.killMessage,
			StartedAt:   metav1.NewTime(c.startedAt),
			FinishedAt:  metav1.NewTime(p.finished),
			ContainerID: c.containerID,
		}
		c.killMessage = ""
		c.nextStart = time.Time{}
	case evProbe:
		switch ev.probe {
		case probeReadiness:
			c.ready = ev.ok
		case probeStartup:
			if ev.ok {
				c.started = true
			}
		}
		if !ev.ok && (ev.probe == probeLiveness || ev.probe == probeStartup) {
			w.mu.Lock()
			p := c.proc
			w.mu.Unlock()
			if p != nil {
				grace := c.killGrace
				probe := c.spec.LivenessProbe
				if ev.probe == probeStartup {
					probe = c.spec.StartupProbe
				}
				if probe != nil && probe.TerminationGracePeriodSeconds != nil {
					grace = time.Duration(*probe.TerminationGracePeriodSeconds) * time.Second
				}
				c.killMessage = ev.msg
				c.stopProbes()
				go p.stop(grace)
			}
		}
	}
}

// kill is KillContainer: SIGKILL in place.
func (w *podWorker) kill(name string) error { return w.signal(name, syscall.SIGKILL) }

// signal sends sig to a container's process, for stalls (SIGSTOP, SIGCONT)
// and crashes (SIGKILL) that a test provokes.
func (w *podWorker) signal(name string, sig syscall.Signal) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, c := range w.ctrs {
		if c.spec.Name != name {
			continue
		}
		if c.proc == nil {
			return fmt.Errorf("container %s of pod %s/%s is not running", name, w.ns, w.name)
		}
		c.proc.signal(sig)
		return nil
	}
	return fmt.Errorf("pod %s/%s has no container %s", w.ns, w.name, name)
}

// killAll is the runtime shutting down: no grace, no API calls.
func (w *podWorker) killAll() {
	w.mu.Lock()
	var procs []*process
	for _, c := range w.ctrs {
		c.stopProbes()
		if c.proc != nil {
			procs = append(procs, c.proc)
		}
	}
	w.mu.Unlock()
	for _, p := range procs {
		p.stop(0)
	}
}

func (w *podWorker) cleanup() {
	w.killAll()
	if w.hasAddr {
		w.r.addresses.release(w.addr)
	}
	if err := os.RemoveAll(w.dir); err != nil {
		w.r.log.Error(err, "removing pod dir", "dir", w.dir)
	}
}

func (w *podWorker) hostPath(containerPath string) (string, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if !filepath.IsAbs(containerPath) {
		return "", fmt.Errorf("container path %q is not absolute", containerPath)
	}
	if p, ok := w.paths.resolve(containerPath); ok {
		return p, nil
	}
	return "", fmt.Errorf("%s is not under a volume mount of pod %s/%s", containerPath, w.ns, w.name)
}

func (w *podWorker) logPath(container string) (string, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, c := range w.ctrs {
		if c.spec.Name == container {
			if c.logFile == "" {
				return "", errors.New("container has not started")
			}
			return c.logFile, nil
		}
	}
	return "", fmt.Errorf("pod %s/%s has no container %s", w.ns, w.name, container)
}
