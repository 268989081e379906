package main

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/gomomento/valkey-operator/bench/record"
)

// documentedTick is how often the documented operator looks for a new
// certificate: it acts on a rotation only on this tick.
const documentedTick = 30 * time.Second

// Report is everything the Markdown page is made of.
type Report struct {
	Machine Machine
	Date    string
	Command string
	// Wall is how long the whole run took.
	Wall    time.Duration
	Records record.Set
	// Pods is the local runtime's own pod start and stop, when measured.
	Pods *PodStartStop
	// Plots are image paths relative to the page, by name.
	Plots map[string]string
}

// Machine describes where the figures were measured.
type Machine struct {
	CPU        string
	Cores      int
	MemoryGiB  float64
	OS         string
	Kernel     string
	Go         string
	Valkey     []string
	Kubernetes string
}

// PodStartStop is the runtime's cost of starting and stopping pods.
type PodStartStop struct {
	Pods           int
	SecondsToReady float64
	SecondsToGone  float64
}

// Render writes the report as Markdown. It is a pure function of r.
func Render(r Report) string {
	var w strings.Builder
	p := func(format string, args ...any) { fmt.Fprintf(&w, format, args...) }
	p("# Benchmarks\n\n")
	p("How fast and how safe the operator is, measured side by side on one machine.\n")
	p("The benchmarks print figures and assert nothing. Regenerate this page with\n\n")
	p("```sh\n%s\n```\n\n", r.Command)
	p("It builds what it needs (the test control plane, Valkey 8 and 9), runs the\n")
	p("benchmarks in `test/e2e/bench_*_test.go` against a real kube-apiserver and real\n")
	p("`valkey-server` processes (the [local runtime](local-runtime.md)), and those in\n")
	p("`test/realnode/bench_test.go` on a real kubelet with containerd and runc, and writes\n")
	p("this page and the plots in `docs/benchmarks/`.")
	if r.Wall > 0 {
		p(" The run below took %s.", minutes(r.Wall))
	}
	p("\nEvery figure comes from one run: read differences of a few percent as noise.\n\n")

	renderMachine(&w, r)
	renderBootstrap(&w, r)
	renderRotation(&w, r)
	renderAvailability(&w, r)
	renderResharding(&w, r)
	renderAutoscale(&w, r)
	renderDurability(&w, r)
	renderBackup(&w, r)
	renderFootprint(&w, r)
	renderFleet(&w, r)
	renderRealNode(&w, r)
	renderSecretCache(&w, r)
	return w.String()
}

// section opens a section of the page: its heading, then its
// introduction, one line of prose per argument.
func section(w *strings.Builder, title string, intro ...string) {
	fmt.Fprintf(w, "## %s\n\n", title)
	for _, line := range intro {
		w.WriteString(line + "\n")
	}
	if len(intro) > 0 {
		w.WriteString("\n")
	}
}

// tableHead writes a table's header row and its alignment row; align has a
// letter per column, r for a right-aligned one (figures) and l for the rest.
func tableHead(w *strings.Builder, align string, columns ...string) {
	w.WriteString("| " + strings.Join(columns, " | ") + " |\n|")
	for _, a := range align {
		if a == 'r' {
			w.WriteString("---:|")
		} else {
			w.WriteString("---|")
		}
	}
	w.WriteString("\n")
}

func renderMachine(w *strings.Builder, r Report) {
	m := r.Machine
	section(w, "Machine")
	w.WriteString("| | |\n|---|---|\n")
	row := func(k, v string) {
		if v != "" {
			fmt.Fprintf(w, "| %s | %s |\n", k, v)
		}
	}
	row("date", r.Date)
	row("CPU", m.CPU)
	if m.Cores > 0 {
		row("cores", fmt.Sprint(m.Cores))
	}
	if m.MemoryGiB > 0 {
		row("memory", fmt.Sprintf("%.0f GiB", m.MemoryGiB))
	}
	row("OS", m.OS)
	row("kernel", m.Kernel)
	row("Go", m.Go)
	row("Valkey", strings.Join(m.Valkey, ", "))
	row("Kubernetes control plane", m.Kubernetes)
	if r.Pods != nil {
		row("runtime baseline", fmt.Sprintf("%d `valkey-server` pods Ready %s after creation, gone %s after deletion (no operator)",
			r.Pods.Pods, secs(r.Pods.SecondsToReady), secs(r.Pods.SecondsToGone)))
	}
	w.WriteString("\n")
}

