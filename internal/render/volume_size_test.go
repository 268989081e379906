package render

import (
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/gomomento/valkey-operator/api/v1alpha1"
)

func TestSizeVolumes(t *testing.T) {
	persistence := func(size, class string, mode v1alpha1.AppendFsync) *v1alpha1.NodePersistence {
		return &v1alpha1.NodePersistence{Size: resource.MustParse(size), StorageClassName: class, Appendfsync: mode}
	}
	desired := func(size string) *v1alpha1.NodePersistence { return persistence(size, "", v1alpha1.AppendFsyncAlways) }
	claim := func(node, class, request, capacity string) *corev1.PersistentVolumeClaim {
		c := &corev1.PersistentVolumeClaim{
			ObjectMeta: metav1.ObjectMeta{Name: NodeClaimName(node)},
			Spec: corev1.PersistentVolumeClaimSpec{
				StorageClassName: ptr.To(class),
				Resources:        corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse(request)}},
			},
		}
		if capacity != "" {
			c.Status.Phase = corev1.ClaimBound
			c.Status.Capacity = corev1.ResourceList{corev1.ResourceStorage: resource.MustParse(capacity)}
		}
		return c
	}
	vol := func(node, size, request, capacity string) NodeVolume {
		return NodeVolume{Node: node, Spec: desired(size), Claim: claim(node, "local", request, capacity)}
	}
	expandable := map[string]*storagev1.StorageClass{"local": {AllowVolumeExpansion: ptr.To(true)}}
	fixed := map[string]*storagev1.StorageClass{"local": {}}
	tests := []struct {
		name      string
		desired   *v1alpha1.NodePersistence
		vols      []NodeVolume
		classes   map[string]*storagev1.StorageClass
		expand    []string
		newSize   string
		status    metav1.ConditionStatus
		reason    string
		message   []string
		checkless bool
	}{
		{name: "at size", desired: desired("1Gi"), vols: []NodeVolume{vol("a", "1Gi", "1Gi", "1Gi"), vol("b", "1Gi", "1Gi", "1Gi")},
			newSize: "1Gi", status: metav1.ConditionTrue, reason: v1alpha1.ReasonVolumesAtSize, message: []string{"2 volumes of 1Gi"}, checkless: true},
		{name: "grown: every node's size raised", desired: desired("2Gi"), vols: []NodeVolume{vol("a", "1Gi", "1Gi", "1Gi"), vol("b", "1Gi", "1Gi", "1Gi")},
			classes: expandable, expand: []string{"a", "b"}, newSize: "2Gi",
			status: metav1.ConditionFalse, reason: v1alpha1.ReasonVolumesExpanding, message: []string{"expanding 2 of 2 volumes to 2Gi: a-data, b-data"}},
		{name: "one claim still expanding", desired: desired("2Gi"), vols: []NodeVolume{vol("a", "2Gi", "2Gi", "2Gi"), vol("b", "2Gi", "2Gi", "1Gi")},
			newSize: "2Gi", status: metav1.ConditionFalse, reason: v1alpha1.ReasonVolumesExpanding, message: []string{"expanding 1 of 2 volumes to 2Gi: b-data"}, checkless: true},
		{name: "a capacity rounded up counts as reached", desired: desired("2Gi"), vols: []NodeVolume{vol("a", "2Gi", "2Gi", "3Gi")},
			newSize: "2Gi", status: metav1.ConditionTrue, reason: v1alpha1.ReasonVolumesAtSize, checkless: true},
		{name: "shrink refused", desired: desired("1Gi"), vols: []NodeVolume{vol("a", "2Gi", "2Gi", "2Gi")},
			newSize: "2Gi", status: metav1.ConditionFalse, reason: v1alpha1.ReasonVolumeShrinkRefused,
			message: []string{"persistence.size 1Gi is smaller than the 2Gi", "a volume cannot shrink", "set persistence.size to 2Gi or more"}, checkless: true},
		{name: "a claim expanded by hand is not shrunk", desired: desired("2Gi"), vols: []NodeVolume{vol("a", "2Gi", "5Gi", "5Gi")},
			newSize: "5Gi", status: metav1.ConditionFalse, reason: v1alpha1.ReasonVolumeShrinkRefused, message: []string{"than the 5Gi"}, checkless: true},
		{name: "class without expansion", desired: desired("2Gi"), vols: []NodeVolume{vol("a", "1Gi", "1Gi", "1Gi")}, classes: fixed,
			newSize: "1Gi", status: metav1.ConditionFalse, reason: v1alpha1.ReasonVolumeExpansionNotAllowed,
			message: []string{`StorageClass "local" does not allow volume expansion`, "stay at 1Gi", "nothing is rolled"}},
		{name: "class gone", desired: desired("2Gi"), vols: []NodeVolume{vol("a", "1Gi", "1Gi", "1Gi")}, classes: map[string]*storagev1.StorageClass{},
			newSize: "1Gi", status: metav1.ConditionFalse, reason: v1alpha1.ReasonVolumeExpansionNotAllowed, message: []string{`StorageClass "local" is not found`}},
		{name: "a claim not created yet grows with its node", desired: desired("2Gi"), vols: []NodeVolume{{Node: "a", Spec: desired("1Gi")}},
			expand: []string{"a"}, newSize: "2Gi", status: metav1.ConditionTrue, reason: v1alpha1.ReasonVolumesAtSize, checkless: true},
		{name: "an unbound claim is not counted as expanding", desired: desired("2Gi"), vols: []NodeVolume{vol("a", "2Gi", "1Gi", "")},
			newSize: "2Gi", status: metav1.ConditionTrue, reason: v1alpha1.ReasonVolumesAtSize, checkless: true},
		{name: "a node whose class changes is rolled, not sized", desired: desired("2Gi"),
			vols:    []NodeVolume{{Node: "a", Spec: persistence("5Gi", "other", v1alpha1.AppendFsyncAlways), Claim: claim("a", "other", "5Gi", "5Gi")}},
			newSize: "2Gi", status: metav1.ConditionTrue, reason: v1alpha1.ReasonVolumesAtSize, message: []string{"0 volumes"}, checkless: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := SizeVolumes(tt.desired, tt.vols, tt.classes)
			if !slices.Equal(got.Expand, tt.expand) {
				t.Errorf("expand %v, want %v", got.Expand, tt.expand)
			}
			if want := resource.MustParse(tt.newSize); !got.NewNodeSize.Equal(want) {
				t.Errorf("new nodes get %s, want %s", got.NewNodeSize.String(), tt.newSize)
			}
			if got.Status != tt.status || got.Reason != tt.reason {
				t.Errorf("condition %s/%s (%s), want %s/%s", got.Status, got.Reason, got.Message, tt.status, tt.reason)
			}
			for _, m := range tt.message {
				if !strings.Contains(got.Message, m) {
					t.Errorf("message %q lacks %q", got.Message, m)
				}
			}
			if classes := ExpansionClasses(tt.desired, tt.vols); tt.checkless != (len(classes) == 0) {
				t.Errorf("classes to check %v; want some: %v", classes, !tt.checkless)
			}
		})
	}
}
