package e2e

import (
	"bufio"
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	valkeyv1 "github.com/gomomento/valkey-operator/api/v1alpha1"
	"github.com/gomomento/valkey-operator/bench/record"
	"github.com/gomomento/valkey-operator/internal/controller"
)

// The fleet's idle window: after fleetSettle with every cluster Active, so
// the last convergence work is over, fleetIdle of two samples of every node.
const (
	fleetSettle = 30 * time.Second
	fleetIdle   = 60 * time.Second
)

// fleetSampleInterval is the cadence of the operator's visits to a converged
// cluster's nodes, the autoscaler's sample (an INFO that also serves as
// the cluster controller's probe between its safety passes), and so of
// the plain loop it is compared with.
var fleetSampleInterval = controller.DefaultOptions().SampleInterval

// BenchmarkFleet runs one operator process, as the image does, with many
// clusters created at once: 1x0 clusters in the numbers of
// $VALKEY_BENCH_FLEET_SIZES (default "50,200,400"), then
// $VALKEY_BENCH_FLEET_3X1 (default 50; 0 for none) clusters of 3x1. For each it
// measures the time to all Active, the operator's CPU, RSS, queue depth
// and reconcile times while converging, and, once settled, its idle CPU,
// RSS, API requests and the commands the nodes process, beside a plain
// PING loop over the same nodes. It prints the fleet goals next to the
// figures and asserts none of them.
func BenchmarkFleet(b *testing.B) {
	sizes, err := fleetSizes(os.Getenv("VALKEY_BENCH_FLEET_SIZES"))
	if err != nil {
		b.Fatal(err)
	}
	bin := buildOperatorBinary(b)
	ping := buildPingLoop(b)
	// The suite's in-process operator would reconcile the same clusters.
	stopOperator()
	defer func() {
		var err error
		if stopOperator, err = startOperator(context.Background()); err != nil {
			b.Fatalf("restarting the suite's operator: %v", err)
		}
	}()
	type run struct{ clusters, shards, replicas int }
	var runs []run
	for _, n := range sizes {
		runs = append(runs, run{n, 1, 0})
	}
	// "0" leaves the 3x1 row out.
	if os.Getenv("VALKEY_BENCH_FLEET_3X1") != "0" {
		runs = append(runs, run{envInt("VALKEY_BENCH_FLEET_3X1", 50), 3, 1})
	}
	for _, r := range runs {
		b.Run(fmt.Sprintf("%dx%d-%d", r.shards, r.replicas, r.clusters), func(b *testing.B) {
			for range b.N {
				measureFleet(b, bin, ping, r.clusters, r.shards, r.replicas)
			}
		})
	}
}

// fleetSizes parses a comma-separated list of cluster counts.
func fleetSizes(s string) ([]int, error) {
	if strings.TrimSpace(s) == "" {
		s = "50,200,400"
	}
	var out []int
	for f := range strings.SplitSeq(s, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 1 {
			return nil, fmt.Errorf("VALKEY_BENCH_FLEET_SIZES %q: %q is not a positive count", s, f)
		}
		out = append(out, n)
	}
	return out, nil
}

