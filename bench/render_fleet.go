package main

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	"github.com/gomomento/valkey-operator/bench/record"
)

// fleetGoal is one target of the fleet-scale work, read off the record of
// the most clusters of 1×0.
type fleetGoal struct {
	what   string
	target string
	// measure returns the figure as printed and whether it meets the
	// target.
	measure func(record.Fleet) (string, bool)
}

// fleetGoalClusters is the fleet the goals are set for.
const fleetGoalClusters = 400

var fleetGoals = []fleetGoal{
	{"every cluster Active after one apply", "≤ 120 s", func(f record.Fleet) (string, bool) {
		return secs(f.ActiveSeconds), f.ActiveSeconds <= 120
	}},
	{"idle operator CPU", "≤ 5% of a core", func(f record.Fleet) (string, bool) {
		return fmt.Sprintf("%.1f%%", 100*f.IdleCPUShare()), f.IdleCPUShare() <= 0.05
	}},
	{"operator RSS, highest sampled", "≤ 200 MiB", func(f record.Fleet) (string, bool) {
		rss := max(f.ConvergingPeakRSSMiB, f.IdleRSSMiB)
		return fmt.Sprintf("%.0f MiB", rss), rss <= 200
	}},
	{"API requests per idle cluster", "≤ 2 a minute", func(f record.Fleet) (string, bool) {
		return fmt.Sprintf("%.1f a minute", f.APIRequestsPerClusterMinute()), f.APIRequestsPerClusterMinute() <= 2
	}},
}

func renderFleet(w *strings.Builder, r Report) {
	fs := slices.Clone(r.Records.Fleet)
	if len(fs) == 0 {
		return
	}
	slices.SortStableFunc(fs, func(a, b record.Fleet) int {
		return cmp.Or(cmp.Compare(a.Shape, b.Shape), cmp.Compare(a.Clusters, b.Clusters))
	})
	section(w, "Fleet",
		"One operator, built from `cmd/valkey-operator` and run as its own process, a fresh one per",
		"row, with many plaintext clusters of one small ValkeyConfig created all at once. \"to all",
		"Active\" runs from the first create call to every cluster `Active` with every slot assigned;",
		"the operator's CPU (user + system, `/proc/PID/stat`) and peak RSS are over that time, the",
		"queue depth is the ValkeyCluster controller's `workqueue_depth` (highest sampled) and the",
		"reconcile times its `controller_runtime_reconcile_time_seconds` (bucket bounds). Once every",
		fmt.Sprintf("cluster is Active the run waits %s, then measures an idle window of %s: the", secs(fs[0].SettleSeconds), secs(fs[0].IdleSeconds)),
		"operator's CPU and RSS, its API requests (`rest_client_requests_total`) and the commands",
		"every node processed (`INFO commandstats` before and after, the benchmark's own INFO",
		"and the replicas' `REPLCONF` acknowledgements taken out; a replica's PINGs include its",
		"primary's, every 10 s). The limit beside it: `bench/pingloop`, a plain loop over kept connections",
		fmt.Sprintf("(the operator's Valkey client, one connection per node) sending each node one PING every %s,", secs(fs[0].PingIntervalSeconds)),
		"the operator's sample of every node (the cluster controller's probe between its safety passes),",
		"measured the same way over a window as long right after.")
	tableHead(w, "lrrrrrrrrrrrr", "shape", "clusters", "nodes", "to all Active", "CPU-seconds converging", "peak RSS",
		"peak queue depth", "reconcile p50 / p99", "idle CPU (share of a core)", "idle RSS",
		"API requests per cluster per minute", "Valkey commands per node per minute", "plain PING loop CPU (share of a core)")
	for _, f := range fs {
		fmt.Fprintf(w, "| %s | %d | %d | %s | %.1f | %.0f MiB | %.0f | %s / %s | %.1f%% | %.0f MiB | %.1f | %.1f | %.2f%% |\n",
			strings.Replace(f.Shape, "x", "×", 1), f.Clusters, f.Nodes, secs(f.ActiveSeconds), f.ConvergingCPUSeconds,
			f.ConvergingPeakRSSMiB, f.PeakQueueDepth, millis(f.ReconcileP50Ms), millis(f.ReconcileP99Ms),
			100*f.IdleCPUShare(), f.IdleRSSMiB, f.APIRequestsPerClusterMinute(), f.CommandsPerNodeMinute(), 100*f.PingCPUShare())
	}
	w.WriteString("\nWhat the nodes processed while idle, per node and minute, by command:\n\n")
	for _, f := range fs {
		fmt.Fprintf(w, "- %s × %d: %s\n", strings.Replace(f.Shape, "x", "×", 1), f.Clusters, commandMix(f))
	}
	w.WriteString("\n")

	goal, ok := fleetGoalRecord(fs)
	if !ok {
		return
	}
	fmt.Fprintf(w, "Goals of the fleet work, set for %d clusters of 1×0, against the run of %d:\n\n", fleetGoalClusters, goal.Clusters)
	tableHead(w, "llrl", "goal", "target", "measured", "met")
	for _, g := range fleetGoals {
		figure, met := g.measure(goal)
		verdict := "no"
		if met {
			verdict = "yes"
		}
		fmt.Fprintf(w, "| %s | %s | %s | %s |\n", g.what, g.target, figure, verdict)
	}
	w.WriteString("\n")
}

// fleetGoalRecord is the 1×0 record of the most clusters.
func fleetGoalRecord(fs []record.Fleet) (record.Fleet, bool) {
	var best record.Fleet
	found := false
	for _, f := range fs {
		if f.Shape == "1x0" && (!found || f.Clusters > best.Clusters) {
			best, found = f, true
		}
	}
	return best, found
}

// commandMix lists the idle commands per node and minute, most first.
func commandMix(f record.Fleet) string {
	type named struct {
		name string
		n    int
	}
	var cs []named
	for name, n := range f.IdleCommands {
		if n > 0 {
			cs = append(cs, named{name, n})
		}
	}
	if len(cs) == 0 || f.Nodes == 0 || f.IdleSeconds <= 0 {
		return "none"
	}
	slices.SortFunc(cs, func(a, b named) int { return cmp.Or(b.n-a.n, strings.Compare(a.name, b.name)) })
	parts := make([]string, len(cs))
	perMinute := f.IdleSeconds / 60 * float64(f.Nodes)
	for i, c := range cs {
		parts[i] = fmt.Sprintf("`%s` %.2f", c.name, float64(c.n)/perMinute)
	}
	return strings.Join(parts, ", ")
}
