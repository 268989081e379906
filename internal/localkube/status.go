package localkube

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
)

// computePhase follows the kubelet's getPhase. deleting is the final status
// of a pod being removed: its containers are all stopped and it ends
// Succeeded or Failed whatever its restart policy.
func (w *podWorker) computePhase(pod *corev1.Pod, failedInit, deleting bool) corev1.PodPhase {
	if failedInit {
		return corev1.PodFailed
	}
	var running, waiting, stopped, succeeded, initPending int
	for _, c := range w.ctrs {
		if c.init {
			if !c.succeeded() {
				initPending++
			}
			continue
		}
		switch {
		case c.proc != nil:
			running++
		case c.term != nil:
			stopped++
			if c.term.ExitCode == 0 {
				succeeded++
			}
		case c.last != nil:
			stopped++ // waiting to restart after a run
		default:
			waiting++
		}
	}
	if deleting {
		if stopped > 0 && stopped == succeeded && waiting == 0 && initPending == 0 {
			return corev1.PodSucceeded
		}
		return corev1.PodFailed
	}
	switch {
	case initPending > 0 || waiting > 0:
		return corev1.PodPending
	case running > 0:
		return corev1.PodRunning
	case stopped > 0:
		if pod.Spec.RestartPolicy == corev1.RestartPolicyAlways {
			return corev1.PodRunning
		}
		if stopped == succeeded {
			return corev1.PodSucceeded
		}
		if pod.Spec.RestartPolicy == corev1.RestartPolicyNever {
			return corev1.PodFailed
		}
		return corev1.PodRunning
	}
	return corev1.PodPending
}

func (w *podWorker) containerStatus(c *container) corev1.ContainerStatus {
	st := corev1.ContainerStatus{
		Name:         c.spec.Name,
		Image:        c.spec.Image,
		ImageID:      c.imageID,
		ContainerID:  c.containerID,
		RestartCount: c.restarts,
	}
	switch {
	case c.proc != nil:
		st.State.Running = &corev1.ContainerStateRunning{StartedAt: metav1.NewTime(c.startedAt)}
		st.Started = ptr.To(c.started)
		st.Ready = c.started && (c.spec.ReadinessProbe == nil || c.ready)
		if c.init {
			st.Ready = false
		}
	case c.term != nil && c.waitReason == "":
		st.State.Terminated = c.term
		st.Started = ptr.To(false)
		st.Ready = c.init && c.term.ExitCode == 0
	default:
		reason, msg := c.waitReason, c.waitMessage
		if reason == "" {
			reason = "ContainerCreating"
			if w.mountErr != nil {
				msg = w.mountErr.Error()
			}
		}
		st.State.Waiting = &corev1.ContainerStateWaiting{Reason: reason, Message: msg}
		st.Started = ptr.To(false)
	}
	if c.last != nil {
		st.LastTerminationState.Terminated = c.last
	}
	if st.State.Waiting != nil && c.term != nil {
		st.LastTerminationState.Terminated = c.term
	}
	return st
}

func condition(t corev1.PodConditionType, ok bool, reason, msg string) corev1.PodCondition {
	c := corev1.PodCondition{Type: t, Status: corev1.ConditionFalse, Reason: reason, Message: msg}
	if ok {
		c.Status = corev1.ConditionTrue
		c.Reason, c.Message = "", ""
	}
	return c
}

// writeStatus sends the pod's status as a merge patch of the status
// subresource when it differs from what was last sent.
func (w *podWorker) writeStatus(ctx context.Context, pod *corev1.Pod) {
	body, err := json.Marshal(map[string]any{"status": w.podStatus(pod)})
	if err != nil {
		w.r.log.Error(err, "encoding pod status")
		return
	}
	if string(body) == string(w.lastPatch) {
		return
	}
	_, err = w.r.cs.CoreV1().Pods(w.ns).Patch(ctx, w.name, types.MergePatchType, body, metav1.PatchOptions{}, "status")
	if err != nil {
		if !apierrors.IsNotFound(err) && ctx.Err() == nil {
			w.r.log.Error(err, "writing pod status", "pod", w.ns+"/"+w.name)
			w.retryAt = time.Now().Add(retryDelay)
		}
		return
	}
	w.lastPatch = body
}

