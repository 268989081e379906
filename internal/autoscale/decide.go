package autoscale

import (
	"fmt"
	"sort"
	"strconv"
	"time"
)

// Direction of a decision.
type Direction string

const (
	Hold     Direction = ""
	ScaleOut Direction = "ScaleOut"
	ScaleIn  Direction = "ScaleIn"
)

// Why the autoscaler holds, for status and docs; a decision to scale has
// the reason of its direction.
const (
	ReasonNotConverged     = "NotConverged"
	ReasonCooldown         = "Cooldown"
	ReasonAtMaxShards      = "AtMaxShards"
	ReasonAtMinShards      = "AtMinShards"
	ReasonWithinThresholds = "WithinThresholds"
	ReasonWindowIncomplete = "WindowIncomplete"
	ReasonNoScaleIn        = "ScaleInDisabled"
	ReasonHeadroom         = "InsufficientHeadroom"
)

// Thresholds are a direction's triggers; nil is off.
type Thresholds struct {
	MemoryPercent *float64
	CPUPercent    *float64
	BandwidthMbps *float64
}

// Policy is spec.autoscaling in durations.
type Policy struct {
	MinShards, MaxShards int
	ScaleOut             Thresholds
	// ScaleIn nil: never scale in.
	ScaleIn     *Thresholds
	Window      time.Duration
	OutCooldown time.Duration
	InCooldown  time.Duration
}

// Node is one member as the decision sees it.
type Node struct {
	Name    string
	Primary bool
	// Samples, oldest first.
	Samples []Sample
	// MemoryDenominatorBytes is maxmemory or the memory limit; 0 if neither.
	MemoryDenominatorBytes int64
}

// Input is everything Decide looks at.
type Input struct {
	Policy Policy
	// Current is the shard count the autoscaler last chose.
	Current int
	// Converged: state Active, no node joining or leaving, no slot
	// migration in flight, and the observed shard count is Current.
	Converged bool
	// NotConvergedWhy says what convergence still waits for, for the hold
	// message; empty when Converged.
	NotConvergedWhy string
	// ConvergedSince is when the cluster last became converged. Samples
	// taken before it describe the old layout (a primary still holding the
	// slots a scale-out is moving away) and never trigger a scale-out.
	ConvergedSince time.Time
	// LastScaleOut and LastScaleIn are the times of the last decisions in
	// each direction; zero if never.
	LastScaleOut, LastScaleIn time.Time
	Nodes                     []Node
	Now                       time.Time
	// HeadroomFraction is how full the remaining primaries may be after a
	// scale-in; 0 means defaultHeadroom.
	HeadroomFraction float64
}

// defaultHeadroom: after a scale-in the remaining primaries hold at most
// 80% of their memory between them.
const defaultHeadroom = 0.8

// Decision is what the autoscaler does this pass.
type Decision struct {
	Direction Direction
	From, To  int
	// Reason is Hold's Reason* constant or the direction.
	Reason string
	// Message is one sentence; for a scale it is the Event's message, for
	// example "1 -> 2 shards: node my-cluster-a1b2c memory 84.2% >= 80%".
	Message string
}

// Scales reports whether the decision changes the shard count.
func (d Decision) Scales() bool { return d.Direction != Hold }

func hold(in Input, reason, format string, args ...any) Decision {
	return Decision{From: in.Current, To: in.Current, Reason: reason, Message: fmt.Sprintf(format, args...)}
}

func scale(in Input, dir Direction, to int, why string) Decision {
	return Decision{Direction: dir, From: in.Current, To: to, Reason: string(dir),
		Message: fmt.Sprintf("%d -> %d shards: %s", in.Current, to, why)}
}

