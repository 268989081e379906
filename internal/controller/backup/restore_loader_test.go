package backup

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	valkeyv1 "github.com/gomomento/valkey-operator/api/v1alpha1"
)

// Only a pod the cluster controls, named as a loader and without the
// nodes' instance label, is taken for a loader and deleted: a node's pod
// given the restore label by hand is not.
func TestIsLoader(t *testing.T) {
	vc := &valkeyv1.ValkeyCluster{ObjectMeta: metav1.ObjectMeta{Name: "cache", UID: "cluster-uid"}}
	pod := func(name string) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name,
			OwnerReferences: []metav1.OwnerReference{{UID: "x", Controller: ptr.To(true)}}}}
	}
	loader := pod("cache-restore-2")
	loader.OwnerReferences[0].UID = vc.UID
	for _, tc := range []struct {
		name string
		pod  *corev1.Pod
		want bool
	}{
		{"a loader", loader, true},
		{"another owner", pod("cache-restore-2"), false},
		{"a node's pod", func() *corev1.Pod { p := loader.DeepCopy(); p.Name = "cache-a1b2c"; return p }(), false},
		{"the instance label", func() *corev1.Pod {
			p := loader.DeepCopy()
			p.Labels = map[string]string{valkeyv1.LabelInstance: "cache"}
			return p
		}(), false},
		{"a name that only starts like one", func() *corev1.Pod { p := loader.DeepCopy(); p.Name = "cache-restore-2x"; return p }(), false},
	} {
		if got := isLoader(tc.pod, vc); got != tc.want {
			t.Errorf("%s: isLoader = %v, want %v", tc.name, got, tc.want)
		}
	}
}
