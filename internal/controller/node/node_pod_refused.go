package node

import (
	"context"
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	valkeyv1 "github.com/gomomento/valkey-operator/api/v1alpha1"
	"github.com/gomomento/valkey-operator/internal/textutil"
)

// refusedRetry is how often a refused pod is asked for again.
const refusedRetry = 10 * time.Second

// podRefusal is the apiserver refusing a node's pod as written (Forbidden
// or Invalid): a priorityClassName that names no PriorityClass, a quota
// or an admission policy. Retrying cannot help until someone changes the
// cluster's settings or the cluster it runs in, so the refusal is recorded
// where the cluster controller reports it.
type podRefusal struct {
	pod string
	err error
}

func (p *podRefusal) Error() string {
	return fmt.Sprintf("creating pod %s: refused by the apiserver: %v", p.pod, p.err)
}

func (p *podRefusal) Unwrap() error { return p.err }

// recordRefusal sets PodCreated False with the apiserver's words; the
// cluster controller, which owns the node, wakes on it and puts it in the
// cluster's status. A later successful creation sets it True.
func (r *Reconciler) recordRefusal(ctx context.Context, node *valkeyv1.ValkeyNode, refused *podRefusal) error {
	before := node.DeepCopy()
	changed := meta.SetStatusCondition(&node.Status.Conditions, metav1.Condition{
		Type: valkeyv1.CondPodCreated, Status: metav1.ConditionFalse, Reason: valkeyv1.ReasonPodRefused,
		Message: textutil.Truncate(refused.err.Error(), 2000), ObservedGeneration: node.Generation,
	})
	if !changed {
		return nil
	}
	if err := r.Status().Patch(ctx, node, client.MergeFrom(before)); err != nil {
		return fmt.Errorf("recording the refusal of pod %s on node %s: %w", refused.pod, node.Name, err)
	}
	return nil
}
