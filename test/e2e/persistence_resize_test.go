package e2e

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	valkeyv1 "github.com/gomomento/valkey-operator/api/v1alpha1"
	"github.com/gomomento/valkey-operator/internal/localkube"
	"github.com/gomomento/valkey-operator/internal/render"
)

// A persistent 1x1 cluster under the checking client's load has
// persistence.size raised from 1Gi to 2Gi: every claim reaches 2Gi in
// place, and no pod is restarted or replaced (same members, pod UIDs,
// node IDs and restart counts). A shrink is refused at admission, and in
// the status when the cluster is pointed at a config with a smaller size.
// With the class's allowVolumeExpansion turned off, a larger size is
// refused in the status naming the class; turned back on, the expansion
// goes on by itself. Nothing is ever rolled and every acknowledged write
// reads back.
func TestPersistenceResizeInPlace(t *testing.T) {
	t.Parallel()
	const ns = "persist-resize"
	ctx := context.Background()
	class := &storagev1.StorageClass{
		ObjectMeta:           metav1.ObjectMeta{Name: ns},
		Provisioner:          localkube.ProvisionerName,
		ReclaimPolicy:        ptr.To(corev1.PersistentVolumeReclaimDelete),
		VolumeBindingMode:    ptr.To(storagev1.VolumeBindingWaitForFirstConsumer),
		AllowVolumeExpansion: ptr.To(true),
	}
	if err := k8sClient.Create(ctx, class); err != nil {
		t.Fatalf("creating StorageClass: %v", err)
	}
	t.Cleanup(func() { _ = k8sClient.Delete(context.Background(), class) })
	key := newDurableCluster(t, ns, 1, 1, onStorageClass(class.Name))
	members := slices.Clone(getCluster(t, key).Status.Nodes)
	before := snapshotNodes(t, ns, members)

	c := clusterClient(t, seedOf(key), nil)
	load := startLoad(c, "resize")
	writes := func(n int64) {
		t.Helper()
		eventually(t, 30*time.Second, "writes acknowledged", func() error {
			if got := load.writes.Load(); got < n {
				return fmt.Errorf("%d writes so far", got)
			}
			return nil
		})
	}
	writes(200)

	if err := setPersistenceSize(ns, "2Gi"); err != nil {
		t.Fatalf("raising persistence.size: %v", err)
	}
	waitVolumes(t, key, members, "2Gi", valkeyv1.ReasonVolumesAtSize, "2 volumes of 2Gi")
	for _, name := range members {
		var n valkeyv1.ValkeyNode
		if err := k8sClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, &n); err != nil {
			t.Fatal(err)
		}
		if got := n.Spec.Persistence.Size; !got.Equal(resource.MustParse("2Gi")) {
			t.Errorf("node %s records size %s, want 2Gi", name, got.String())
		}
	}
	assertUntouched(t, key, before)
	writes(load.writes.Load() + 200)

	err := setPersistenceSize(ns, "1Gi")
	if err == nil || !strings.Contains(err.Error(), "persistence.size cannot shrink from 2Gi to 1Gi: a volume cannot be made smaller, only larger") {
		t.Errorf("a shrink of the config: %v, want it refused at admission", err)
	}
	smaller := createConfig(t, menuConfigName(ns+"-small"), "8.0.1", valkeyv1.ValkeyConfigSpec{
		Valkey:      map[string]string{"maxmemory": "64mb"},
		Persistence: &valkeyv1.Persistence{Size: resource.MustParse("1Gi"), StorageClassName: class.Name, Appendfsync: valkeyv1.AppendFsyncAlways},
	})
	updateCluster(t, key, func(vc *valkeyv1.ValkeyCluster) { vc.Spec.ConfigRef = smaller })
	waitVolumes(t, key, members, "2Gi", valkeyv1.ReasonVolumeShrinkRefused,
		"persistence.size 1Gi is smaller than the 2Gi the nodes' volumes have: a volume cannot shrink")
	assertUntouched(t, key, before)
	updateCluster(t, key, func(vc *valkeyv1.ValkeyCluster) { vc.Spec.ConfigRef = menuConfigName(ns) })
	waitVolumes(t, key, members, "2Gi", valkeyv1.ReasonVolumesAtSize, "2 volumes of 2Gi")

	setExpansion(t, class.Name, false)
	if err := setPersistenceSize(ns, "3Gi"); err != nil {
		t.Fatalf("raising persistence.size: %v", err)
	}
	waitVolumes(t, key, members, "2Gi", valkeyv1.ReasonVolumeExpansionNotAllowed,
		fmt.Sprintf("StorageClass %q does not allow volume expansion", class.Name))
	assertUntouched(t, key, before)
	setExpansion(t, class.Name, true)
	waitVolumes(t, key, members, "3Gi", valkeyv1.ReasonVolumesAtSize, "2 volumes of 3Gi")
	assertUntouched(t, key, before)

	writes(load.writes.Load() + 200)
	acked := load.finish(t)
	checkAll(t, c, acked)
	if load.stale.Load() > 0 {
		t.Errorf("%d reads returned another value than the one last acknowledged: %v", load.stale.Load(), load.errs)
	}
}

