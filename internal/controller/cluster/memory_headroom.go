package cluster

import (
	valkeyv1 "github.com/gomomento/valkey-operator/api/v1alpha1"
	"github.com/gomomento/valkey-operator/internal/controller/clusterstatus"
	"github.com/gomomento/valkey-operator/internal/render"
	"github.com/gomomento/valkey-operator/internal/resolve"
)

// applyMemoryHeadroomCondition reports what the resolved chain's memory
// settings leave outside maxmemory; render.MemoryHeadroom decides.
func applyMemoryHeadroomCondition(vc *valkeyv1.ValkeyCluster, res *resolve.Result) {
	h := render.MemoryHeadroom(res.Valkey, res.Memory)
	clusterstatus.SetCondition(vc, valkeyv1.CondMemoryHeadroom, h.Status, h.Reason, h.Message)
}
