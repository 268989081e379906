package cluster

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	"sigs.k8s.io/controller-runtime/pkg/client"

	valkeyv1 "github.com/gomomento/valkey-operator/api/v1alpha1"
	"github.com/gomomento/valkey-operator/internal/controller/clusterstatus"
	"github.com/gomomento/valkey-operator/internal/controller/watch"
	"github.com/gomomento/valkey-operator/internal/render"
)

// sizeVolumes makes the nodes' volumes follow persistence.size without a
// roll: render.SizeVolumes decides; here each node to grow gets the new
// size recorded (its node controller expands the claim), the VolumeSize
// condition is written, and, while the size cannot be applied, new nodes
// get the size their peers' volumes have.
func (r *Reconciler) sizeVolumes(ctx context.Context, s *clusterScope) error {
	vc := s.vc
	spec, err := s.desired(0)
	if err != nil {
		return err
	}
	desired := spec.Persistence
	if desired == nil {
		s.found.noPersistence = true
		return nil
	}
	vols, err := r.nodeVolumes(ctx, vc, s.o)
	if err != nil {
		return err
	}
	classes := map[string]*storagev1.StorageClass{}
	for _, name := range render.ExpansionClasses(desired, vols) {
		var sc storagev1.StorageClass
		switch err := r.APIReader.Get(ctx, client.ObjectKey{Name: name}, &sc); {
		case apierrors.IsNotFound(err):
			classes[name] = nil
		case err != nil:
			return fmt.Errorf("reading StorageClass %s: %w", name, err)
		default:
			classes[name] = &sc
		}
	}
	sizing := render.SizeVolumes(desired, vols, classes)
	for _, name := range sizing.Expand {
		node := s.o.nodes[name].DeepCopy()
		patch := client.MergeFrom(node.DeepCopy())
		node.Spec.Persistence.Size = desired.Size.DeepCopy()
		if err := r.Patch(ctx, node, patch); err != nil {
			return fmt.Errorf("recording volume size %s on node %s: %w", desired.Size.String(), name, err)
		}
		clusterstatus.LogFrom(ctx).Info("expanding the node's volume", "node", name, "size", desired.Size.String())
	}
	refused := sizing.Reason == valkeyv1.ReasonVolumeShrinkRefused || sizing.Reason == valkeyv1.ReasonVolumeExpansionNotAllowed
	if refused && !clusterstatus.IsConditionMessage(vc, valkeyv1.CondVolumeSize, sizing.Message) {
		r.Recorder.Eventf(vc, nil, corev1.EventTypeWarning, sizing.Reason, "SizeVolumes", "%s", sizing.Message)
	}
	s.found.volumeSize = &cond{sizing.Status, sizing.Reason, sizing.Message}
	if !sizing.NewNodeSize.Equal(desired.Size) {
		s.desired = withVolumeSize(s.desired, sizing.NewNodeSize)
	}
	return nil
}

// nodeVolumes are the cluster's persistent nodes that are not leaving,
// each with its claim as the cache holds it.
func (r *Reconciler) nodeVolumes(ctx context.Context, vc *valkeyv1.ValkeyCluster, o *observed) ([]render.NodeVolume, error) {
	var claims corev1.PersistentVolumeClaimList
	if err := r.List(ctx, &claims, watch.OfCluster(vc.Namespace, vc.Name)...); err != nil {
		return nil, fmt.Errorf("listing PersistentVolumeClaims: %w", err)
	}
	byName := map[string]*corev1.PersistentVolumeClaim{}
	for i := range claims.Items {
		byName[claims.Items[i].Name] = &claims.Items[i]
	}
	var out []render.NodeVolume
	for _, name := range o.names() {
		n := o.nodes[name]
		if n.Spec.Persistence == nil || n.Spec.Lifecycle == valkeyv1.LifecycleLeaving {
			continue
		}
		out = append(out, render.NodeVolume{Node: name, Spec: n.Spec.Persistence, Claim: byName[render.NodeClaimName(name)]})
	}
	return out, nil
}

// withVolumeSize is desired with the volume size replaced.
func withVolumeSize(desired func(int32) (valkeyv1.ValkeyNodeSpec, error), size resource.Quantity) func(int32) (valkeyv1.ValkeyNodeSpec, error) {
	return func(shard int32) (valkeyv1.ValkeyNodeSpec, error) {
		spec, err := desired(shard)
		if err != nil || spec.Persistence == nil {
			return spec, err
		}
		spec.Persistence = spec.Persistence.DeepCopy()
		spec.Persistence.Size = size.DeepCopy()
		return spec, nil
	}
}
