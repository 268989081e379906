package node

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	logf "sigs.k8s.io/controller-runtime/pkg/log"

	valkeyv1 "github.com/gomomento/valkey-operator/api/v1alpha1"
	"github.com/gomomento/valkey-operator/internal/render"
)

// refreshConfig writes a node's ConfigMap again when the settings recorded
// on the node render another valkey.conf: the cluster records an edit of
// live settings on the node and sets them on the running server, and the
// file carries them to the server's next start, so a restart keeps them.
// The digest of what was written is kept on the node, so a node whose
// settings did not change costs no write. A ConfigMap not created yet is
// left to createObjects, which renders the same settings.
func (r *Reconciler) refreshConfig(ctx context.Context, node *valkeyv1.ValkeyNode) error {
	if node.Spec.Lifecycle == valkeyv1.LifecycleLeaving {
		return nil
	}
	var vc valkeyv1.ValkeyCluster
	if err := r.Get(ctx, client.ObjectKey{Namespace: node.Namespace, Name: node.Spec.ClusterName}, &vc); err != nil {
		return client.IgnoreNotFound(err)
	}
	rc := render.Cluster{Cluster: &vc, ClusterDomain: r.Options.ClusterDomain, DefaultZoneSpread: r.Options.DefaultZoneSpread}
	cm, err := rc.NodeConfigMap(node)
	if err != nil {
		return fmt.Errorf("rendering ConfigMap of node %s: %w", node.Name, err)
	}
	digest := render.ConfDigest(cm)
	if node.Annotations[valkeyv1.AnnotationConfDigest] == digest {
		return nil
	}
	// Only the file: the rest of the ConfigMap is as it was created.
	data := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: cm.Namespace, Name: cm.Name}, Data: cm.Data}
	switch err := r.Patch(ctx, data, client.Merge); {
	case apierrors.IsNotFound(err):
		return nil
	case err != nil:
		return fmt.Errorf("writing ConfigMap %s: %w", cm.Name, err)
	}
	before := node.DeepCopy()
	if node.Annotations == nil {
		node.Annotations = map[string]string{}
	}
	node.Annotations[valkeyv1.AnnotationConfDigest] = digest
	if err := r.Patch(ctx, node, client.MergeFrom(before)); err != nil {
		return fmt.Errorf("recording the config digest on node %s: %w", node.Name, err)
	}
	logf.FromContext(ctx).Info("wrote the node's valkey.conf", "digest", digest)
	return nil
}