func renderBootstrap(w *strings.Builder, r Report) {
	if len(r.Records.Bootstrap) == 0 {
		return
	}
	section(w, "Bootstrap",
		"From creating a `ValkeyCluster` (what `kubectl apply` does) to `Active` with every",
		"slot assigned and every member in place, plaintext; one cluster at a time. Reconciles",
		"are counted from the operator's `controller_runtime_reconcile_total`. Goals: 3×1 in",
		"at most 5 s with at most 20 reconciles of the cluster controller, 16×1 in at most 10 s.")
	tableHead(w, "llrrrr", "Valkey", "shape", "pods", "time to Active", "reconciles (cluster controller)", "reconciles (all controllers)")
	boots := slices.Clone(r.Records.Bootstrap)
	slices.SortStableFunc(boots, func(a, b record.Bootstrap) int {
		return cmp.Or(cmp.Compare(a.Version, b.Version), cmp.Compare(a.Shards, b.Shards), cmp.Compare(a.Replicas, b.Replicas))
	})
	for _, b := range boots {
		fmt.Fprintf(w, "| %s | %d×%d | %d | %s | %d | %d |\n", b.Version, b.Shards, b.Replicas, b.Shards*(1+b.Replicas),
			secs(b.Seconds), b.Reconciles, b.AllReconciles)
	}
	w.WriteString("\n")
}

func renderRotation(w *strings.Builder, r Report) {
	rots := slices.Clone(r.Records.Rotation)
	if len(rots) == 0 {
		return
	}
	slices.SortFunc(rots, func(a, b record.Rotation) int { return cmpFloat(a.ProjectionDelay, b.ProjectionDelay) })
	tick := documentedTick.Seconds()
	section(w, "Certificate rotation",
		fmt.Sprintf("From updating the TLS Secret of a %d-node cluster (1×1) to every node serving the new", rots[0].Nodes),
		"leaf to a new connection, verified against the CA. The projection delay is the",
		"runtime's stand-in for the kubelet: how long the new Secret takes to reach the",
		"pods' files; a real kubelet projects a changed Secret on its periodic pod sync, about",
		"once a minute, which the non-zero delay stands for. This operator acts on the change",
		"as soon as the files hold it: it re-checks every second for two minutes after a change,",
		fmt.Sprintf("and its own %g-second tick is only a safety net. The documented operator acts on a", rots[0].TLSReloadInterval),
		fmt.Sprintf("%g-second tick, so its figures below are derived, not measured: the projection delay", tick),
		fmt.Sprintf("plus a wait uniform in 0–%g s (mean +%g s, worst +%g s), not counting its own reload.", tick, tick/2, tick))
	tableHead(w, "rrrrrr", "projection delay", "rotations", "this operator: mean (min–max)", "beyond the projection", "documented operator, derived: mean", "worst")
	for _, rot := range rots {
		mean, lo, hi := stats(rot.Seconds)
		fmt.Fprintf(w, "| %s | %d | %s (%s–%s) | %s | %s | %s |\n",
			secs(rot.ProjectionDelay), len(rot.Seconds), secs(mean), secs(lo), secs(hi),
			secs(mean-rot.ProjectionDelay),
			secs(rot.ProjectionDelay+tick/2), secs(rot.ProjectionDelay+tick))
	}
	w.WriteString("\nTimes are polled every 200 ms, with a TLS handshake to each node per poll.\n\n")
}