func measureFleet(b *testing.B, bin, ping string, n, shards, replicas int) {
	shape := fmt.Sprintf("%dx%d", shards, replicas)
	ns := benchNamespace(fmt.Sprintf("bench-fleet-%s-%d", shape, n))
	createNamespace(b, ns)
	// The small config a fleet of caches runs on.
	cfg := createConfig(b, "fleet-"+ns, "8.0.1", valkeyv1.ValkeyConfigSpec{
		Resources: &valkeyv1.Resources{CPU: "50m", Memory: "64Mi"},
		Valkey:    map[string]string{"maxmemory": "32mb"},
	})
	var profileAddr string
	args := strings.Fields(os.Getenv(fleetArgsEnv))
	if os.Getenv(fleetProfileEnv) != "" {
		profileAddr = freeAddr(b)
		args = append(args, "--pprof-bind-address", profileAddr)
	}
	op := startFootprintOperator(b, bin, args...)
	op.waitQuiet(b, 30*time.Second)
	b.Cleanup(func() { deleteClustersAndWait(b, 15*time.Minute, ns) })

	rec := record.Fleet{Shape: shape, Clusters: n, Nodes: n * shards * (1 + replicas),
		SettleSeconds: fleetSettle.Seconds(), PingIntervalSeconds: fleetSampleInterval.Seconds()}
	before, histBefore := op.sample(b), op.scrape(b)
	peakRSS := op.trackPeakRSS()
	peakDepth := op.trackQueueDepth("valkeycluster")
	start := time.Now()
	createFleet(b, ns, cfg, n, shards, replicas)
	eventually(b, 30*time.Minute, fmt.Sprintf("%d clusters Active", n), func() error {
		return allActive(ns, n)
	})
	rec.ActiveSeconds = time.Since(start).Seconds()
	converged, histAfter := op.sample(b), op.scrape(b)
	rec.ConvergingCPUSeconds = converged.cpu - before.cpu
	rec.ConvergingPeakRSSMiB = max(peakRSS(), converged.rssMiB)
	rec.PeakQueueDepth = peakDepth()
	reconcile := reconcileTimes(histBefore, histAfter, "valkeycluster")
	rec.ReconcileP50Ms, rec.ReconcileP99Ms = 1000*reconcile(0.5), 1000*reconcile(0.99)

	time.Sleep(fleetSettle) // the settling the idle window waits out
	addrs := nodeAddresses(b, ns, rec.Nodes)
	cmdBefore := commandStatsOf(b, addrs)
	idleStart := op.sample(b)
	profiled := profileIdle(b, profileAddr, fmt.Sprintf("fleet-%s-%03d", shape, n))
	time.Sleep(fleetIdle) // the idle window being measured
	idleEnd := op.sample(b)
	profiled()
	cmdAfter := commandStatsOf(b, addrs)
	rec.IdleSeconds = idleEnd.at.Sub(idleStart.at).Seconds()
	rec.IdleCPUSeconds = idleEnd.cpu - idleStart.cpu
	rec.IdleRSSMiB = idleEnd.rssMiB
	rec.IdleReconciles = int(idleEnd.reconciles - idleStart.reconciles)
	rec.IdleAPIRequests = int(idleEnd.apiRequests - idleStart.apiRequests)
	rec.IdleCommands = commandDelta(cmdBefore, cmdAfter, len(addrs))

	loop := measurePingLoop(b, ping, addrs, fleetIdle)
	rec.PingSeconds, rec.PingCPUSeconds, rec.PingRSSMiB = loop.seconds, loop.cpuSeconds, loop.rssMiB

	b.Logf("%d clusters of %s (%d nodes): all Active in %.1fs; converging %.1f CPU-s, peak RSS %.0f MiB, peak queue depth %.0f, reconcile p50 %.0f ms p99 %.0f ms",
		n, shape, rec.Nodes, rec.ActiveSeconds, rec.ConvergingCPUSeconds, rec.ConvergingPeakRSSMiB, rec.PeakQueueDepth, rec.ReconcileP50Ms, rec.ReconcileP99Ms)
	b.Logf("idle %.0fs: operator %.2f CPU-s (%.1f%% of a core), RSS %.0f MiB, %d reconciles, %.2f API requests per cluster per minute, %.2f Valkey commands per node per minute %v",
		rec.IdleSeconds, rec.IdleCPUSeconds, 100*rec.IdleCPUShare(), rec.IdleRSSMiB, rec.IdleReconciles,
		rec.APIRequestsPerClusterMinute(), rec.CommandsPerNodeMinute(), rec.IdleCommands)
	b.Logf("limit: a plain loop PINGing each node every %s used %.3f CPU-s over %.0fs (%.2f%% of a core), RSS %.0f MiB; %s",
		fleetSampleInterval, rec.PingCPUSeconds, rec.PingSeconds, 100*rec.PingCPUShare(), rec.PingRSSMiB, loop.summary)
	if shards == 1 && replicas == 0 {
		b.Logf("goals at %d clusters of 1x0 (set for 400): Active within 120s: %.1fs; idle CPU <= 5%%: %.1f%%; RSS <= 200 MiB: %.0f MiB; <= 2 API requests per idle cluster per minute: %.2f",
			n, rec.ActiveSeconds, 100*rec.IdleCPUShare(), max(rec.ConvergingPeakRSSMiB, rec.IdleRSSMiB), rec.APIRequestsPerClusterMinute())
	}
	saveRecord(b, fmt.Sprintf("fleet-%s-%03d", shape, n), record.File{Fleet: &rec})
	b.ReportMetric(rec.ActiveSeconds, "s-to-Active")
	b.ReportMetric(100*rec.IdleCPUShare(), "%core-idle")
	b.ReportMetric(rec.APIRequestsPerClusterMinute(), "API-req/cluster/min")
}

