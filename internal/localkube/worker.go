package localkube

import (
	"context"
	"net/netip"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
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
		dir:     podDir(r.opts.BaseDir, pod.Namespace, pod.Name, string(uid)),
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
