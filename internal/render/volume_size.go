package render

import (
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gomomento/valkey-operator/api/v1alpha1"
)

// NodeVolume is one persistent node with its claim, nil until the node
// controller has created it.
type NodeVolume struct {
	Node  string
	Spec  *v1alpha1.NodePersistence
	Claim *corev1.PersistentVolumeClaim
}

// VolumeSizing is what the cluster does about persistence.size: the nodes
// whose recorded size is raised (their node controller then patches the
// claim), the size new nodes get, and the VolumeSize condition.
type VolumeSizing struct {
	Expand []string
	// NewNodeSize is the size a node created now gets: the config's, or,
	// while the config's cannot be applied, the size the volumes have, so
	// that a replacement or a new shard matches its peers.
	NewNodeSize resource.Quantity
	Status      metav1.ConditionStatus
	Reason      string
	Message     string
}

// ExpansionClasses are the StorageClasses whose allowVolumeExpansion the
// sizing needs: those of the existing claims that are smaller than desired.
func ExpansionClasses(desired *v1alpha1.NodePersistence, vols []NodeVolume) []string {
	var out []string
	for _, v := range sizedLike(desired, vols) {
		if s := currentSize(v); v.Claim != nil && s.Cmp(desired.Size) < 0 {
			out = append(out, claimClass(v.Claim))
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// SizeVolumes decides how the nodes' volumes follow the config's size.
// Only nodes that keep their claim count: a node whose class or write mode
// differs is being replaced by a roll and gets a new claim of the new size.
// A volume never shrinks, and it grows only where its StorageClass allows
// expansion (classes holds those ExpansionClasses named, nil when gone);
// otherwise nothing grows, nothing rolls, and the condition says why until
// the input is fixed.
func SizeVolumes(desired *v1alpha1.NodePersistence, vols []NodeVolume, classes map[string]*storagev1.StorageClass) VolumeSizing {
	want := desired.Size
	kept := sizedLike(desired, vols)
	largest := want.DeepCopy()
	for _, v := range kept {
		if s := currentSize(v); s.Cmp(largest) > 0 {
			largest = s
		}
	}
	if largest.Cmp(want) > 0 {
		return VolumeSizing{NewNodeSize: largest, Status: metav1.ConditionFalse, Reason: v1alpha1.ReasonVolumeShrinkRefused,
			Message: shrinkRefusedMessage(want, largest)}
	}
	var grow []string
	for _, v := range kept {
		if s := currentSize(v); s.Cmp(want) >= 0 {
			continue
		}
		if v.Claim != nil {
			if why := expansionRefused(claimClass(v.Claim), classes); why != "" {
				return VolumeSizing{NewNodeSize: smallest(kept), Status: metav1.ConditionFalse,
					Reason: v1alpha1.ReasonVolumeExpansionNotAllowed, Message: expansionRefusedMessage(why, want, smallest(kept))}
			}
		}
		grow = append(grow, v.Node)
	}
	var expanding []string
	for _, v := range kept {
		if v.Claim == nil || v.Claim.Status.Phase != corev1.ClaimBound {
			continue
		}
		if c := claimCapacity(v.Claim); c.Cmp(want) < 0 {
			expanding = append(expanding, v.Claim.Name)
		}
	}
	out := VolumeSizing{Expand: grow, NewNodeSize: want.DeepCopy()}
	if len(expanding) > 0 {
		out.Status, out.Reason, out.Message = metav1.ConditionFalse, v1alpha1.ReasonVolumesExpanding, expandingMessage(expanding, len(kept), want)
		return out
	}
	out.Status, out.Reason, out.Message = metav1.ConditionTrue, v1alpha1.ReasonVolumesAtSize, atSizeMessage(len(kept), want)
	return out
}

// The VolumeSize condition's messages, here and nowhere else.

func shrinkRefusedMessage(want, have resource.Quantity) string {
	return fmt.Sprintf("persistence.size %s is smaller than the %s the nodes' volumes have: a volume cannot shrink, so every node keeps its volume and its data; set persistence.size to %s or more",
		want.String(), have.String(), have.String())
}

func expansionRefusedMessage(why string, want, have resource.Quantity) string {
	return fmt.Sprintf("cannot expand the volumes to %s: %s; they stay at %s and nothing is rolled", want.String(), why, have.String())
}

func expandingMessage(claims []string, of int, want resource.Quantity) string {
	slices.Sort(claims)
	return fmt.Sprintf("expanding %d of %d volumes to %s: %s", len(claims), of, want.String(), strings.Join(claims, ", "))
}

func atSizeMessage(n int, want resource.Quantity) string {
	return fmt.Sprintf("%d volumes of %s", n, want.String())
}

// expansionRefused says why a claim of class cannot grow, "" if it can.
func expansionRefused(class string, classes map[string]*storagev1.StorageClass) string {
	if class == "" {
		return "a claim has no StorageClass, so nothing can expand it"
	}
	sc := classes[class]
	switch {
	case sc == nil:
		return fmt.Sprintf("StorageClass %q is not found", class)
	case sc.AllowVolumeExpansion == nil || !*sc.AllowVolumeExpansion:
		return fmt.Sprintf("StorageClass %q does not allow volume expansion (allowVolumeExpansion is not true)", class)
	}
	return ""
}

// sizedLike are the volumes that stay with their nodes under desired: same
// class as recorded, same write mode.
func sizedLike(desired *v1alpha1.NodePersistence, vols []NodeVolume) []NodeVolume {
	var out []NodeVolume
	for _, v := range vols {
		if v.Spec == nil {
			continue
		}
		if _, replaced := persistenceChange(v.Spec, desired); !replaced {
			out = append(out, v)
		}
	}
	return out
}

// currentSize is what the node's volume was asked for: its recorded size,
// or its claim's request when that is larger (a claim expanded by hand).
func currentSize(v NodeVolume) resource.Quantity {
	s := v.Spec.Size.DeepCopy()
	if v.Claim != nil {
		if r, ok := v.Claim.Spec.Resources.Requests[corev1.ResourceStorage]; ok && r.Cmp(s) > 0 {
			s = r.DeepCopy()
		}
	}
	return s
}

func smallest(vols []NodeVolume) resource.Quantity {
	var out resource.Quantity
	for i, v := range vols {
		if s := currentSize(v); i == 0 || s.Cmp(out) < 0 {
			out = s
		}
	}
	return out
}

func claimCapacity(c *corev1.PersistentVolumeClaim) resource.Quantity {
	return c.Status.Capacity[corev1.ResourceStorage]
}

func claimClass(c *corev1.PersistentVolumeClaim) string {
	if c.Spec.StorageClassName == nil {
		return ""
	}
	return *c.Spec.StorageClassName
}
