package cluster

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"sigs.k8s.io/controller-runtime/pkg/client"

	valkeyv1 "github.com/gomomento/valkey-operator/api/v1alpha1"
	"github.com/gomomento/valkey-operator/internal/controller/node"
	"github.com/gomomento/valkey-operator/internal/render"
	"github.com/gomomento/valkey-operator/internal/topology"
)

// readStorage gathers, for every persistent node whose pod does not run,
// what the API server itself says of its pod, claim, volume and the
// Kubernetes node the volume is pinned to; the planner decides from it
// whether the node's data is gone for good (topology.VolumeLost). Every
// read goes around the cache: a claim or node merely missing from a cache
// is no proof that it is gone, and a node declared lost is replaced, its
// keys given up when no replica holds them.
func (r *Reconciler) readStorage(ctx context.Context, o *observed) error {
	for i := range o.members {
		m := &o.members[i]
		n := o.nodes[m.Name]
		if n == nil || !node.ComesBack(n) || !meta.IsStatusConditionTrue(n.Status.Conditions, valkeyv1.CondPodCreated) {
			continue
		}
		if m.Pod.Phase == topology.PodRunning || m.Pod.Phase == topology.PodStopping {
			continue
		}
		st, err := r.storageOf(ctx, n)
		if err != nil {
			return err
		}
		m.Storage = st
	}
	return nil
}

// storageOf reads node's pod, then its claim, the claim's volume and the
// Kubernetes node that volume is pinned to, stopping at the first that
// does not exist.
func (r *Reconciler) storageOf(ctx context.Context, node *valkeyv1.ValkeyNode) (*topology.Storage, error) {
	st := &topology.Storage{Claim: render.NodeClaimName(node.Name)}
	var pod corev1.Pod
	switch err := r.APIReader.Get(ctx, client.ObjectKey{Namespace: node.Namespace, Name: node.Name}, &pod); {
	case err == nil:
		// Whoever's pod it is, a process running under the node's name
		// is no proof of anything.
		st.PodRuns = podRuns(&pod)
	case !apierrors.IsNotFound(err):
		return nil, fmt.Errorf("reading pod %s around the cache: %w", node.Name, err)
	}
	var claim corev1.PersistentVolumeClaim
	switch err := r.APIReader.Get(ctx, client.ObjectKey{Namespace: node.Namespace, Name: st.Claim}, &claim); {
	case apierrors.IsNotFound(err):
		st.ClaimPhase = topology.ClaimMissing
		return st, nil
	case err != nil:
		return nil, fmt.Errorf("reading claim %s of node %s: %w", st.Claim, node.Name, err)
	}
	st.ClaimPhase, st.Volume = topology.ClaimPhase(claim.Status.Phase), claim.Spec.VolumeName
	if st.ClaimPhase != topology.ClaimBound || st.Volume == "" {
		return st, nil
	}
	var pv corev1.PersistentVolume
	switch err := r.APIReader.Get(ctx, client.ObjectKey{Name: st.Volume}, &pv); {
	case apierrors.IsNotFound(err):
		st.VolumeMissing = true
		return st, nil
	case err != nil:
		return nil, fmt.Errorf("reading volume %s of claim %s: %w", st.Volume, st.Claim, err)
	}
	st.PinnedTo = pinnedHostname(&pv)
	if st.PinnedTo == "" {
		return st, nil
	}
	// By the label the volume names, not by a node name taken to equal
	// it: where the two differ a Get by name would find no node and
	// declare a healthy volume lost.
	var nodes corev1.NodeList
	if err := r.APIReader.List(ctx, &nodes, client.MatchingLabels{corev1.LabelHostname: st.PinnedTo}); err != nil {
		return nil, fmt.Errorf("listing the Kubernetes node volume %s is pinned to: %w", st.Volume, err)
	}
	st.PinnedNodeMissing = len(nodes.Items) == 0
	return st, nil
}

// podRuns: some container of the pod runs, or the kubelet says the pod
// does.
func podRuns(p *corev1.Pod) bool {
	if p.Status.Phase == corev1.PodRunning {
		return true
	}
	for _, cs := range append(p.Status.InitContainerStatuses, p.Status.ContainerStatuses...) {
		if cs.State.Running != nil {
			return true
		}
	}
	return false
}

// pinnedHostname is the one Kubernetes node a volume can be used on, by
// its hostname label, as a local volume names it; "" when its node
// affinity says anything else (no affinity, several nodes, a zone).
func pinnedHostname(pv *corev1.PersistentVolume) string {
	if pv.Spec.NodeAffinity == nil || pv.Spec.NodeAffinity.Required == nil {
		return ""
	}
	terms := pv.Spec.NodeAffinity.Required.NodeSelectorTerms
	if len(terms) != 1 || len(terms[0].MatchFields) != 0 || len(terms[0].MatchExpressions) != 1 {
		return ""
	}
	e := terms[0].MatchExpressions[0]
	if e.Key != corev1.LabelHostname || e.Operator != corev1.NodeSelectorOpIn || len(e.Values) != 1 {
		return ""
	}
	return e.Values[0]
}
