package chartinstall

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"

	"github.com/gomomento/valkey-operator/internal/operatorcmd"
)

// PodSelector selects the operator's pods: the label the chart's
// Deployment selects them by.
const PodSelector = "app=valkey-operator"

// OperatorPods are the operator's pods in namespace, by name.
func OperatorPods(ctx context.Context, cs kubernetes.Interface, namespace string) ([]corev1.Pod, error) {
	list, err := cs.CoreV1().Pods(namespace).List(ctx, metav1.ListOptions{LabelSelector: PodSelector})
	if err != nil {
		return nil, fmt.Errorf("listing the operator's pods in %s: %w", namespace, err)
	}
	sort.Slice(list.Items, func(i, j int) bool { return list.Items[i].Name < list.Items[j].Name })
	return list.Items, nil
}

// Leader is the operator pod holding the leader election Lease in
// namespace, or an error saying why there is none.
func Leader(ctx context.Context, cs kubernetes.Interface, namespace string) (*corev1.Pod, error) {
	lease, err := cs.CoordinationV1().Leases(namespace).Get(ctx, operatorcmd.LeaderElectionID, metav1.GetOptions{})
	if err != nil {
		return nil, fmt.Errorf("lease %s/%s: %w", namespace, operatorcmd.LeaderElectionID, err)
	}
	if lease.Spec.HolderIdentity == nil || *lease.Spec.HolderIdentity == "" {
		return nil, fmt.Errorf("lease %s/%s has no holder", namespace, lease.Name)
	}
	holder := *lease.Spec.HolderIdentity
	pods, err := OperatorPods(ctx, cs, namespace)
	if err != nil {
		return nil, err
	}
	// controller-runtime's elector names itself hostname_uuid, and a pod's
	// hostname is its name.
	for i := range pods {
		if strings.HasPrefix(holder, pods[i].Name+"_") {
			return &pods[i], nil
		}
	}
	return nil, fmt.Errorf("lease %s/%s is held by %q, none of the operator's pods %s", namespace, lease.Name, holder, podNames(pods))
}

// WaitLeader waits until one of the operator's pods holds the Lease and
// is Ready, and returns it.
func WaitLeader(ctx context.Context, cs kubernetes.Interface, namespace string, timeout time.Duration) (*corev1.Pod, error) {
	var leader *corev1.Pod
	var last error
	err := wait.PollUntilContextTimeout(ctx, 250*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		leader, last = Leader(ctx, cs, namespace)
		if last == nil && !podReady(leader) {
			last = fmt.Errorf("leader %s is not Ready", leader.Name)
		}
		if apierrors.IsForbidden(last) {
			return false, last
		}
		return last == nil, nil
	})
	if err != nil {
		return nil, fmt.Errorf("waiting for a ready operator to lead in %s: %w (%v)", namespace, err, last)
	}
	return leader, nil
}

// Logs are the logs of the operator's pods (PodLogs).
func Logs(ctx context.Context, cs kubernetes.Interface, namespace string, tail int64) string {
	return PodLogs(ctx, cs, namespace, PodSelector, tail)
}

// PodLogs are the logs of every container of the pods selector selects
// in namespace, the previous run's too when a container restarted, as
// kubectl logs (--previous) prints them; tail bounds each to its last
// lines.
func PodLogs(ctx context.Context, cs kubernetes.Interface, namespace, selector string, tail int64) string {
	list, err := cs.CoreV1().Pods(namespace).List(ctx, metav1.ListOptions{LabelSelector: selector})
	if err != nil {
		return fmt.Sprintf("listing the pods of %s: %v", namespace, err)
	}
	var b bytes.Buffer
	for _, p := range list.Items {
		for _, c := range append(p.Status.InitContainerStatuses, p.Status.ContainerStatuses...) {
			runs := []bool{false}
			if c.RestartCount > 0 {
				runs = []bool{true, false}
			}
			for _, previous := range runs {
				fmt.Fprintf(&b, "--- pod %s/%s container %s (restarts %d, previous run: %v) ---\n", namespace, p.Name, c.Name, c.RestartCount, previous)
				rc, err := cs.CoreV1().Pods(namespace).GetLogs(p.Name, &corev1.PodLogOptions{Container: c.Name, Previous: previous, TailLines: &tail}).Stream(ctx)
				if err != nil {
					fmt.Fprintf(&b, "(logs: %v)\n", err)
					continue
				}
				_, _ = io.Copy(&b, rc)
				rc.Close()
			}
		}
	}
	return b.String()
}

func podReady(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

func podNames(pods []corev1.Pod) []string {
	var out []string
	for _, p := range pods {
		out = append(out, p.Name)
	}
	return out
}
