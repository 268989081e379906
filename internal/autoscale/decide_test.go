package autoscale

import (
	"strings"
	"testing"
	"time"
)

func f(v float64) *float64 { return &v }

const mb = 1 << 20

// history is a node sampled every 30 s from start to t0 with the given
// memory percent at each sample (the last at t0), against 100 MiB.
func history(memory ...float64) []Sample {
	out := make([]Sample, len(memory))
	for i, m := range memory {
		at := t0.Add(-time.Duration(len(memory)-1-i) * 30 * time.Second)
		out[i] = Sample{Time: at, MemoryPercent: f(m), CPUPercent: f(5), UsedMemoryBytes: int64(m * mb)}
	}
	return out
}

func primary(name string, s []Sample) Node {
	return Node{Name: name, Primary: true, Samples: s, MemoryDenominatorBytes: 100 * mb}
}

func replica(name string, s []Sample) Node {
	return Node{Name: name, Samples: s, MemoryDenominatorBytes: 100 * mb}
}

// base is a converged two-shard cluster with one replica per shard, every
// node at 50% memory for the last 10 minutes, scale-out at 80% and
// scale-in at 30% over a 5-minute window, both cooldowns long past.
func base() Input {
	flat := func() []Sample {
		return history(50, 50, 50, 50, 50, 50, 50, 50, 50, 50, 50, 50, 50, 50, 50, 50, 50, 50, 50, 50, 50)
	}
	return Input{
		Policy: Policy{
			MinShards: 1, MaxShards: 4,
			ScaleOut:    Thresholds{MemoryPercent: f(80)},
			ScaleIn:     &Thresholds{MemoryPercent: f(30)},
			Window:      5 * time.Minute,
			OutCooldown: 3 * time.Minute,
			InCooldown:  15 * time.Minute,
		},
		Current:        2,
		Converged:      true,
		ConvergedSince: t0.Add(-time.Hour),
		LastScaleOut:   t0.Add(-2 * time.Hour),
		Nodes: []Node{
			primary("my-cluster-a1b2c", flat()), replica("my-cluster-b2c3d", flat()),
			primary("my-cluster-c3d4e", flat()), replica("my-cluster-d4e5f", flat()),
		},
		Now: t0,
	}
}

// latest sets node i's latest memory sample.
func latest(in Input, i int, memory float64) Input {
	s := in.Nodes[i].Samples
	s[len(s)-1].MemoryPercent = f(memory)
	return in
}

// low puts every node at 10% for the whole history.
func low(in Input) Input {
	for i := range in.Nodes {
		in.Nodes[i].Samples = history(10, 10, 10, 10, 10, 10, 10, 10, 10, 10, 10, 10, 10, 10, 10)
	}
	return in
}