func renderAvailability(w *strings.Builder, r Report) {
	if len(r.Records.Availability) == 0 {
		return
	}
	section(w, "Availability",
		"A steady client load (valkey-go, cluster-aware) runs from 2 s before each disruption",
		"to 2 s after the cluster has converged again. It has one writer per shard, as the",
		"shards were when the disruption began, numbered by their lowest slot: each writes",
		"fresh keys hashing to its shard's slots and reads back one of its earlier keys, with",
		"10 ms between requests and a 2 s timeout on each. Latency covers every request, a",
		"failed one up to its error; a read that returns another value or none counts as",
		"failed. The gap is the longest window in which a shard's writer had no write",
		"acknowledged. \"converged after\" runs from the disruption to the cluster converged",
		"again (for a rotation, every node serving the new material).")
	tableHead(w, "llrrrrrrrl", "disruption", "cluster", "converged after", "requests", "failed", "succeeded", "p50", "p99", "max", "longest write gap per shard")
	for _, a := range r.Records.Availability {
		fmt.Fprintf(w, "| %s | %s | %s | %d | %d | %s | %s | %s | %s | %s |\n",
			a.Scenario, a.Cluster, secs(a.Seconds), a.Requests, a.Failed, successRate(a.Requests, a.Failed),
			millis(a.P50Ms), millis(a.P99Ms), millis(a.MaxMs), gaps(a.Shards))
	}
	w.WriteString("\n")
	renderFailoverRatio(w, r.Records.Availability)
	captions := map[string]string{
		"throughput": "Writes acknowledged per second, one line per shard's writer (blue, green, orange, purple:\n" +
			"shards 0–3 as they were when the disruption began), and failed requests per second in red;\n" +
			"the dashed lines mark the disruption and the convergence.",
		"latency": "p99 latency of each 250 ms, on a log scale; a red cross marks a slice with failed requests.",
	}
	for _, name := range []string{"throughput", "latency"} {
		if path, ok := r.Plots[name]; ok {
			fmt.Fprintf(w, "![availability %s](%s)\n\n%s\n\n", name, path, captions[name])
		}
	}
}

// Scenarios the primary-kill ratio compares: the operator's, and plain
// valkey-server processes left to Valkey's own failover.
const (
	scenarioPrimaryKill      = "primary kill"
	scenarioPlainPrimaryKill = "primary kill, plain valkey-server"
)

// renderFailoverRatio sets the operator's longest write gap after a
// primary's process is killed beside Valkey's own failover on plain
// processes with the same cluster-node-timeout: the baseline to beat.
func renderFailoverRatio(w *strings.Builder, all []record.Availability) {
	ours, okOurs := longestGapOf(all, scenarioPrimaryKill)
	plain, okPlain := longestGapOf(all, scenarioPlainPrimaryKill)
	if !okOurs || !okPlain || plain <= 0 {
		return
	}
	fmt.Fprintf(w, "**Primary kill: the longest write gap is %s with the operator against %s with Valkey's own failover on plain processes (%.2f×).**\n\n",
		millis(ours), millis(plain), ours/plain)
}

// longestGapOf is scenario's longest write gap over its shards.
func longestGapOf(all []record.Availability, scenario string) (float64, bool) {
	for _, a := range all {
		if a.Scenario != scenario {
			continue
		}
		longest := 0.0
		for _, g := range a.Shards {
			longest = max(longest, g.LongestGapMs)
		}
		return longest, true
	}
	return 0, false
}

// reshardOutward is the direction of the move onto the new shard.
const reshardOutward = "3 → 4"

// Goals the resharding figures are read against.
const (
	goalAtomicRatio  = 0.7 // the operator on Valkey 9, against hand-issued CLUSTER MIGRATESLOTS
	goalClassicRatio = 2.0 // the operator on Valkey 8, against valkey-cli --cluster rebalance
)

