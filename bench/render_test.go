package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gomomento/valkey-operator/bench/record"
)

func TestRender(t *testing.T) {
	base := Report{
		Machine: Machine{CPU: "Test CPU", Cores: 2, MemoryGiB: 24, Go: "go1.26", Valkey: []string{"8.0.1", "9.1.2"}},
		Date:    "2026-01-02",
		Command: "make bench",
		Wall:    12*time.Minute + 10*time.Second,
	}
	with := func(f func(r *Report)) Report {
		r := base
		f(&r)
		return r
	}
	for _, tc := range []struct {
		name    string
		report  Report
		want    []string
		notWant []string
	}{{
		name:    "machine and command only",
		report:  base,
		want:    []string{"# Benchmarks", "```sh\nmake bench\n```", "took 13 minutes", "| CPU | Test CPU |", "| Valkey | 8.0.1, 9.1.2 |", "| date | 2026-01-02 |"},
		notWant: []string{"## Bootstrap", "## Availability", "## Resharding", "## Durability", "Kubernetes control plane"},
	}, {
		name: "bootstrap",
		report: with(func(r *Report) {
			r.Records.Bootstrap = []record.Bootstrap{{Shards: 4, Replicas: 2, Seconds: 41.25, Reconciles: 37, AllReconciles: 90}}
		}),
		want: []string{"## Bootstrap", "| 4×2 | 12 | 41.2 s | 37 | 90 |"},
	}, {
		name: "real node beside the local runtime, in scenario order, a missing runtime shown as a dash",
		report: with(func(r *Report) {
			r.Records.RealNode = []record.RealNode{
				{Runtime: record.RuntimeLocal, Scenario: record.ScenarioPrimaryDelete, Seconds: 2, Keys: 500},
				{Runtime: record.RuntimeRealNode, Scenario: record.ScenarioPrimaryDelete, Seconds: 3, Keys: 500, Lost: 1},
				{Runtime: record.RuntimeRealNode, Scenario: record.ScenarioBootstrapTLS, Seconds: 12},
				{Runtime: record.RuntimeLocal, Scenario: record.ScenarioBootstrapTLS, Seconds: 6},
				{Runtime: record.RuntimeRealNode, Scenario: record.ScenarioFullRestart, Seconds: 20, Keys: 1000, Lost: 0},
			}
		}),
		want: []string{
			"## Real node beside the local runtime",
			"| bootstrap of 3×1 TLS | 12.0 s | 6.0 s | 2.0× | — |\n" +
				"| primary pod deleted (3×1) | 3.0 s | 2.0 s | 1.5× | real 500 (1); local 500 (0) |\n" +
				"| full restart of a persistent 3×1 | 20.0 s | — | — | real 1000 (0) |",
		},
	}, {
		name: "rotation sorted by delay, with the derived figures of the documented tick",
		report: with(func(r *Report) {
			r.Records.Rotation = []record.Rotation{
				{ProjectionDelay: 30, Nodes: 2, Seconds: []float64{30.4, 30.6}, TLSReloadInterval: 30},
				{ProjectionDelay: 0, Nodes: 2, Seconds: []float64{0.2, 0.4, 0.3}, TLSReloadInterval: 30},
			}
		}),
		want: []string{
			"| 0 ms | 3 | 300 ms (200 ms–400 ms) | 300 ms | 15.0 s | 30.0 s |\n| 30.0 s | 2 | 30.5 s (30.4 s–30.6 s) | 500 ms | 45.0 s | 1m00s |",
			"derived, not measured", "its own 30-second tick is only a safety net",
		},
	}, {
		name: "availability with gaps per shard and plots",
		report: with(func(r *Report) {
			r.Records.Availability = []record.Availability{{
				Scenario: "primary kill", Cluster: "3x1", Seconds: 75, Requests: 20000, Failed: 150,
				P50Ms: 0.42, P99Ms: 12.5, MaxMs: 2001,
				Shards: []record.ShardGap{{Shard: 0, LongestGapMs: 5300}, {Shard: 1, LongestGapMs: 14.2}},
			}}
			r.Plots = map[string]string{"throughput": "benchmarks/availability-throughput.png"}
		}),
		want: []string{
			"| primary kill | 3x1 | 1m15s | 20000 | 150 | 99.25% | 0.42 ms | 12 ms | 2001 ms | 0: 5300 ms · 1: 14 ms |",
			"![availability throughput](benchmarks/availability-throughput.png)",
		},
		notWant: []string{"availability latency", "Primary kill: the longest"},
	}, {
		name: "primary kill beside Valkey's own failover",
		report: with(func(r *Report) {
			r.Records.Availability = []record.Availability{
				{Scenario: "primary kill", Cluster: "3x1", Shards: []record.ShardGap{{Shard: 0, LongestGapMs: 900}, {Shard: 1, LongestGapMs: 20}}},
				{Scenario: "primary kill, plain valkey-server", Cluster: "3x1", Shards: []record.ShardGap{{Shard: 0, LongestGapMs: 7200}}},
			}
		}),
		want: []string{"**Primary kill: the longest write gap is 900 ms with the operator against 7200 ms with Valkey's own failover on plain processes (0.12×).**"},
	}, {
		name: "resharding ratio",
		report: with(func(r *Report) {
			r.Records.Resharding = []record.Resharding{
				{Method: "operator", Direction: "3 → 4", Command: "spec.shards: 3 → 4", Keys: 1000, ValueBytes: 1024, KeysMoved: 250, BytesMoved: 258000, SlotsMoved: 4096, MigrationSeconds: 10, TotalSeconds: 20, Requests: 900, Failed: 1, LongestGapMs: 120},
				{Method: "valkey-cli", Direction: "3 → 4", Command: "valkey-cli --cluster rebalance", Keys: 1000, ValueBytes: 1024, KeysMoved: 250, BytesMoved: 258000, SlotsMoved: 4096, MigrationSeconds: 5, TotalSeconds: 6},
				{Method: "operator-9", Direction: "4 → 3", Command: "spec.shards: 4 → 3", Keys: 4000, ValueBytes: 1024, KeysMoved: 1000, BytesMoved: 1032000, SlotsMoved: 4096, MigrationSeconds: 1, TotalSeconds: 3},
				{Method: "migrateslots", Direction: "4 → 3", Command: "CLUSTER MIGRATESLOTS", Keys: 4000, ValueBytes: 1024, KeysMoved: 1000, BytesMoved: 1032000, SlotsMoved: 4096, MigrationSeconds: 1.25, TotalSeconds: 2},
			}
		}),
		want: []string{"`MIGRATE`; 1000 keys)", "(4000 keys)",
			"| 3 → 4 | operator | `spec.shards: 3 → 4` | 250 | 4096 | 10.0 s | 25 | 0.03 | 20.0 s | 1 / 900 | 120 ms |",
			"3 → 4: the operator moves keys at 0.50× the rate of `valkey-cli --cluster rebalance`, Valkey 8** (goal ≥ 2×: misses)",
			"4 → 3: the operator moves keys at 1.25× the rate of hand-issued `CLUSTER MIGRATESLOTS`, Valkey 9** (goal ≥ 0.7×: reaches)"},
	}, {
		name: "footprint with and without reconciles",
		report: with(func(r *Report) {
			r.Records.Footprint = []record.Footprint{
				{Clusters: 10, Phase: "converging", Seconds: 20, CPUSeconds: 5, RSSMiB: 60.4, PeakRSSMiB: 64, Reconciles: 200, APIRequests: 1500},
				{Clusters: 10, Phase: "idle", Seconds: 30, CPUSeconds: 0.3, RSSMiB: 61, PeakRSSMiB: 61},
			}
		}),
		want: []string{"| 10 | converging | 20.0 s | 5.00 | 25.0% | 60 MiB | 64 MiB | 200 | 1500 | 7.5 |", "| 10 | idle | 30.0 s | 0.30 | 1.0% | 61 MiB | 61 MiB | 0 | 0 | – |"},
	}, {
		name: "fleet sorted by shape and size, goals read off the most clusters of 1x0",
		report: with(func(r *Report) {
			r.Records.Fleet = []record.Fleet{
				{Shape: "3x1", Clusters: 50, Nodes: 300, ActiveSeconds: 200, SettleSeconds: 30, IdleSeconds: 60, PingIntervalSeconds: 30},
				{Shape: "1x0", Clusters: 400, Nodes: 400, ActiveSeconds: 150, ConvergingCPUSeconds: 80, ConvergingPeakRSSMiB: 180,
					PeakQueueDepth: 350, ReconcileP50Ms: 25, ReconcileP99Ms: 2500, SettleSeconds: 30, IdleSeconds: 60, IdleCPUSeconds: 1.2,
					IdleRSSMiB: 150, IdleAPIRequests: 2400, IdleCommands: map[string]int{"ping": 800, "cluster|nodes": 1600, "info": 0},
					PingIntervalSeconds: 30, PingSeconds: 60, PingCPUSeconds: 0.06},
				{Shape: "1x0", Clusters: 50, Nodes: 50, ActiveSeconds: 20, SettleSeconds: 30, IdleSeconds: 60, PingIntervalSeconds: 30},
			}
		}),
		want: []string{"## Fleet", "waits 30.0 s, then measures an idle window of 1m00s",
			"| 1×0 | 50 | 50 | 20.0 s |",
			"| 1×0 | 400 | 400 | 2m30s | 80.0 | 180 MiB | 350 | 25 ms / 2500 ms | 2.0% | 150 MiB | 6.0 | 6.0 | 0.10% |\n| 3×1 | 50 | 300 |",
			"- 1×0 × 400: `cluster|nodes` 4.00, `ping` 2.00\n",
			"- 3×1 × 50: none",
			"set for 400 clusters of 1×0, against the run of 400",
			"| every cluster Active after one apply | ≤ 120 s | 2m30s | no |",
			"| idle operator CPU | ≤ 5% of a core | 2.0% | yes |",
			"| operator RSS, highest sampled | ≤ 200 MiB | 180 MiB | yes |",
			"| API requests per idle cluster | ≤ 2 a minute | 6.0 a minute | no |"},
	}, {
		name: "fleet of 3x1 only has no goals",
		report: with(func(r *Report) {
			r.Records.Fleet = []record.Fleet{{Shape: "3x1", Clusters: 5, Nodes: 30}}
		}),
		want:    []string{"## Fleet", "| 3×1 | 5 | 30 |"},
		notWant: []string{"Goals of the fleet work"},
	}, {
		name: "secret cache, unfiltered first whatever the record order",
		report: with(func(r *Report) {
			r.Records.SecretCache = []record.SecretCache{
				{Secrets: 5000, SecretBytes: 4096, Filtered: true, RSSMiB: 48.2, PeakRSSMiB: 52, HeapMiB: 12.4},
				{Secrets: 5000, SecretBytes: 4096, Filtered: false, RSSMiB: 110.6, PeakRSSMiB: 150, HeapMiB: 70.1},
			}
		}),
		want: []string{"## Secrets in the operator's cache", "(4096 bytes of data each)",
			"| every Secret and Pod (`--filter-cache=false`) | 5000 | 111 MiB | 150 MiB | 70 MiB |\n| the operator's own (default) | 5000 | 48 MiB | 52 MiB | 12 MiB |"},
	}, {
		name: "durability, restarts by shape and writes beside the plain server",
		report: with(func(r *Report) {
			r.Records.DurableRestart = []record.DurableRestart{
				{Version: "8.0.1", Shards: 16, Replicas: 1, Appendfsync: "everysec", DataBytes: 1 << 30, Keys: 104857, ValueBytes: 10240, Seconds: 48, PlainLoadSeconds: 0.4},
				{Version: "8.0.1", Shards: 3, Replicas: 1, Appendfsync: "everysec", DataBytes: 1 << 30, Keys: 104857, ValueBytes: 10240, Seconds: 30, PlainLoadSeconds: 2.5},
			}
			r.Records.DurableWrites = []record.DurableWrites{
				{Version: "8.0.1", Appendfsync: "always", Requests: 50000, Clients: 16, ValueBytes: 100, ClusterRPS: 1500, PlainRPS: 2000},
				{Version: "8.0.1", Requests: 50000, Clients: 16, ValueBytes: 100, ClusterRPS: 40000, PlainRPS: 0},
			}
		}),
		want: []string{"## Durability", "(values of 10240 bytes,",
			"| 8.0.1 | 3×1 | 1024 MiB | 104857 | everysec | 30.0 s | 2.5 s (341 MiB) | 12.0× |\n| 8.0.1 | 16×1 | 1024 MiB | 104857 | everysec | 48.0 s | 400 ms (64 MiB) | 120.0× |",
			"`valkey-benchmark -t set -n 50000 -c 16 -d 100`",
			"| 8.0.1 | `appendfsync always` | 1500 SET/s | 2000 SET/s | 0.75× |",
			"| 8.0.1 | none (in memory) | 40000 SET/s | 0 SET/s (`appendonly no`) | – |"},
	}, {
		name: "durability writes alone have no restart table",
		report: with(func(r *Report) {
			r.Records.DurableWrites = []record.DurableWrites{{Appendfsync: "everysec", ClusterRPS: 1, PlainRPS: 1}}
		}),
		want:    []string{"## Durability", "| `appendfsync everysec` |"},
		notWant: []string{"**Full restart.**"},
	}, {
		name: "backup and restore beside the store and the plain server",
		report: with(func(r *Report) {
			r.Records.Backup = []record.Backup{{Version: "8.0.1", Keys: 104857, ValueBytes: 10240, Bytes: 1_000_000_000,
				BackupSeconds: 10, RestoreSeconds: 20, StoreUploadSeconds: 4, StoreDownloadSeconds: 2, PlainRDBSeconds: 5, PlainLoadSeconds: 1,
				Requests: 200000, P99IdleMs: 0.5, P99DuringMs: 0.75}}
		}),
		want: []string{"## Backup and restore",
			"| 8.0.1 | 953 MiB (104857 keys) | 100.0 MB/s | 250.0 MB/s | 200.0 MB/s | 50.0 MB/s | 500.0 MB/s | 1000.0 MB/s | 0.75 / 0.50 ms |"},
	}, {
		name: "autoscaling from the decision, and an older record without those figures",
		report: with(func(r *Report) {
			r.Records.Autoscale = []record.Autoscale{
				{Trigger: "cpu", Cluster: "1x0 → 2x0", SampleIntervalSeconds: 30, SafetyIntervalSeconds: 300,
					DecisionSeconds: 21.5, DecisionSeenSeconds: 21.7, SlotsSeconds: 50, ActiveSeconds: 60,
					SlotsAfterDecisionSeconds: 28.5, ActiveAfterDecisionSeconds: 38.5},
				{Trigger: "memory", Cluster: "1x0 → 2x0", SampleIntervalSeconds: 2, DecisionSeconds: 1.3, SlotsSeconds: 32.2, ActiveSeconds: 43.6},
			}
		}),
		want: []string{"## Autoscaling reaction", "`status.autoscaling.lastScaleOutTime`", "does not wait\nfor the safety pass.", "up to two intervals",
			"| trigger | cluster | sampling | safety pass | threshold → decision | decision → new shard owns slots | decision → Active |\n|---|---|---:|---:|---:|---:|---:|",
			"| cpu | 1x0 → 2x0 | 30.0 s | 5m00s | 21.5 s | 28.5 s | 38.5 s |\n| memory | 1x0 → 2x0 | 2.0 s | – | 1.3 s | 30.9 s | 42.3 s |"},
	}, {
		name: "one failure in many is not rounded away",
		report: with(func(r *Report) {
			r.Records.Availability = []record.Availability{
				{Scenario: "scale-in", Requests: 32806, Failed: 1},
				{Scenario: "scale-out", Requests: 32806},
			}
		}),
		want: []string{"| 32806 | 1 | 99.997% |", "| 32806 | 0 | 100.00% |"},
	}, {
		name:    "a run of unknown length says nothing of it",
		report:  with(func(r *Report) { r.Wall = 0 }),
		notWant: []string{"took"},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			got := Render(tc.report)
			for _, w := range tc.want {
				if !strings.Contains(got, w) {
					t.Errorf("missing %q in:\n%s", w, got)
				}
			}
			for _, w := range tc.notWant {
				if strings.Contains(got, w) {
					t.Errorf("unexpected %q in:\n%s", w, got)
				}
			}
			if got != Render(tc.report) {
				t.Error("two renders of one report differ")
			}
		})
	}
}