func TestDecide(t *testing.T) {
	tests := []struct {
		name    string
		mutate  func(in Input) Input
		dir     Direction
		to      int
		reason  string
		message string // substring; the whole message when it starts with "="
	}{
		{
			name:    "steady load holds",
			mutate:  func(in Input) Input { return in },
			reason:  ReasonWithinThresholds,
			to:      2,
			message: "peaked at 50.0% over the last 5m0s, not below 30%",
		},
		{
			name: "a primary's latest sample reaching the threshold scales out by one",
			mutate: func(in Input) Input {
				in.Current = 1
				in.Nodes = []Node{primary("my-cluster-a1b2c", history(50, 60, 84.2))}
				return in
			},
			dir: ScaleOut, to: 2, reason: "ScaleOut",
			message: "=1 -> 2 shards: node my-cluster-a1b2c memory 84.2% >= 80%",
		},
		{
			name: "exactly at the threshold counts (>=)",
			mutate: func(in Input) Input {
				in.Nodes[2].Samples = history(50, 80)
				return in
			},
			dir: ScaleOut, to: 3, reason: "ScaleOut", message: "node my-cluster-c3d4e memory 80.0% >= 80%",
		},
		{
			name: "just below the threshold holds",
			mutate: func(in Input) Input {
				in.Nodes[0].Samples[0].MemoryPercent = f(90)
				return latest(in, 0, 79.9)
			},
			to: 2, reason: ReasonWithinThresholds,
		},
		{
			name: "a replica never triggers scale-out",
			mutate: func(in Input) Input {
				in.Nodes[1].Samples = history(50, 95)
				return in
			},
			to: 2, reason: ReasonWithinThresholds,
		},
		{
			name: "cpu threshold",
			mutate: func(in Input) Input {
				in.Policy.ScaleOut.CPUPercent = f(70)
				in.Nodes[0].Samples[len(in.Nodes[0].Samples)-1].CPUPercent = f(91)
				return in
			},
			dir: ScaleOut, to: 3, reason: "ScaleOut", message: "=2 -> 3 shards: node my-cluster-a1b2c cpu 91.0% >= 70%",
		},
		{
			name: "bandwidth threshold",
			mutate: func(in Input) Input {
				in.Policy.ScaleOut.BandwidthMbps = f(900)
				in.Nodes[2].Samples[len(in.Nodes[2].Samples)-1].BandwidthMbps = f(950.25)
				return in
			},
			dir: ScaleOut, to: 3, reason: "ScaleOut", message: "=2 -> 3 shards: node my-cluster-c3d4e bandwidth 950.2 Mbps >= 900 Mbps",
		},
		{
			name: "a sample taken before the cluster converged does not trigger",
			mutate: func(in Input) Input {
				in.ConvergedSince = t0.Add(time.Second)
				return latest(in, 0, 95)
			},
			to: 2, reason: ReasonWithinThresholds,
		},
		{
			name: "no decision while the cluster is not converged",
			mutate: func(in Input) Input {
				in.Nodes[0].Samples = history(50, 95)
				in.Converged = false
				return in
			},
			to: 2, reason: ReasonNotConverged,
		},
		{
			name: "scale-out is bounded by maxShards",
			mutate: func(in Input) Input {
				in.Policy.MaxShards = 2
				in.Nodes[0].Samples = history(50, 95)
				return in
			},
			to: 2, reason: ReasonAtMaxShards, message: "node my-cluster-a1b2c memory 95.0% >= 80%, but the cluster is at maxShards 2",
		},
		{
			name: "scale-out waits for its cooldown",
			mutate: func(in Input) Input {
				in.Nodes[0].Samples = history(50, 95)
				in.LastScaleOut = t0.Add(-time.Minute)
				return in
			},
			to: 2, reason: ReasonCooldown, message: "scale-out cooldown has 2m0s left",
		},
		{
			name: "a recent scale-in does not delay a scale-out",
			mutate: func(in Input) Input {
				in.Nodes[0].Samples = history(50, 95)
				in.LastScaleIn = t0.Add(-time.Second)
				return in
			},
			dir: ScaleOut, to: 3, reason: "ScaleOut",
		},
		{
			name: "cooldown 0 allows back-to-back scale-outs",
			mutate: func(in Input) Input {
				in.Nodes[0].Samples = history(50, 95)
				in.Policy.OutCooldown = 0
				in.LastScaleOut = t0
				return in
			},
			dir: ScaleOut, to: 3, reason: "ScaleOut",
		},
		{
			name:   "every node below every scale-in threshold over the window scales in by one",
			mutate: low,
			dir:    ScaleIn, to: 1, reason: "ScaleIn",
			message: "=2 -> 1 shards: every node's peak over 5m0s is below the scale-in thresholds (highest: node my-cluster-a1b2c memory 10.0% < 30%)",
		},
		{
			name: "a replica's peak blocks scale-in",
			mutate: func(in Input) Input {
				in = low(in)
				in.Nodes[3].Samples = history(10, 10, 10, 10, 10, 10, 31, 10, 10, 10, 10)
				return in
			},
			to: 2, reason: ReasonWithinThresholds, message: "node my-cluster-d4e5f memory peaked at 31.0%",
		},
		{
			name: "a peak older than the window does not block",
			mutate: func(in Input) Input {
				in = low(in)
				in.Nodes[0].Samples = history(99, 10, 10, 10, 10, 10, 10, 10, 10, 10, 10, 10, 10)
				return in
			},
			dir: ScaleIn, to: 1, reason: "ScaleIn",
		},
		{
			name: "a node younger than the window blocks scale-in",
			mutate: func(in Input) Input {
				in = low(in)
				in.Nodes[2].Samples = history(10, 10, 10)
				return in
			},
			to: 2, reason: ReasonWindowIncomplete, message: "node my-cluster-c3d4e has not been sampled for a whole 5m0s window",
		},
		{
			name: "a threshold without a figure blocks scale-in",
			mutate: func(in Input) Input {
				in = low(in)
				in.Policy.ScaleOut.CPUPercent = f(80)
				in.Policy.ScaleIn.CPUPercent = f(20)
				for i := range in.Nodes[1].Samples {
					in.Nodes[1].Samples[i].CPUPercent = nil
				}
				return in
			},
			to: 2, reason: ReasonWindowIncomplete, message: "node my-cluster-b2c3d has no cpu figure",
		},
		{
			name: "without a scaleIn block the cluster never scales in",
			mutate: func(in Input) Input {
				in = low(in)
				in.Policy.ScaleIn = nil
				return in
			},
			to: 2, reason: ReasonNoScaleIn,
		},
		{
			name: "scale-in is bounded by minShards",
			mutate: func(in Input) Input {
				in = low(in)
				in.Policy.MinShards = 2
				return in
			},
			to: 2, reason: ReasonAtMinShards,
		},
		{
			name: "scale-in waits for its cooldown after a scale-out",
			mutate: func(in Input) Input {
				in = low(in)
				in.LastScaleOut = t0.Add(-10 * time.Minute)
				return in
			},
			to: 2, reason: ReasonCooldown, message: "scale-in cooldown has 5m0s left",
		},
		{
			name: "scale-in waits for its cooldown after a scale-in",
			mutate: func(in Input) Input {
				in = low(in)
				in.LastScaleIn = t0.Add(-14 * time.Minute)
				return in
			},
			to: 2, reason: ReasonCooldown, message: "scale-in cooldown has 1m0s left",
		},
		{
			name: "scale-in is refused when the remaining primaries would lack memory",
			mutate: func(in Input) Input {
				in = low(in)
				in.Policy.ScaleOut.MemoryPercent = nil
				in.Policy.ScaleIn = &Thresholds{CPUPercent: f(20)}
				in.Policy.ScaleOut.CPUPercent = f(80)
				for _, i := range []int{0, 2} {
					for j := range in.Nodes[i].Samples {
						in.Nodes[i].Samples[j].UsedMemoryBytes = 45 * mb
					}
				}
				return in
			},
			to: 2, reason: ReasonHeadroom,
			message: "=scale-in refused: the 1 remaining primary would hold 90.0 MiB of 100.0 MiB (90.0%), above the 80% headroom limit",
		},
		{
			name: "above maxShards (maxShards lowered) goes straight to the bound",
			mutate: func(in Input) Input {
				in.Current = 4
				in.Policy.MaxShards = 2
				in.Converged = false
				return in
			},
			dir: ScaleIn, to: 2, reason: "ScaleIn", message: "=4 -> 2 shards: maxShards is 2",
		},
		{
			name: "below minShards goes straight to the bound",
			mutate: func(in Input) Input {
				in.Policy.MinShards = 3
				return in
			},
			dir: ScaleOut, to: 3, reason: "ScaleOut", message: "=2 -> 3 shards: minShards is 3",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := Decide(tt.mutate(base()))
			if d.Direction != tt.dir || d.To != tt.to || d.Reason != tt.reason {
				t.Fatalf("Decide = %s to %d (%s: %s), want %q to %d (%s)", d.Direction, d.To, d.Reason, d.Message, tt.dir, tt.to, tt.reason)
			}
			if want, exact := strings.CutPrefix(tt.message, "="); exact && d.Message != want {
				t.Fatalf("message %q, want %q", d.Message, want)
			} else if !exact && !strings.Contains(d.Message, tt.message) {
				t.Fatalf("message %q, want it to contain %q", d.Message, tt.message)
			}
		})
	}
}