func renderResharding(w *strings.Builder, r Report) {
	rs := slices.Clone(r.Records.Resharding)
	if len(rs) == 0 {
		return
	}
	// "3 → 4" before "4 → 3"; each version's operator row beside its baseline.
	order := []string{"operator", "valkey-cli", "operator-9", "migrateslots"}
	slices.SortStableFunc(rs, func(a, b record.Resharding) int {
		return cmp.Or(cmp.Compare(a.Direction, b.Direction), cmp.Compare(slices.Index(order, a.Method), slices.Index(order, b.Method)))
	})
	keys := map[string]int{}
	for _, x := range rs {
		keys[x.Method] = x.Keys
	}
	section(w, "Resharding throughput",
		"A data set of 1 KiB values moved from 3 primaries (no replicas) onto a fourth, empty",
		"one, then off it again, in the same run on this machine: on Valkey 8.0.1 (keys move with",
		fmt.Sprintf("`MIGRATE`; %d keys) by the operator and by `valkey-cli` on a cluster of plain", keys["operator"]),
		fmt.Sprintf("`valkey-server` processes; on Valkey 9.1.2 (%d keys) by the operator and by `CLUSTER MIGRATESLOTS`", keys["operator-9"]),
		"issued by hand to every source at once on plain processes (the limit). All are timed the",
		"same way, by polling the fourth node every 20 ms: from the first sign of the move (a slot",
		"importing or migrating, or an atomic migration job) to the last change of its slot count.",
		"Bytes count keys and values; \"in all\" adds, for the operator, starting the new pod and",
		"joining it (or forgetting and deleting it), and for the others, `add-node` (or `del-node`).",
		"During each move a client load runs as in [Availability](#availability): one writer per",
		"shard, each write acknowledged or counted failed.")
	tableHead(w, "lllrrrrrrrr", "direction", "method", "what ran", "keys moved", "slots moved", "migration", "keys/s", "MB/s", "in all", "failed / requests", "longest write gap")
	rate := map[string]float64{}
	for _, x := range rs {
		kps := float64(x.KeysMoved) / x.MigrationSeconds
		rate[x.Direction+" "+x.Method] = kps
		fmt.Fprintf(w, "| %s | %s | `%s` | %d | %d | %s | %.0f | %.2f | %s | %d / %d | %s |\n", x.Direction, x.Method, x.Command,
			x.KeysMoved, x.SlotsMoved, secs(x.MigrationSeconds), kps, float64(x.BytesMoved)/1e6/x.MigrationSeconds,
			secs(x.TotalSeconds), x.Failed, x.Requests, millis(x.LongestGapMs))
	}
	w.WriteString("\n")
	for _, dir := range directions(rs) {
		ratio := func(op, base, against string, goal float64) {
			o, b := rate[dir+" "+op], rate[dir+" "+base]
			if o <= 0 || b <= 0 {
				return
			}
			verdict := "reaches"
			if o/b < goal {
				verdict = "misses"
			}
			fmt.Fprintf(w, "- **%s: the operator moves keys at %.2f× the rate of %s** (goal ≥ %g×: %s).\n", dir, o/b, against, goal, verdict)
		}
		ratio("operator", "valkey-cli", "`valkey-cli --cluster rebalance`, Valkey 8", goalClassicRatio)
		ratio("operator-9", "migrateslots", "hand-issued `CLUSTER MIGRATESLOTS`, Valkey 9", goalAtomicRatio)
	}
	if rate[reshardOutward+" operator-9"] > 0 {
		w.WriteString("\nOn Valkey 9 the operator sends the very commands of the hand-issued limit, one per\n")
		w.WriteString("source and target, every source at once, so the two do the same work: a ratio near 1\n")
		w.WriteString("is the expected result, and how far it strays either way is this machine's noise.\n")
	}
	w.WriteString("\n")
}

// directions lists the moves' directions in the order first recorded.
func directions(rs []record.Resharding) []string {
	var out []string
	for _, x := range rs {
		if !slices.Contains(out, x.Direction) {
			out = append(out, x.Direction)
		}
	}
	return out
}

