package localkube

import (
	"fmt"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
)

func TestNextResizeStep(t *testing.T) {
	claim := func(request, capacity string, conds ...corev1.PersistentVolumeClaimConditionType) *corev1.PersistentVolumeClaim {
		c := &corev1.PersistentVolumeClaim{
			ObjectMeta: metav1.ObjectMeta{UID: "claim"},
			Spec:       corev1.PersistentVolumeClaimSpec{Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse(request)}}},
			Status:     corev1.PersistentVolumeClaimStatus{Phase: corev1.ClaimBound, Capacity: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse(capacity)}},
		}
		for _, typ := range conds {
			c.Status.Conditions = append(c.Status.Conditions, corev1.PersistentVolumeClaimCondition{Type: typ, Status: corev1.ConditionTrue})
		}
		return c
	}
	volume := func(capacity, by string, claimUID types.UID) *corev1.PersistentVolume {
		return &corev1.PersistentVolume{
			ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{annProvisionedBy: by}},
			Spec: corev1.PersistentVolumeSpec{
				Capacity:    corev1.ResourceList{corev1.ResourceStorage: resource.MustParse(capacity)},
				ClaimRef:    &corev1.ObjectReference{UID: claimUID},
				AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			},
		}
	}
	ours := func(capacity string) *corev1.PersistentVolume { return volume(capacity, ProvisionerName, "claim") }
	unbound := claim("2Gi", "1Gi")
	unbound.Status.Phase = corev1.ClaimPending
	tests := []struct {
		name    string
		pvc     *corev1.PersistentVolumeClaim
		pv      *corev1.PersistentVolume
		mounted bool
		want    resizeStep
	}{
		{"at size", claim("1Gi", "1Gi"), ours("1Gi"), true, resizeNone},
		{"request raised: the claim is marked Resizing", claim("2Gi", "1Gi"), ours("1Gi"), true, resizeStart},
		{"marked: the volume grows", claim("2Gi", "1Gi", corev1.PersistentVolumeClaimResizing), ours("1Gi"), true, resizeVolume},
		{"volume grown: handed to the node", claim("2Gi", "1Gi", corev1.PersistentVolumeClaimResizing), ours("2Gi"), true, resizeNodePending},
		{"node pending and mounted: finished", claim("2Gi", "1Gi", corev1.PersistentVolumeClaimFileSystemResizePending), ours("2Gi"), true, resizeFinish},
		{"node pending, no pod: waits for one", claim("2Gi", "1Gi", corev1.PersistentVolumeClaimFileSystemResizePending), ours("2Gi"), false, resizeNone},
		{"request raised again while pending", claim("3Gi", "1Gi", corev1.PersistentVolumeClaimFileSystemResizePending), ours("2Gi"), true, resizeStart},
		{"another provisioner's volume", claim("2Gi", "1Gi"), volume("1Gi", "other.example.com/csi", "claim"), true, resizeNone},
		{"a volume bound to another claim", claim("2Gi", "1Gi"), volume("1Gi", ProvisionerName, "other"), true, resizeNone},
		{"not bound", unbound, ours("1Gi"), true, resizeNone},
		{"no volume", claim("2Gi", "1Gi"), nil, true, resizeNone},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := nextResizeStep(tt.pvc, tt.pv, tt.mounted); got != tt.want {
				t.Errorf("step %s, want %s", got, tt.want)
			}
		})
	}
}

