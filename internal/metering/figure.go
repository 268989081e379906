package metering

import (
	"strings"

	"k8s.io/apimachinery/pkg/api/resource"

	valkeyv1 "github.com/gomomento/valkey-operator/api/v1alpha1"
	"github.com/gomomento/valkey-operator/internal/valkey"
)

// floorBytes is the least a node is billed at: 100 MB (10^8 bytes).
const floorBytes int64 = 100 * 1000 * 1000

// Node is what the meter needs of one node.
type Node struct {
	// Memory is the container memory (resources.memory), "" without one.
	Memory string
	// MaxMemory is the node's maxmemory setting, "" when unset.
	MaxMemory string
	// PeakUsedBytes is the highest used memory observed, 0 before any
	// measurement.
	PeakUsedBytes int64
}

// NodeFromSpec reads a ValkeyNode.
func NodeFromSpec(n *valkeyv1.ValkeyNode) Node {
	out := Node{Memory: n.Spec.Memory}
	for k, v := range n.Spec.ValkeySettings {
		if strings.EqualFold(k, "maxmemory") {
			out.MaxMemory = v
		}
	}
	if u := n.Status.Utilisation; u != nil {
		out.PeakUsedBytes = u.PeakUsedMemoryBytes
		for _, s := range u.Samples {
			out.PeakUsedBytes = max(out.PeakUsedBytes, s.UsedMemoryBytes)
		}
	}
	return out
}

// Figure is the memory a node is billed at and the source that decided it,
// the first that applies: the container memory (Reserved); else maxmemory
// (MaxMemory); else the peak used memory observed (Observed); raised to the
// floor when under it or when nothing was measured yet (Floor). A value
// that does not parse counts as unset, so a typo cannot bill zero.
func Figure(n Node) (int64, valkeyv1.MeteringSource) {
	bytes, source := int64(0), valkeyv1.MeteringSourceFloor
	switch {
	case quantity(n.Memory) > 0:
		bytes, source = quantity(n.Memory), valkeyv1.MeteringSourceReserved
	case maxmemory(n.MaxMemory) > 0:
		bytes, source = maxmemory(n.MaxMemory), valkeyv1.MeteringSourceMaxMemory
	case n.PeakUsedBytes > 0:
		bytes, source = n.PeakUsedBytes, valkeyv1.MeteringSourceObserved
	}
	if bytes < floorBytes {
		return floorBytes, valkeyv1.MeteringSourceFloor
	}
	return bytes, source
}

func quantity(s string) int64 {
	if s == "" {
		return 0
	}
	q, err := resource.ParseQuantity(s)
	if err != nil {
		return 0
	}
	return q.Value()
}

func maxmemory(s string) int64 {
	if s == "" {
		return 0
	}
	v, err := valkey.ParseMemory(s)
	if err != nil {
		return 0
	}
	return v
}
