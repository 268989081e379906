package localkube

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	provisioncontroller "sigs.k8s.io/sig-storage-lib-external-provisioner/v13/controller"
)

// A pod's claimed directory outlives the pod: the same pod recreated reads
// what its predecessor wrote, and the directory goes only with the claim.
func TestClaimedDirectoryOutlivesThePod(t *testing.T) {
	t.Parallel()
	ns := newNamespace(t)
	pvc := &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: "data", Namespace: ns},
		Spec: corev1.PersistentVolumeClaimSpec{
			AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			Resources:   corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}},
		},
	}
	if _, err := testCS.CoreV1().PersistentVolumeClaims(ns).Create(testCtx, pvc, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	withClaim := func() *corev1.Pod {
		pod := sleepPod(ns, "writer")
		pod.Spec.Volumes = []corev1.Volume{{Name: "data", VolumeSource: corev1.VolumeSource{
			PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "data"}}}}
		pod.Spec.Containers[0].VolumeMounts = []corev1.VolumeMount{{Name: "data", MountPath: "/data"}}
		return pod
	}
	createPod(t, withClaim())
	first := waitPod(t, ns, "writer", "ready", isReady)

	got, err := testCS.CoreV1().PersistentVolumeClaims(ns).Get(testCtx, "data", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got.Status.Phase != corev1.ClaimBound {
		t.Fatalf("claim is %s with its pod running, want Bound", got.Status.Phase)
	}
	if sc := got.Spec.StorageClassName; sc == nil || *sc != StorageClassName {
		t.Errorf("claim got StorageClass %v, want the default %s", sc, StorageClassName)
	}
	if n := got.Annotations["volume.kubernetes.io/selected-node"]; n != first.Spec.NodeName {
		t.Errorf("selected-node annotation %q, pod runs on %q", n, first.Spec.NodeName)
	}
	pvName := got.Spec.VolumeName
	pv, err := testCS.CoreV1().PersistentVolumes().Get(testCtx, pvName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	volDir := pv.Spec.Local.Path

	marker, err := testRT.HostPath(ns, "writer", "/data/marker")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(marker, []byte("written by the first pod"), 0o644); err != nil {
		t.Fatal(err)
	}
	deletePod(t, ns, "writer")
	waitGone(t, ns, "writer")
	if b, err := os.ReadFile(filepath.Join(volDir, "marker")); err != nil || string(b) != "written by the first pod" {
		t.Fatalf("volume after its pod was deleted: %q, %v", b, err)
	}

	createPod(t, withClaim())
	second := waitPod(t, ns, "writer", "ready", isReady)
	if second.UID == first.UID {
		t.Fatal("the pod was not recreated")
	}
	if second.Spec.NodeName != first.Spec.NodeName {
		t.Errorf("recreated pod on %s, its volume is on %s", second.Spec.NodeName, first.Spec.NodeName)
	}
	again, err := testRT.HostPath(ns, "writer", "/data/marker")
	if err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(again); err != nil || string(b) != "written by the first pod" {
		t.Errorf("recreated pod reads %q, %v; want the first pod's file", b, err)
	}

	deletePod(t, ns, "writer")
	waitGone(t, ns, "writer")
	if err := testCS.CoreV1().PersistentVolumeClaims(ns).Delete(testCtx, "data", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, testTimeout, func() (bool, string) {
		_, err := testCS.CoreV1().PersistentVolumes().Get(testCtx, pvName, metav1.GetOptions{})
		return apierrors.IsNotFound(err), "the released volume was not deleted"
	})
	if _, err := os.Stat(volDir); !os.IsNotExist(err) {
		t.Errorf("the deleted volume's directory is still there: %v", err)
	}
}

// A second pod on the same claim waits until the first one's processes are
// gone: one data directory, one writer.
func TestClaimedDirectoryHasOneHolder(t *testing.T) {
	root := t.TempDir()
	w1, w2 := &podWorker{ns: "a", name: "one"}, &podWorker{ns: "a", name: "two"}
	r := &Runtime{volumeHolders: map[string]*podWorker{}}
	dir := filepath.Join(root, "pv")
	if err := r.holdVolume(dir, w1); err != nil {
		t.Fatal(err)
	}
	if err := r.holdVolume(dir, w1); err != nil {
		t.Errorf("the holder mounting again: %v", err)
	}
	if err := r.holdVolume(dir, w2); err == nil {
		t.Error("a second pod got a volume another pod holds")
	}
	r.releaseVolumes(w1)
	if err := r.holdVolume(dir, w2); err != nil {
		t.Errorf("after the first pod was cleaned up: %v", err)
	}
}

func TestProvisionerDeletesOnlyItsOwnDirectories(t *testing.T) {
	root := t.TempDir()
	p := dirProvisioner{root: root}
	outside := t.TempDir()
	cases := []struct {
		name    string
		path    string
		ignored bool
	}{
		{"its own", filepath.Join(root, "pvc-1"), false},
		{"another name", filepath.Join(root, "pvc-2"), true},
		{"outside its root", filepath.Join(outside, "pvc-1"), true},
		{"the root itself", root, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if err := os.MkdirAll(tc.path, 0o755); err != nil {
				t.Fatal(err)
			}
			pv := &corev1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: "pvc-1"},
				Spec: corev1.PersistentVolumeSpec{PersistentVolumeSource: corev1.PersistentVolumeSource{Local: &corev1.LocalVolumeSource{Path: tc.path}}}}
			err := p.Delete(context.Background(), pv)
			_, ignored := err.(*provisioncontroller.IgnoredError)
			_, statErr := os.Stat(tc.path)
			if ignored != tc.ignored || (tc.ignored && statErr != nil) || (!tc.ignored && !os.IsNotExist(statErr)) {
				t.Errorf("Delete(%s) = %v, directory stat %v; want ignored=%v", tc.path, err, statErr, tc.ignored)
			}
		})
	}
}

func TestProvisionNeedsASelectedNode(t *testing.T) {
	p := dirProvisioner{root: t.TempDir()}
	pvc := &corev1.PersistentVolumeClaim{Spec: corev1.PersistentVolumeClaimSpec{
		Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("2Gi")}}}}
	if _, _, err := p.Provision(context.Background(), provisioncontroller.ProvisionOptions{PVName: "pvc-x", PVC: pvc}); err == nil {
		t.Error("provisioned without a selected node")
	}
	pv, _, err := p.Provision(context.Background(), provisioncontroller.ProvisionOptions{PVName: "pvc-x", PVC: pvc, SelectedNodeName: "local-node-1"})
	if err != nil {
		t.Fatal(err)
	}
	term := pv.Spec.NodeAffinity.Required.NodeSelectorTerms[0].MatchExpressions[0]
	if term.Key != corev1.LabelHostname || len(term.Values) != 1 || term.Values[0] != "local-node-1" {
		t.Errorf("volume pinned to %v, want local-node-1", term)
	}
	if q := pv.Spec.Capacity[corev1.ResourceStorage]; q.String() != "2Gi" {
		t.Errorf("capacity %s, want the claim's 2Gi", q.String())
	}
	if st, err := os.Stat(pv.Spec.Local.Path); err != nil || !st.IsDir() {
		t.Errorf("no directory at %s: %v", pv.Spec.Local.Path, err)
	}
}