// podStatus is the status subresource as the kubelet would report it now.
func (w *podWorker) podStatus(pod *corev1.Pod) map[string]any {
	ctrs := w.containerStatuses()
	phase := w.phase
	if phase == "" {
		phase = corev1.PodPending
	}
	terminal := phase == corev1.PodSucceeded || phase == corev1.PodFailed
	status := map[string]any{
		"phase":                 phase,
		"conditions":            w.keepTransitions(pod, w.podConditions(pod, ctrs, terminal)),
		"hostIP":                nodeAddress,
		"hostIPs":               []corev1.HostIP{{IP: nodeAddress}},
		"containerStatuses":     ctrs.main,
		"initContainerStatuses": ctrs.init,
	}
	if w.hasAddr {
		status["podIP"] = w.addr.String()
		status["podIPs"] = []corev1.PodIP{{IP: w.addr.String()}}
	}
	if !w.startTime.IsZero() {
		status["startTime"] = metav1.NewTime(w.startTime)
	}
	return status
}

// containerStatusSummary is what the pod's conditions are derived from.
type containerStatusSummary struct {
	main, init  []corev1.ContainerStatus
	notReady    []string // main containers, by name
	initialized bool     // every init container exited 0
}

func (w *podWorker) containerStatuses() containerStatusSummary {
	s := containerStatusSummary{initialized: true}
	for _, c := range w.ctrs {
		st := w.containerStatus(c)
		if c.init {
			s.init = append(s.init, st)
			if !c.succeeded() {
				s.initialized = false
			}
			continue
		}
		s.main = append(s.main, st)
		if !st.Ready {
			s.notReady = append(s.notReady, c.spec.Name)
		}
	}
	return s
}

// podConditions are the conditions this node owns, with the kubelet's
// reasons and messages.
func (w *podWorker) podConditions(pod *corev1.Pod, ctrs containerStatusSummary, terminal bool) []corev1.PodCondition {
	containersReady := len(ctrs.notReady) == 0 && !terminal
	readyMsg := ""
	if len(ctrs.notReady) > 0 {
		readyMsg = fmt.Sprintf("containers with unready status: [%s]", strings.Join(ctrs.notReady, " "))
	}
	readyReason := "ContainersNotReady"
	if terminal {
		readyReason = "PodCompleted"
	}
	ready := containersReady
	if gate, closed := closedReadinessGate(pod); closed {
		ready = false
		if readyMsg == "" {
			readyReason, readyMsg = "ReadinessGatesNotReady", fmt.Sprintf("corresponding condition of pod readiness gate %q does not exist or is not True", gate)
		}
	}
	initMsg := ""
	if !ctrs.initialized {
		initMsg = "containers with incomplete status: [init]"
	}
	return []corev1.PodCondition{
		condition(corev1.PodReadyToStartContainers, w.mounted && !terminal, "", ""),
		condition(corev1.PodInitialized, ctrs.initialized, "ContainersNotInitialized", initMsg),
		condition(corev1.ContainersReady, containersReady, readyReason, readyMsg),
		condition(corev1.PodReady, ready, readyReason, readyMsg),
		condition(corev1.PodScheduled, true, "", ""),
	}
}

// closedReadinessGate returns the first of the pod's readiness gates whose
// condition is missing or not True.
func closedReadinessGate(pod *corev1.Pod) (corev1.PodConditionType, bool) {
	for _, g := range pod.Spec.ReadinessGates {
		gateOK := false
		for _, c := range pod.Status.Conditions {
			if c.Type == g.ConditionType {
				gateOK = c.Status == corev1.ConditionTrue
			}
		}
		if !gateOK {
			return g.ConditionType, true
		}
	}
	return "", false
}

// keepTransitions keeps transition times while a condition's status stays,
// and adds the conditions others own (readiness gates, DisruptionTarget,
// ...), sorted by type.
func (w *podWorker) keepTransitions(pod *corev1.Pod, conds []corev1.PodCondition) []corev1.PodCondition {
	managed := map[corev1.PodConditionType]bool{}
	now := metav1.NewTime(time.Now().Truncate(time.Second))
	if w.conds == nil {
		w.conds = map[corev1.PodConditionType]corev1.PodCondition{}
		for _, old := range pod.Status.Conditions {
			w.conds[old.Type] = old
		}
	}
	for i := range conds {
		managed[conds[i].Type] = true
		conds[i].LastTransitionTime = now
		if old, ok := w.conds[conds[i].Type]; ok && old.Status == conds[i].Status {
			conds[i].LastTransitionTime = old.LastTransitionTime
		}
		w.conds[conds[i].Type] = conds[i]
	}
	for _, old := range pod.Status.Conditions {
		if !managed[old.Type] {
			conds = append(conds, old)
		}
	}
	sort.SliceStable(conds, func(i, j int) bool { return conds[i].Type < conds[j].Type })
	return conds
}
