package cluster

import (
	"github.com/gomomento/valkey-operator/internal/render"
	"github.com/gomomento/valkey-operator/internal/resolve"
)

// memoryHeadroomCondition is what the resolved chain's memory settings
// leave outside maxmemory; render.MemoryHeadroom decides.
func memoryHeadroomCondition(res *resolve.Result) *cond {
	h := render.MemoryHeadroom(res.Valkey, res.Memory)
	return &cond{h.Status, h.Reason, h.Message}
}