// nodeSnapshot is what a node keeps when nothing restarts or replaces it.
type nodeSnapshot struct {
	pod      string
	restarts int32
	nodeID   string
}

func snapshotNodes(t *testing.T, ns string, members []string) map[string]nodeSnapshot {
	t.Helper()
	out := map[string]nodeSnapshot{}
	for _, name := range members {
		var p corev1.Pod
		if err := k8sClient.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, &p); err != nil {
			t.Fatal(err)
		}
		out[name] = nodeSnapshot{pod: string(p.UID), restarts: restarts(&p), nodeID: podMyself(t, ns, name).ID}
	}
	return out
}

// assertUntouched: the same members, each with the same pod, restart
// count and Valkey node ID.
func assertUntouched(t *testing.T, key client.ObjectKey, before map[string]nodeSnapshot) {
	t.Helper()
	var names []string
	for name := range before {
		names = append(names, name)
	}
	if got := getCluster(t, key).Status.Nodes; !slices.Equal(sorted(got), sorted(names)) {
		t.Errorf("members %v, want %v: a node was replaced", got, sorted(names))
	}
	now := snapshotNodes(t, key.Namespace, names)
	for name, b := range before {
		if now[name] != b {
			t.Errorf("node %s: %+v, was %+v: its pod was replaced or restarted", name, now[name], b)
		}
	}
}

// setPersistenceSize edits the size in the config newDurableCluster made.
func setPersistenceSize(ns, size string) error {
	var cfg valkeyv1.ValkeyConfig
	if err := k8sClient.Get(context.Background(), client.ObjectKey{Name: menuConfigName(ns)}, &cfg); err != nil {
		return err
	}
	cfg.Spec.Persistence.Size = resource.MustParse(size)
	return k8sClient.Update(context.Background(), &cfg)
}

func setExpansion(t *testing.T, class string, allow bool) {
	t.Helper()
	var sc storagev1.StorageClass
	if err := k8sClient.Get(context.Background(), client.ObjectKey{Name: class}, &sc); err != nil {
		t.Fatal(err)
	}
	sc.AllowVolumeExpansion = ptr.To(allow)
	if err := k8sClient.Update(context.Background(), &sc); err != nil {
		t.Fatalf("setting allowVolumeExpansion %v on %s: %v", allow, class, err)
	}
}

// waitVolumes waits until the VolumeSize condition has reason and a
// message containing message, with every member's claim at capacity.
func waitVolumes(t *testing.T, key client.ObjectKey, members []string, capacity, reason, message string) {
	t.Helper()
	want := resource.MustParse(capacity)
	eventually(t, 3*time.Minute, fmt.Sprintf("VolumeSize %s with claims at %s", reason, capacity), func() error {
		vc := getCluster(t, key)
		cond := meta.FindStatusCondition(vc.Status.Conditions, valkeyv1.CondVolumeSize)
		if cond == nil || cond.Reason != reason || !strings.Contains(cond.Message, message) {
			return fmt.Errorf("VolumeSize is %+v", cond)
		}
		for _, name := range members {
			var pvc corev1.PersistentVolumeClaim
			if err := k8sClient.Get(context.Background(), client.ObjectKey{Namespace: key.Namespace, Name: render.NodeClaimName(name)}, &pvc); err != nil {
				return err
			}
			if got := pvc.Status.Capacity[corev1.ResourceStorage]; !got.Equal(want) {
				return fmt.Errorf("claim %s has %s (conditions %v)", pvc.Name, got.String(), pvc.Status.Conditions)
			}
		}
		return nil
	})
}