func TestHeadroom(t *testing.T) {
	sampled := func(name string, used, denom int64) Node {
		return Node{Name: name, Primary: true, MemoryDenominatorBytes: denom, Samples: []Sample{{Time: t0, UsedMemoryBytes: used}}}
	}
	tests := []struct {
		name    string
		nodes   []Node
		ok      bool
		message string
	}{
		{"fits", []Node{sampled("a", 30*mb, 100*mb), sampled("b", 30*mb, 100*mb), sampled("c", 30*mb, 100*mb)}, true,
			"the 2 remaining primaries would hold 90.0 MiB of 200.0 MiB (45.0%)"},
		{"exactly 80% fits", []Node{sampled("a", 40*mb, 100*mb), sampled("b", 40*mb, 100*mb)}, true, "(80.0%)"},
		{"above 80%", []Node{sampled("a", 41*mb, 100*mb), sampled("b", 40*mb, 100*mb)}, false,
			"scale-in refused: the 1 remaining primary would hold 81.0 MiB of 100.0 MiB (81.0%), above the 80% headroom limit"},
		{"the largest primary is the one assumed gone", []Node{sampled("a", 10*mb, 100*mb), sampled("b", 10*mb, 20*mb)}, false, "of 20.0 MiB"},
		{"no denominator", []Node{sampled("a", 1, 0), sampled("b", 1, 100)}, false, "node a has neither maxmemory nor a memory limit"},
		{"one primary", []Node{sampled("a", 1, 100)}, false, "none would remain"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ok, msg := headroom(tt.nodes, defaultHeadroom)
			if ok != tt.ok || !strings.Contains(msg, tt.message) {
				t.Fatalf("headroom = %v, %q; want %v, containing %q", ok, msg, tt.ok, tt.message)
			}
		})
	}
}