func renderFootprint(w *strings.Builder, r Report) {
	fs := r.Records.Footprint
	if len(fs) == 0 {
		return
	}
	section(w, "Operator footprint",
		"The operator built from `cmd/valkey-operator` and run as its own process against the",
		"local control plane, a fresh process per row group. \"converging\" runs from creating",
		"the clusters (1×0, plaintext) all at once to all of them `Active`; \"idle\" is the",
		"following window of one sample interval (30 s) once the process has gone quiet. CPU is",
		"user + system time from `/proc/PID/stat`, RSS `VmRSS` from `/proc/PID/status`, sampled",
		"every 100 ms for the peak; reconciles and API requests come from the operator's own",
		"`/metrics` (`controller_runtime_reconcile_total`, all controllers, and",
		"`rest_client_requests_total`).")
	tableHead(w, "rlrrrrrrrr", "clusters", "phase", "duration", "CPU-seconds", "CPU (share of a core)", "RSS at end", "peak RSS", "reconciles", "API requests", "API requests per reconcile")
	for _, f := range fs {
		perReconcile := "–"
		if f.Reconciles > 0 {
			perReconcile = fmt.Sprintf("%.1f", float64(f.APIRequests)/float64(f.Reconciles))
		}
		share := 0.0
		if f.Seconds > 0 {
			share = f.CPUSeconds / f.Seconds
		}
		fmt.Fprintf(w, "| %d | %s | %s | %.2f | %.1f%% | %.0f MiB | %.0f MiB | %d | %d | %s |\n",
			f.Clusters, f.Phase, secs(f.Seconds), f.CPUSeconds, 100*share, f.RSSMiB, f.PeakRSSMiB,
			f.Reconciles, f.APIRequests, perReconcile)
	}
	w.WriteString("\n")
}

func renderSecretCache(w *strings.Builder, r Report) {
	cs := slices.Clone(r.Records.SecretCache)
	if len(cs) == 0 {
		return
	}
	slices.SortStableFunc(cs, func(a, b record.SecretCache) int {
		if a.Filtered == b.Filtered {
			return a.Secrets - b.Secrets
		}
		if a.Filtered {
			return 1
		}
		return -1
	})
	section(w, "Secrets in the operator's cache",
		"The operator watches Secrets and Pods in every namespace. Its cache keeps only those it",
		"labeled (`app.kubernetes.io/managed-by: valkey-operator`); a user's TLS Secret is read",
		"around the cache and watched by name. Here the operator runs as its own process while",
		fmt.Sprintf("Secrets that are not its own exist (%s bytes of data each), beside one 1×0 cluster of", strconv.Itoa(cs[0].SecretBytes)),
		"its own, once caching every Secret and Pod as it did before the filter",
		"(`--filter-cache=false`) and once with the filter (the default). RSS is `VmRSS` once",
		"the process has converged the cluster and gone quiet, peak RSS `VmHWM` (the most it",
		"ever held), the Go heap `go_memstats_heap_inuse_bytes` at the same time.")
	tableHead(w, "lrrrr", "cache", "unrelated Secrets", "RSS", "peak RSS", "Go heap in use")
	for _, c := range cs {
		what := "every Secret and Pod (`--filter-cache=false`)"
		if c.Filtered {
			what = "the operator's own (default)"
		}
		fmt.Fprintf(w, "| %s | %d | %.0f MiB | %.0f MiB | %.0f MiB |\n", what, c.Secrets, c.RSSMiB, c.PeakRSSMiB, c.HeapMiB)
	}
	w.WriteString("\n")
}

// secs formats seconds for a table: milliseconds below one second, one
// decimal below a minute, minutes and seconds above.
func secs(s float64) string {
	switch {
	case s < 0:
		return "-" + secs(-s)
	case s < 1:
		return fmt.Sprintf("%.0f ms", s*1000)
	case s < 60:
		return fmt.Sprintf("%.1f s", s)
	default:
		return fmt.Sprintf("%dm%02.0fs", int(s)/60, math.Mod(s, 60))
	}
}