// A claim's request raised with its pod running goes through the steps a
// CSI resizer and the kubelet take (Resizing, the volume's capacity,
// FileSystemResizePending, the claim's capacity) without touching the pod.
// Raised with no pod, it waits at FileSystemResizePending with the volume
// grown, and finishes once a pod mounts it.
func TestClaimExpandsInPlace(t *testing.T) {
	t.Parallel()
	ns := newNamespace(t)
	pvc := &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: "data", Namespace: ns},
		Spec: corev1.PersistentVolumeClaimSpec{
			AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			Resources:   corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}},
		},
	}
	claims := testCS.CoreV1().PersistentVolumeClaims(ns)
	if _, err := claims.Create(testCtx, pvc, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	withClaim := func() *corev1.Pod {
		pod := sleepPod(ns, "user")
		pod.Spec.Volumes = []corev1.Volume{{Name: "data", VolumeSource: corev1.VolumeSource{
			PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "data"}}}}
		pod.Spec.Containers[0].VolumeMounts = []corev1.VolumeMount{{Name: "data", MountPath: "/data"}}
		return pod
	}
	createPod(t, withClaim())
	before := waitPod(t, ns, "user", "ready", isReady)

	bound, err := claims.Get(testCtx, "data", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	w, err := claims.Watch(testCtx, metav1.ListOptions{ResourceVersion: bound.ResourceVersion})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	setRequest := func(size string) {
		t.Helper()
		patch := fmt.Sprintf(`{"spec":{"resources":{"requests":{"storage":%q}}}}`, size)
		if _, err := claims.Patch(testCtx, "data", types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
			t.Fatalf("raising the request to %s: %v", size, err)
		}
	}
	volumeCapacity := func() resource.Quantity {
		pv, err := testCS.CoreV1().PersistentVolumes().Get(testCtx, bound.Spec.VolumeName, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return pv.Spec.Capacity[corev1.ResourceStorage]
	}
	waitClaim := func(what string, cond func(*corev1.PersistentVolumeClaim) bool) *corev1.PersistentVolumeClaim {
		t.Helper()
		var got *corev1.PersistentVolumeClaim
		eventually(t, testTimeout, func() (bool, string) {
			c, err := claims.Get(testCtx, "data", metav1.GetOptions{})
			if err != nil {
				return false, err.Error()
			}
			got = c
			return cond(c), fmt.Sprintf("claim not %s: capacity %v, conditions %v, resize status %v", what, c.Status.Capacity, c.Status.Conditions, c.Status.AllocatedResourceStatuses)
		})
		return got
	}
	capacityIs := func(size string) func(*corev1.PersistentVolumeClaim) bool {
		return func(c *corev1.PersistentVolumeClaim) bool {
			q := c.Status.Capacity[corev1.ResourceStorage]
			return q.Equal(resource.MustParse(size))
		}
	}

	setRequest("2Gi")
	done := waitClaim("at 2Gi", capacityIs("2Gi"))
	if resizing(done) || len(done.Status.AllocatedResourceStatuses) != 0 {
		t.Errorf("finished expansion left conditions %v, resize status %v", done.Status.Conditions, done.Status.AllocatedResourceStatuses)
	}
	if q := volumeCapacity(); !q.Equal(resource.MustParse("2Gi")) {
		t.Errorf("volume capacity %s, want 2Gi", q.String())
	}
	var seen []corev1.PersistentVolumeClaimConditionType
	for ev := range w.ResultChan() {
		c, ok := ev.Object.(*corev1.PersistentVolumeClaim)
		if !ok || ev.Type != watch.Modified {
			continue
		}
		for _, cond := range c.Status.Conditions {
			if !isResizeCondition(cond.Type) {
				continue // the controller-manager's own, such as Unused
			}
			if len(seen) == 0 || seen[len(seen)-1] != cond.Type {
				seen = append(seen, cond.Type)
			}
		}
		if capacityIs("2Gi")(c) {
			break
		}
	}
	if want := []corev1.PersistentVolumeClaimConditionType{corev1.PersistentVolumeClaimResizing, corev1.PersistentVolumeClaimFileSystemResizePending}; !slices.Equal(seen, want) {
		t.Errorf("the claim went through conditions %v, want %v", seen, want)
	}
	after := waitPod(t, ns, "user", "ready", isReady)
	if after.UID != before.UID || after.Status.ContainerStatuses[0].RestartCount != 0 {
		t.Errorf("the pod was touched by the expansion: uid %s (was %s), restarts %d", after.UID, before.UID, after.Status.ContainerStatuses[0].RestartCount)
	}

	deletePod(t, ns, "user")
	waitGone(t, ns, "user")
	setRequest("3Gi")
	pending := waitClaim("waiting for the node", func(c *corev1.PersistentVolumeClaim) bool {
		return hasClaimCondition(c, corev1.PersistentVolumeClaimFileSystemResizePending)
	})
	if q := volumeCapacity(); !q.Equal(resource.MustParse("3Gi")) {
		t.Errorf("volume capacity %s while the node's part waits, want 3Gi", q.String())
	}
	if !capacityIs("2Gi")(pending) {
		t.Errorf("claim capacity %v before any pod mounted the volume, want 2Gi", pending.Status.Capacity)
	}
	if s := pending.Status.AllocatedResourceStatuses[corev1.ResourceStorage]; s != corev1.PersistentVolumeClaimNodeResizePending {
		t.Errorf("resize status %q while the node's part waits, want %q", s, corev1.PersistentVolumeClaimNodeResizePending)
	}
	createPod(t, withClaim())
	waitPod(t, ns, "user", "ready", isReady)
	done = waitClaim("at 3Gi once mounted", capacityIs("3Gi"))
	if resizing(done) {
		t.Errorf("finished expansion left conditions %v", done.Status.Conditions)
	}
}

func isResizeCondition(typ corev1.PersistentVolumeClaimConditionType) bool {
	return typ == corev1.PersistentVolumeClaimResizing || typ == corev1.PersistentVolumeClaimFileSystemResizePending
}

func resizing(c *corev1.PersistentVolumeClaim) bool {
	return slices.ContainsFunc(c.Status.Conditions, func(cond corev1.PersistentVolumeClaimCondition) bool { return isResizeCondition(cond.Type) })
}
