package topology

import "fmt"

// scaleInHeadroomPercent is how full the remaining primaries may be after a
// scale-in, in percent of their maxmemory. Beyond it a cache starts
// evicting (or refusing writes), so shrinking would drop acknowledged data.
const scaleInHeadroomPercent = 90

// scaleInHeadroom holds a scale-in whose remaining primaries could not hold
// the data of the shards being drained: their used memory plus the drained
// shards' dataset would pass scaleInHeadroomPercent of their maxmemory. It
// is an estimate (slots are spread evenly, bytes need not be), checked
// before every wave so a cache that grows mid-way stops moving, with every
// slot still served. A remaining primary without maxmemory has no limit to
// compare with, and the check does not apply.
func scaleInHeadroom(primaries map[int]*node, targets map[int]int) *Action {
	var need, limit, drained int64
	draining, staying := 0, 0
	for idx, p := range primaries {
		m := p.View.Memory
		if targets[idx] == 0 {
			if p.selfSlots() > 0 {
				draining++
				drained += m.Dataset
			}
			continue
		}
		if m.Max <= 0 {
			return nil
		}
		staying++
		need += m.Used
		limit += m.Max
	}
	need += drained
	if draining == 0 || limit == 0 || need*100 <= limit*scaleInHeadroomPercent {
		return nil
	}
	a := waitOn(TierTopology, CauseScaleInNoHeadroom, ReasonScaleInNoHeadroom, fmt.Sprintf(
		"the %d remaining primaries would hold %s (%s of their own and %s from %d drained shards) against %s of maxmemory, %d%%; the limit is %d%%",
		staying, mib(need), mib(need-drained), mib(drained), draining, mib(limit), need*100/limit, scaleInHeadroomPercent))
	return &a
}

func mib(b int64) string { return fmt.Sprintf("%.1f MiB", float64(b)/(1<<20)) }