func minutes(d time.Duration) string {
	if n := math.Ceil(d.Minutes()); n > 1 {
		return fmt.Sprintf("%.0f minutes", n)
	}
	return "a minute"
}

func millis(ms float64) string {
	if ms < 10 {
		return fmt.Sprintf("%.2f ms", ms)
	}
	return fmt.Sprintf("%.0f ms", ms)
}

func successRate(requests, failed int) string {
	if requests == 0 {
		return "–"
	}
	rate := 100 * float64(requests-failed) / float64(requests)
	// One failure in many thousands must not read as 100%.
	for prec := 2; ; prec++ {
		if out := strconv.FormatFloat(rate, 'f', prec, 64); failed == 0 || !strings.HasPrefix(out, "100") || prec == 6 {
			return out + "%"
		}
	}
}

func gaps(shards []record.ShardGap) string {
	var parts []string
	for _, g := range shards {
		parts = append(parts, fmt.Sprintf("%d: %s", g.Shard, millis(g.LongestGapMs)))
	}
	return strings.Join(parts, " · ")
}

func stats(xs []float64) (mean, lo, hi float64) {
	if len(xs) == 0 {
		return 0, 0, 0
	}
	lo, hi = xs[0], xs[0]
	for _, x := range xs {
		mean += x
		lo, hi = min(lo, x), max(hi, x)
	}
	return mean / float64(len(xs)), lo, hi
}

func cmpFloat(a, b float64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

func renderAutoscale(w *strings.Builder, r Report) {
	as := r.Records.Autoscale
	if len(as) == 0 {
		return
	}
	section(w, "Autoscaling reaction",
		"A one-shard cluster under real load crosses a scale-out threshold: memory filled by a",
		"client past `memoryPercent: 50` of a 16 MB `maxmemory`, or `valkey-benchmark` against a",
		"primary with a 100m CPU limit past `cpuPercent: 50`. The load starts as soon as the cluster",
		"is `Active`. The operator runs at the pacing in the table, the shipped one: every node",
		"sampled every 30 s, a converged cluster looked at in full every 5 minutes (the safety",
		"pass).",
		"",
		"The decision waits for a sample that sees the load: up to one sample interval when the",
		"next tick reads the node afresh. A tick answers with the cluster controller's own look at",
		"the node instead when that look is under one and a half intervals old; right after the",
		"cluster converges that look predates the load, so the first tick sees the node as it was",
		"and the decision waits for the next: up to two intervals. CPU is a rate between two",
		"readings, which a node's first reading lacks, and a load that begins late in an interval",
		"lifts that interval's rate by only part of its own. The decision's instant is the",
		"autoscaler's own stamp, `status.autoscaling.lastScaleOutTime`, narrowed by polling the",
		"status every 200 ms. The decision wakes the cluster controller: the scale-out after it, a",
		"new shard started, given slots and the cluster `Active` with two shards, does not wait",
		"for the safety pass.")
	tableHead(w, "llrrrrr", "trigger", "cluster", "sampling", "safety pass",
		"threshold → decision", "decision → new shard owns slots", "decision → Active")
	for _, a := range as {
		safety := "–"
		if a.SafetyIntervalSeconds > 0 {
			safety = secs(a.SafetyIntervalSeconds)
		}
		slots, active := a.SinceDecision()
		fmt.Fprintf(w, "| %s | %s | %s | %s | %s | %s | %s |\n", a.Trigger, a.Cluster, secs(a.SampleIntervalSeconds), safety,
			secs(a.DecisionSeconds), secs(slots), secs(active))
	}
	w.WriteString("\n")
}

// mebibytes formats a size in MiB.
func mebibytes(n int64) string { return fmt.Sprintf("%d MiB", n>>20) }
