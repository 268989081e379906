package cluster

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	valkeyv1 "github.com/gomomento/valkey-operator/api/v1alpha1"
	"github.com/gomomento/valkey-operator/internal/controller/apischeme"
	"github.com/gomomento/valkey-operator/internal/controller/node"
	"github.com/gomomento/valkey-operator/internal/render"
)

// A larger size is recorded on every node and nothing else; a class that
// does not expand records nothing and keeps new nodes at the volumes'
// size. The node controller then raises a bound claim, never an unbound
// one, which the apiserver would refuse.
func TestVolumeSizeActs(t *testing.T) {
	ctx := context.Background()
	scheme, err := apischeme.NewScheme()
	if err != nil {
		t.Fatal(err)
	}
	nodeNamed := func(name string) *valkeyv1.ValkeyNode {
		return &valkeyv1.ValkeyNode{
			ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name},
			Spec: valkeyv1.ValkeyNodeSpec{ClusterName: "c", Lifecycle: valkeyv1.LifecycleActive,
				Persistence: &valkeyv1.NodePersistence{Size: resource.MustParse("1Gi"), Appendfsync: valkeyv1.AppendFsyncAlways}},
		}
	}
	claim := func(name string, bound bool) *corev1.PersistentVolumeClaim {
		c := &corev1.PersistentVolumeClaim{
			ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: render.NodeClaimName(name), Labels: map[string]string{valkeyv1.LabelInstance: "c"}},
			Spec: corev1.PersistentVolumeClaimSpec{StorageClassName: ptr.To("local"),
				Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}}},
		}
		if bound {
			c.Status.Phase = corev1.ClaimBound
			c.Status.Capacity = corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}
		}
		return c
	}
	desired := func(shard int32) (valkeyv1.ValkeyNodeSpec, error) {
		return valkeyv1.ValkeyNodeSpec{ShardIndex: shard, Persistence: &valkeyv1.NodePersistence{Size: resource.MustParse("2Gi"), Appendfsync: valkeyv1.AppendFsyncAlways}}, nil
	}
	size := func(c client.Client, name string) resource.Quantity {
		var n valkeyv1.ValkeyNode
		if err := c.Get(ctx, client.ObjectKey{Namespace: "ns", Name: name}, &n); err != nil {
			t.Fatal(err)
		}
		return n.Spec.Persistence.Size
	}
	for _, tt := range []struct {
		name       string
		expand     bool
		wantSize   string
		wantReason string
	}{
		{name: "expandable class", expand: true, wantSize: "2Gi", wantReason: valkeyv1.ReasonVolumesExpanding},
		{name: "class without expansion", expand: false, wantSize: "1Gi", wantReason: valkeyv1.ReasonVolumeExpansionNotAllowed},
	} {
		t.Run(tt.name, func(t *testing.T) {
			a, b := nodeNamed("c-a"), nodeNamed("c-b")
			class := &storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: "local"}, Provisioner: "x", AllowVolumeExpansion: ptr.To(tt.expand)}
			c := fakeCache(scheme).WithObjects(a, b, claim("c-a", true), claim("c-b", false), class).Build()
			r := &Reconciler{Client: c, APIReader: c, Recorder: events.NewFakeRecorder(10)}
			s := &clusterScope{vc: &valkeyv1.ValkeyCluster{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "c"}},
				o: &observed{nodes: map[string]*valkeyv1.ValkeyNode{"c-a": a, "c-b": b}}, desired: desired}
			if err := r.sizeVolumes(ctx, s); err != nil {
				t.Fatal(err)
			}
			for _, name := range []string{"c-a", "c-b"} {
				if got := size(c, name); !got.Equal(resource.MustParse(tt.wantSize)) {
					t.Errorf("node %s records %s, want %s", name, got.String(), tt.wantSize)
				}
			}
			if c := s.found.volumeSize; c == nil || c.reason != tt.wantReason {
				t.Errorf("VolumeSize %+v, want reason %s", c, tt.wantReason)
			}
			spec, _ := s.desired(0)
			if got := spec.Persistence.Size; !got.Equal(resource.MustParse(tt.wantSize)) {
				t.Errorf("a new node would get %s, want %s", got.String(), tt.wantSize)
			}
			if !tt.expand {
				return
			}
			nr := &node.Reconciler{Client: c, Recorder: events.NewFakeRecorder(10)}
			for name, want := range map[string]string{"c-a": "2Gi", "c-b": "1Gi"} {
				var n valkeyv1.ValkeyNode
				if err := c.Get(ctx, client.ObjectKey{Namespace: "ns", Name: name}, &n); err != nil {
					t.Fatal(err)
				}
				if err := nr.ExpandClaim(ctx, &n); err != nil {
					t.Fatal(err)
				}
				var pvc corev1.PersistentVolumeClaim
				if err := c.Get(ctx, client.ObjectKey{Namespace: "ns", Name: render.NodeClaimName(name)}, &pvc); err != nil {
					t.Fatal(err)
				}
				if got := pvc.Spec.Resources.Requests[corev1.ResourceStorage]; !got.Equal(resource.MustParse(want)) {
					t.Errorf("claim of %s requests %s, want %s", name, got.String(), want)
				}
			}
		})
	}
}
