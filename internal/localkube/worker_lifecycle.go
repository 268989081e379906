package localkube

import (
	"context"
	"os"
	"path/filepath"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

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
	w.takeResync()
	now := time.Now()
	if !w.retryAt.IsZero() && !now.Before(w.retryAt) {
		w.retryAt = time.Time{}
	}
	if gone || pod.DeletionTimestamp != nil {
		return w.terminate(ctx, pod, gone)
	}
	if w.terminal || !w.ensureSetUp(pod, now) || !w.ensureMounted(ctx, pod, now) {
		return false
	}
	failedInit := w.startContainers(ctx, pod, now)
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

// takeResync forgets what was last sent, so that the next status is
// written afresh whatever others wrote meanwhile.
func (w *podWorker) takeResync() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.resynced {
		w.resynced, w.lastPatch, w.conds = false, nil, nil
	}
}

// ensureSetUp sets the pod up on its first step and reports whether it
// has anything to run.
func (w *podWorker) ensureSetUp(pod *corev1.Pod, now time.Time) bool {
	if w.setUp {
		return true
	}
	if pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed {
		// Finished under an earlier runtime: nothing to run, only the
		// deletion to carry out.
		w.terminal = true
		return false
	}
	if err := w.setup(); err != nil {
		w.r.log.Error(err, "pod setup failed", "pod", w.ns+"/"+w.name)
		w.retryAt = now.Add(retryDelay)
		return false
	}
	return true
}

// ensureMounted mounts the pod's volumes once, or brings mounted ones up
// to date, and reports whether its containers can start.
func (w *podWorker) ensureMounted(ctx context.Context, pod *corev1.Pod, now time.Time) bool {
	if w.mounted {
		w.refreshVolumes(ctx, pod, now)
		return true
	}
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
	return true
}

// startContainers starts the init containers one at a time, in order, and
// the others once every init container has succeeded. It reports whether
// an init container failed for good.
func (w *podWorker) startContainers(ctx context.Context, pod *corev1.Pod, now time.Time) (failedInit bool) {
	for _, c := range w.ctrs {
		if !c.init || c.succeeded() {
			continue
		}
		if c.term != nil && pod.Spec.RestartPolicy == corev1.RestartPolicyNever {
			return true
		}
		w.maybeStart(ctx, pod, c, now, true)
		return false
	}
	for _, c := range w.ctrs {
		if !c.init {
			w.maybeStart(ctx, pod, c, now, false)
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
	w.r.releaseVolumes(w)
	if err := os.RemoveAll(w.dir); err != nil {
		w.r.log.Error(err, "removing pod dir", "dir", w.dir)
	}
}