// fleetArgsEnv holds extra operator flags for the fleet benchmark, to
// compare settings such as --cluster-workers on the same machine.
const fleetArgsEnv = "VALKEY_BENCH_FLEET_ARGS"

// fleetProfileEnv names a directory where the fleet benchmark writes the
// operator's CPU profile of each idle window (go tool pprof reads it).
const fleetProfileEnv = "VALKEY_BENCH_FLEET_PROFILE"

// profileIdle starts taking a CPU profile of the idle window from the
// operator's pprof endpoint at addr, when there is one, and returns what
// waits for it and writes it as name.pprof, with the heap at the window's
// end as name.heap.pprof.
func profileIdle(b *testing.B, addr, name string) func() {
	if addr == "" {
		return func() {}
	}
	done := make(chan error, 1)
	go func() {
		done <- saveProfile(fmt.Sprintf("http://%s/debug/pprof/profile?seconds=%d", addr, int(fleetIdle.Seconds())), name+".pprof")
	}()
	return func() {
		err := <-done
		if err == nil {
			err = saveProfile(fmt.Sprintf("http://%s/debug/pprof/heap", addr), name+".heap.pprof")
		}
		if err != nil {
			b.Errorf("profiling the idle operator: %v", err)
		}
	}
}

// saveProfile writes what url answers into the profile directory as name.
func saveProfile(url, name string) error {
	resp, err := http.Get(url)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	f, err := os.Create(filepath.Join(os.Getenv(fleetProfileEnv), name))
	if err != nil {
		return err
	}
	_, err = io.Copy(f, resp.Body)
	return errors.Join(err, f.Close())
}

// createFleet creates n clusters at once, a few create calls at a time, as
// one kubectl apply of many objects would reach the apiserver.
func createFleet(b *testing.B, ns, cfg string, n, shards, replicas int) {
	b.Helper()
	var wg sync.WaitGroup
	errs := make(chan error, n)
	next := make(chan int)
	for range 8 {
		wg.Go(func() {
			for i := range next {
				vc := &valkeyv1.ValkeyCluster{
					ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: fmt.Sprintf("c%03d", i)},
					Spec:       valkeyv1.ValkeyClusterSpec{ConfigRef: cfg, Shards: int32(shards), ReplicasPerShard: int32(replicas)},
				}
				if err := k8sClient.Create(context.Background(), vc); err != nil {
					errs <- err
				}
			}
		})
	}
	for i := range n {
		next <- i
	}
	close(next)
	wg.Wait()
	close(errs)
	if err := <-errs; err != nil {
		b.Fatal(err)
	}
}

// nodeAddresses returns the client address of every Valkey pod of ns,
// which must number want.
func nodeAddresses(b *testing.B, ns string, want int) []string {
	b.Helper()
	var pods corev1.PodList
	if err := k8sClient.List(context.Background(), &pods, client.InNamespace(ns),
		client.MatchingLabels{valkeyv1.LabelName: valkeyv1.LabelNameValue}); err != nil {
		b.Fatal(err)
	}
	var out []string
	for _, p := range pods.Items {
		if p.Status.PodIP != "" {
			out = append(out, net.JoinHostPort(p.Status.PodIP, "6379"))
		}
	}
	if len(out) != want {
		b.Fatalf("%d Valkey pods with an address in %s, want %d", len(out), ns, want)
	}
	return out
}

// commandStatsOf reads every node's INFO commandstats.
func commandStatsOf(b *testing.B, addrs []string) []map[string]int {
	b.Helper()
	out := make([]map[string]int, len(addrs))
	for i, a := range addrs {
		stats, err := commandStats(a)
		if err != nil {
			b.Fatal(err)
		}
		out[i] = stats
	}
	return out
}

var cmdstatLine = regexp.MustCompile(`^cmdstat_([^:]+):calls=(\d+)`)