// Decide applies the rules in order: bounds, convergence, scale-out, then
// scale-in. Comparisons are >= for scale-out and < for scale-in, the same in
// the decision and its message.
func Decide(in Input) Decision {
	p := in.Policy
	switch {
	case in.Current > p.MaxShards:
		return scale(in, ScaleIn, p.MaxShards, fmt.Sprintf("maxShards is %d", p.MaxShards))
	case in.Current < p.MinShards:
		return scale(in, ScaleOut, p.MinShards, fmt.Sprintf("minShards is %d", p.MinShards))
	}
	if !in.Converged {
		why := in.NotConvergedWhy
		if why == "" {
			why = "the cluster has not converged"
		}
		return hold(in, ReasonNotConverged, "waiting for the cluster to converge before deciding: %s", why)
	}
	nodes := append([]Node(nil), in.Nodes...)
	sort.Slice(nodes, func(i, j int) bool { return nodes[i].Name < nodes[j].Name })

	if why, ok := outTrigger(nodes, p.ScaleOut, in.ConvergedSince); ok {
		if in.Current >= p.MaxShards {
			return hold(in, ReasonAtMaxShards, "%s, but the cluster is at maxShards %d", why, p.MaxShards)
		}
		if left := cooldownLeft(in.Now, p.OutCooldown, in.LastScaleOut); left > 0 {
			return hold(in, ReasonCooldown, "%s; scale-out cooldown has %s left", why, left.Round(time.Second))
		}
		return scale(in, ScaleOut, in.Current+1, why)
	}

	if p.ScaleIn == nil {
		return hold(in, ReasonNoScaleIn, "no scale-out threshold reached; scaleIn is not configured")
	}
	if in.Current <= p.MinShards {
		return hold(in, ReasonAtMinShards, "no scale-out threshold reached; the cluster is at minShards %d", p.MinShards)
	}
	why, reason, ok := inTrigger(nodes, *p.ScaleIn, in.Now, p.Window)
	if !ok {
		return hold(in, reason, "%s", why)
	}
	last := in.LastScaleIn
	if in.LastScaleOut.After(last) {
		last = in.LastScaleOut
	}
	if left := cooldownLeft(in.Now, p.InCooldown, last); left > 0 {
		return hold(in, ReasonCooldown, "%s; scale-in cooldown has %s left", why, left.Round(time.Second))
	}
	frac := in.HeadroomFraction
	if frac <= 0 {
		frac = defaultHeadroom
	}
	if ok, msg := headroom(primaries(nodes), frac); !ok {
		return hold(in, ReasonHeadroom, "%s", msg)
	}
	return scale(in, ScaleIn, in.Current-1, why)
}

func cooldownLeft(now time.Time, cooldown time.Duration, last time.Time) time.Duration {
	if last.IsZero() {
		return 0
	}
	return last.Add(cooldown).Sub(now)
}

func primaries(nodes []Node) []Node {
	var out []Node
	for _, n := range nodes {
		if n.Primary {
			out = append(out, n)
		}
	}
	return out
}

// metric is one threshold kind: how to read it and how to print it.
type metric struct {
	name  string
	unit  string
	value func(Sample) *float64
	limit func(Thresholds) *float64
}

var metrics = []metric{
	{"memory", "%", func(s Sample) *float64 { return s.MemoryPercent }, func(t Thresholds) *float64 { return t.MemoryPercent }},
	{"cpu", "%", func(s Sample) *float64 { return s.CPUPercent }, func(t Thresholds) *float64 { return t.CPUPercent }},
	{"bandwidth", " Mbps", func(s Sample) *float64 { return s.BandwidthMbps }, func(t Thresholds) *float64 { return t.BandwidthMbps }},
}

func (m metric) format(v float64) string { return strconv.FormatFloat(v, 'f', 1, 64) + m.unit }
func (m metric) formatLimit(v float64) string {
	return strconv.FormatFloat(v, 'f', -1, 64) + m.unit
}

// outTrigger finds the first primary whose latest sample (taken since the
// cluster converged) reaches a scale-out threshold.
func outTrigger(nodes []Node, t Thresholds, since time.Time) (string, bool) {
	for _, n := range nodes {
		if !n.Primary || len(n.Samples) == 0 {
			continue
		}
		s := n.Samples[len(n.Samples)-1]
		if s.Time.Before(since) {
			continue
		}
		for _, m := range metrics {
			limit, v := m.limit(t), m.value(s)
			if limit == nil || v == nil {
				continue
			}
			if *v >= *limit {
				return fmt.Sprintf("node %s %s %s >= %s", n.Name, m.name, m.format(*v), m.formatLimit(*limit)), true
			}
		}
	}
	return "", false
}