func TestParseBenchLine(t *testing.T) {
	out := []byte("goos: linux\nBenchmarkStartStop50Pods-2   \t       1\t12345 ns/op\t         3.21 s-to-ready/op\t  1.50 s-to-gone/op\nPASS\n")
	for _, tc := range []struct {
		name string
		want map[string]float64
		ok   bool
	}{
		{"BenchmarkStartStop50Pods", map[string]float64{"ns/op": 12345, "s-to-ready/op": 3.21, "s-to-gone/op": 1.5}, true},
		{"BenchmarkStartStop", nil, false},
	} {
		got, ok := parseBenchLine(out, tc.name)
		if ok != tc.ok || len(got) != len(tc.want) {
			t.Fatalf("%s: got %v, %v; want %v, %v", tc.name, got, ok, tc.want, tc.ok)
		}
		for k, v := range tc.want {
			if got[k] != v {
				t.Errorf("%s: %s = %v, want %v", tc.name, k, got[k], v)
			}
		}
	}
}

// The plots are drawn from records alone; a run's worth of timeline makes
// a PNG.
func TestPlotAvailability(t *testing.T) {
	a := record.Availability{Scenario: "scale-out", Cluster: "3x1", Seconds: 3}
	for i := -8; i < 20; i++ {
		b := record.Bucket{T: float64(i) * 0.25, OK: 50, P99Ms: 1.5}
		if i == 4 {
			b.Failed, b.P99Ms = 3, 2000
		}
		a.Timeline = append(a.Timeline, b)
	}
	dir := t.TempDir()
	for _, kind := range []string{"throughput", "latency"} {
		path := filepath.Join(dir, kind+".png")
		if err := plotAvailability(path, kind, []record.Availability{a, a, a}); err != nil {
			t.Fatal(err)
		}
		b, err := os.ReadFile(path)
		if err != nil || !strings.HasPrefix(string(b), "\x89PNG") {
			t.Fatalf("%s: not a PNG (%v)", path, err)
		}
	}
}