// commandStats sends one INFO commandstats over a connection of its own
// in plain RESP, so nothing but that one command reaches the node: no
// handshake, no client name, no keep-alive PING.
func commandStats(addr string) (map[string]int, error) {
	conn, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		return nil, err
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := io.WriteString(conn, "*2\r\n$4\r\nINFO\r\n$12\r\ncommandstats\r\n"); err != nil {
		return nil, fmt.Errorf("INFO commandstats on %s: %w", addr, err)
	}
	r := bufio.NewReader(conn)
	head, err := r.ReadString('\n')
	if err != nil {
		return nil, fmt.Errorf("INFO commandstats on %s: %w", addr, err)
	}
	size, err := strconv.Atoi(strings.TrimSpace(strings.TrimPrefix(head, "$")))
	if !strings.HasPrefix(head, "$") || err != nil {
		return nil, fmt.Errorf("INFO commandstats on %s: answered %q", addr, strings.TrimSpace(head))
	}
	body := make([]byte, size)
	if _, err := io.ReadFull(r, body); err != nil {
		return nil, fmt.Errorf("INFO commandstats on %s: %w", addr, err)
	}
	stats := map[string]int{}
	for line := range strings.SplitSeq(string(body), "\n") {
		if m := cmdstatLine.FindStringSubmatch(strings.TrimSpace(line)); m != nil {
			stats[m[1]], _ = strconv.Atoi(m[2])
		}
	}
	return stats, nil
}

// commandDelta sums what the nodes processed between two reads. The
// first read's INFO is counted by the second; the second counts itself
// only afterwards. REPLCONF is a replica's acknowledgement to its primary,
// every second, never the operator's.
func commandDelta(before, after []map[string]int, nodes int) map[string]int {
	out := map[string]int{}
	for i := range after {
		for name, n := range after[i] {
			out[name] += n - before[i][name]
		}
	}
	out["info"] -= nodes
	delete(out, "replconf")
	for name, n := range out {
		if n <= 0 {
			delete(out, name)
		}
	}
	return out
}

// pingLoopRun is what the plain loop cost over its window.
type pingLoopRun struct {
	seconds, cpuSeconds, rssMiB float64
	summary                     string
}

// measurePingLoop runs bench/pingloop against addrs over window, from the
// moment every connection is open.
func measurePingLoop(b *testing.B, bin string, addrs []string, window time.Duration) pingLoopRun {
	b.Helper()
	cmd := exec.Command(bin, append([]string{"-interval", fleetSampleInterval.String()}, addrs...)...)
	cmd.Stderr = os.Stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	out, err := cmd.StdoutPipe()
	if err != nil {
		b.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	lines := bufio.NewScanner(out)
	if !lines.Scan() || lines.Text() != "ready" {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		b.Fatalf("pingloop did not connect: %q", lines.Text())
	}
	from, err := procStatsOf(cmd.Process.Pid)
	if err != nil {
		b.Fatal(err)
	}
	time.Sleep(window) // the window being measured
	to, err := procStatsOf(cmd.Process.Pid)
	if err != nil {
		b.Fatal(err)
	}
	_ = cmd.Process.Signal(syscall.SIGTERM)
	var summary []string
	for lines.Scan() {
		summary = append(summary, lines.Text())
	}
	if err := cmd.Wait(); err != nil {
		b.Fatalf("pingloop: %v", err)
	}
	return pingLoopRun{seconds: to.at.Sub(from.at).Seconds(), cpuSeconds: to.cpu - from.cpu, rssMiB: to.rssMiB,
		summary: strings.Join(summary, "; ")}
}

// buildPingLoop builds bench/pingloop.
func buildPingLoop(b *testing.B) string {
	b.Helper()
	out := filepath.Join(b.TempDir(), "pingloop")
	cmd := exec.Command("go", "build", "-o", out, "../../bench/pingloop")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if msg, err := cmd.CombinedOutput(); err != nil {
		b.Fatalf("building pingloop: %v\n%s", err, msg)
	}
	return out
}

// scrape reads every sample of the operator's /metrics, by series.
func (op footprintOperator) scrape(b *testing.B) map[string]float64 {
	b.Helper()
	samples, err := scrapeMetrics(op.metrics)
	if err != nil {
		b.Fatal(err)
	}
	return samples
}

func scrapeMetrics(addr string) (map[string]float64, error) {
	resp, err := http.Get("http://" + addr + "/metrics")
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	out := map[string]float64{}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "#") {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		if i < 0 {
			continue
		}
		if v, err := strconv.ParseFloat(line[i+1:], 64); err == nil {
			out[line[:i]] = v
		}
	}
	return out, sc.Err()
}