// inTrigger checks that every node's peak over the window is below every
// scale-in threshold. A node whose history does not span the window, or
// that has no figure for a configured threshold in it, blocks.
func inTrigger(nodes []Node, t Thresholds, now time.Time, window time.Duration) (why, reason string, ok bool) {
	start := now.Add(-window)
	var closest string
	closestRatio := -1.0
	for _, n := range nodes {
		if len(n.Samples) == 0 || n.Samples[0].Time.After(start) {
			return fmt.Sprintf("node %s has not been sampled for a whole %s window", n.Name, window), ReasonWindowIncomplete, false
		}
		for _, m := range metrics {
			limit := m.limit(t)
			if limit == nil {
				continue
			}
			peak, seen := 0.0, false
			for _, s := range n.Samples {
				if s.Time.Before(start) {
					continue
				}
				if v := m.value(s); v != nil {
					seen = true
					if *v > peak {
						peak = *v
					}
				}
			}
			if !seen {
				return fmt.Sprintf("node %s has no %s figure in the last %s", n.Name, m.name, window), ReasonWindowIncomplete, false
			}
			if peak >= *limit {
				return fmt.Sprintf("node %s %s peaked at %s over the last %s, not below %s", n.Name, m.name, m.format(peak), window, m.formatLimit(*limit)),
					ReasonWithinThresholds, false
			}
			if r := ratio(peak, *limit); r > closestRatio {
				closestRatio = r
				closest = fmt.Sprintf("node %s %s %s < %s", n.Name, m.name, m.format(peak), m.formatLimit(*limit))
			}
		}
	}
	if closest == "" {
		return "no scale-in threshold is configured", ReasonNoScaleIn, false
	}
	return fmt.Sprintf("every node's peak over %s is below the scale-in thresholds (highest: %s)", window, closest), string(ScaleIn), true
}

func ratio(v, limit float64) float64 {
	if limit == 0 {
		return 0
	}
	return v / limit
}

// headroom checks that the primaries left after removing one could take
// every key: their combined used memory (the latest samples) must fit
// within frac of their combined memory, the largest primary's memory
// discounted since which shard the planner empties is not known here.
func headroom(primaries []Node, frac float64) (bool, string) {
	if len(primaries) < 2 {
		return false, fmt.Sprintf("scale-in refused: %d primary, none would remain", len(primaries))
	}
	var used, total, largest int64
	for _, n := range primaries {
		if n.MemoryDenominatorBytes <= 0 {
			return false, fmt.Sprintf("scale-in refused: node %s has neither maxmemory nor a memory limit, so the memory the remaining primaries would need cannot be checked", n.Name)
		}
		if len(n.Samples) == 0 {
			return false, fmt.Sprintf("scale-in refused: node %s has no memory sample", n.Name)
		}
		used += n.Samples[len(n.Samples)-1].UsedMemoryBytes
		total += n.MemoryDenominatorBytes
		largest = max(largest, n.MemoryDenominatorBytes)
	}
	remaining := total - largest
	if float64(used) > frac*float64(remaining) {
		return false, fmt.Sprintf("scale-in refused: the %s would hold %s of %s (%.1f%%), above the %.0f%% headroom limit",
			remainingPrimaries(len(primaries)-1), mib(used), mib(remaining), 100*float64(used)/float64(remaining), 100*frac)
	}
	return true, fmt.Sprintf("the %s would hold %s of %s (%.1f%%)",
		remainingPrimaries(len(primaries)-1), mib(used), mib(remaining), 100*float64(used)/float64(remaining))
}

func mib(b int64) string { return fmt.Sprintf("%.1f MiB", float64(b)/(1<<20)) }

func remainingPrimaries(n int) string {
	if n == 1 {
		return "1 remaining primary"
	}
	return fmt.Sprintf("%d remaining primaries", n)
}
