package cluster

import (
	"fmt"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	valkeyv1 "github.com/gomomento/valkey-operator/api/v1alpha1"
	"github.com/gomomento/valkey-operator/internal/controller/clusterstatus"
	"github.com/gomomento/valkey-operator/internal/render"
	"github.com/gomomento/valkey-operator/internal/textutil"
)

// waitingFailures are the kubelet's waiting reasons that will not clear by
// themselves; ContainerCreating and PodInitializing are progress.
var waitingFailures = map[string]bool{
	"ErrImagePull":               true,
	"ImagePullBackOff":           true,
	"InvalidImageName":           true,
	"ErrImageNeverPull":          true,
	"CrashLoopBackOff":           true,
	"CreateContainerConfigError": true,
	"CreateContainerError":       true,
	"RunContainerError":          true,
}

// containerFailures lists the failing containers of the cluster's pods,
// one per node, the Valkey container's first. A pod being deleted is
// stopping on purpose and is skipped. A node whose pod the apiserver
// refused to create has no container to fail, yet starts no more than
// one that cannot pull its image: it is listed with reason PodRefused.
func containerFailures(o *observed) []containerFailure {
	var out []containerFailure
	for name, n := range o.nodes {
		if _, hasPod := o.pods[name]; hasPod {
			continue
		}
		if c := meta.FindStatusCondition(n.Status.Conditions, valkeyv1.CondPodCreated); c != nil &&
			c.Status == metav1.ConditionFalse && c.Reason == valkeyv1.ReasonPodRefused {
			out = append(out, containerFailure{node: name, reason: valkeyv1.ReasonPodRefused,
				message: withDetail(fmt.Sprintf("node %s: pod refused by the apiserver", name), c.Message)})
		}
	}
	for name, p := range o.pods {
		if _, ours := o.nodes[name]; !ours || !p.DeletionTimestamp.IsZero() {
			continue
		}
		statuses := append(append([]corev1.ContainerStatus{}, p.Status.InitContainerStatuses...), p.Status.ContainerStatuses...)
		sort.SliceStable(statuses, func(i, j int) bool {
			return statuses[i].Name == render.ContainerValkey && statuses[j].Name != render.ContainerValkey
		})
		for _, cs := range statuses {
			if f, ok := failureOf(name, cs); ok {
				out = append(out, f)
				break
			}
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].node < out[j].node })
	return out
}

func failureOf(node string, cs corev1.ContainerStatus) (containerFailure, bool) {
	if w := cs.State.Waiting; w != nil && waitingFailures[w.Reason] {
		return containerFailure{node: node, reason: w.Reason,
			message: withDetail(fmt.Sprintf("node %s: container %s: %s", node, cs.Name, w.Reason), w.Message)}, true
	}
	t := cs.State.Terminated
	if t == nil || (t.ExitCode == 0 && t.Reason != valkeyv1.ReasonOOMKilled) {
		return containerFailure{}, false
	}
	reason := valkeyv1.ReasonContainerExited
	if t.Reason == valkeyv1.ReasonOOMKilled {
		reason = valkeyv1.ReasonOOMKilled
	}
	head := fmt.Sprintf("node %s: container %s exited with code %d", node, cs.Name, t.ExitCode)
	if t.Reason != "" {
		head += " (" + t.Reason + ")"
	}
	return containerFailure{node: node, reason: reason, message: withDetail(head, t.Message), exited: cs.Name == render.ContainerValkey}, true
}

func withDetail(head, detail string) string {
	detail = strings.TrimSpace(detail)
	if detail == "" {
		return head
	}
	return head + ": " + detail
}

// cannotStart are the ContainersHealthy reasons of a pod that never runs
// until a person acts (the image, its pull secret, the pod's settings):
// while the cluster is not Active, status.message says them.
var cannotStart = map[string]bool{
	"ErrImagePull":            true,
	"ImagePullBackOff":        true,
	"InvalidImageName":        true,
	valkeyv1.ReasonPodRefused: true,
}

// containersCondition is ContainersHealthy. held, when not empty, says
// that replacements are backing off; it keeps the condition False after
// the failed pods themselves are gone.
func containersCondition(failures []containerFailure, held string) cond {
	if len(failures) == 0 {
		if held != "" {
			return cond{metav1.ConditionFalse, valkeyv1.ReasonReplacementBackoff, held}
		}
		return cond{metav1.ConditionTrue, valkeyv1.ReasonContainersRunning, "every node's container is running or starting"}
	}
	first := failures[0]
	msg := first.message
	if len(failures) > 1 {
		msg = fmt.Sprintf("%s (and %d more failing node(s))", msg, len(failures)-1)
	}
	if held != "" {
		msg += "; " + held
	}
	return cond{metav1.ConditionFalse, first.reason, textutil.Truncate(msg, 2000)}
}

// announceContainerFailures sends a Warning Event with the first
// failure's reason whenever ContainersHealthy's message changes.
func (r *Reconciler) announceContainerFailures(vc *valkeyv1.ValkeyCluster, failures []containerFailure, c cond) {
	if len(failures) > 0 && !clusterstatus.IsConditionMessage(vc, valkeyv1.CondContainersHealthy, c.message) {
		r.Recorder.Eventf(vc, nil, corev1.EventTypeWarning, failures[0].reason, "ObservePod", "%s", textutil.Truncate(failures[0].message, 1000))
	}
}