// trackQueueDepth samples a controller's workqueue_depth every second
// until the returned function is called, which returns the highest seen.
func (op footprintOperator) trackQueueDepth(controller string) func() float64 {
	var mu sync.Mutex
	peak := 0.0
	stop, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		for {
			if samples, err := scrapeMetrics(op.metrics); err == nil {
				// One series per priority: the queue holds their sum.
				depth := 0.0
				for series, v := range samples {
					if strings.HasPrefix(series, "workqueue_depth{") && strings.Contains(series, `name="`+controller+`"`) {
						depth += v
					}
				}
				mu.Lock()
				peak = max(peak, depth)
				mu.Unlock()
			}
			select {
			case <-stop:
				return
			case <-time.After(time.Second):
			}
		}
	}()
	return func() float64 {
		close(stop)
		<-done
		mu.Lock()
		defer mu.Unlock()
		return peak
	}
}

var bucketBound = regexp.MustCompile(`le="([^"]+)"`)

// reconcileTimes returns the quantiles of a controller's reconcile times
// between two scrapes, as the upper bound of the histogram bucket that
// holds each (the largest finite bound when only +Inf does; 0 without a
// reconcile).
func reconcileTimes(before, after map[string]float64, controller string) func(q float64) float64 {
	type bucket struct{ le, n float64 }
	var buckets []bucket
	for series, v := range after {
		if !strings.HasPrefix(series, "controller_runtime_reconcile_time_seconds_bucket{") ||
			!strings.Contains(series, `controller="`+controller+`"`) {
			continue
		}
		m := bucketBound.FindStringSubmatch(series)
		if m == nil {
			continue
		}
		le, err := strconv.ParseFloat(m[1], 64)
		if err != nil {
			continue
		}
		buckets = append(buckets, bucket{le, v - before[series]})
	}
	slices.SortFunc(buckets, func(a, b bucket) int { return cmp.Compare(a.le, b.le) })
	return func(q float64) float64 {
		if len(buckets) == 0 || buckets[len(buckets)-1].n == 0 {
			return 0
		}
		total, finite := buckets[len(buckets)-1].n, 0.0
		for _, bk := range buckets {
			if !math.IsInf(bk.le, 1) {
				finite = bk.le
			}
			if bk.n >= q*total {
				return finite
			}
		}
		return finite
	}
}

// deleteClustersAndWait deletes every cluster of the namespaces and waits
// until no cluster, node or pod is left in them, nor any process of one.
func deleteClustersAndWait(t testing.TB, timeout time.Duration, namespaces ...string) {
	t.Helper()
	ctx := context.Background()
	deleted := map[string]bool{}
	eventually(t, timeout, "every cluster of "+strings.Join(namespaces, ", ")+" gone", func() error {
		for _, ns := range namespaces {
			// A collection delete of hundreds of clusters can outlast the
			// apiserver's request timeout; what it did stays done.
			if !deleted[ns] {
				if err := k8sClient.DeleteAllOf(ctx, &valkeyv1.ValkeyCluster{}, client.InNamespace(ns)); err != nil {
					return fmt.Errorf("deleting the clusters of %s: %w", ns, err)
				}
				deleted[ns] = true
			}
			var pods corev1.PodList
			var clusters valkeyv1.ValkeyClusterList
			var nodes valkeyv1.ValkeyNodeList
			for _, l := range []client.ObjectList{&pods, &clusters, &nodes} {
				if err := k8sClient.List(ctx, l, client.InNamespace(ns)); err != nil {
					return err
				}
			}
			if left := len(pods.Items) + len(clusters.Items) + len(nodes.Items); left > 0 {
				return fmt.Errorf("%s: %d pods, %d clusters, %d nodes left", ns, len(pods.Items), len(clusters.Items), len(nodes.Items))
			}
		}
		return nil
	})
	for _, ns := range namespaces {
		assertNoProcesses(t, ns)
	}
}
