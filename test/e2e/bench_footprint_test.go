package e2e

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	valkeyv1 "github.com/gomomento/valkey-operator/api/v1alpha1"
	"github.com/gomomento/valkey-operator/bench/record"
	"github.com/gomomento/valkey-operator/internal/controller"
)

// footprintIdle is the idle window: one sample of every node.
var footprintIdle = controller.DefaultOptions().SampleInterval

// BenchmarkFootprint runs the operator as its own process, as the image
// does, against the local control plane, and measures its memory and CPU
// while 1, 10 and 50 clusters (1x0, plaintext) converge from nothing, then
// over an idle window; and the API requests it makes per reconcile, from
// its own /metrics.
func BenchmarkFootprint(b *testing.B) {
	bin := buildOperatorBinary(b)
	// The suite's in-process operator would reconcile the same clusters.
	stopOperator()
	defer func() {
		var err error
		if stopOperator, err = startOperator(context.Background()); err != nil {
			b.Fatalf("restarting the suite's operator: %v", err)
		}
	}()
	for _, n := range []int{1, 10, 50} {
		b.Run(fmt.Sprintf("clusters-%d", n), func(b *testing.B) {
			for range b.N {
				measureFootprint(b, bin, n)
			}
		})
	}
}

func measureFootprint(b *testing.B, bin string, n int) {
	ns := benchNamespace(fmt.Sprintf("bench-footprint-%d", n))
	createNamespace(b, ns)
	cfg := createMenu(b, ns)
	op := startFootprintOperator(b, bin)
	op.waitQuiet(b, 30*time.Second)

	peak := op.trackPeakRSS()
	before := op.sample(b)
	for i := range n {
		vc := &valkeyv1.ValkeyCluster{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: fmt.Sprintf("c%d", i)},
			Spec:       valkeyv1.ValkeyClusterSpec{ConfigRef: cfg, Shards: 1},
		}
		if err := k8sClient.Create(context.Background(), vc); err != nil {
			b.Fatal(err)
		}
	}
	eventually(b, 10*time.Minute, fmt.Sprintf("%d clusters Active", n), func() error {
		return allActive(ns, n)
	})
	converged := op.sample(b)
	conv := footprintBetween(n, "converging", before, converged, peak())
	op.waitQuiet(b, 15*time.Second)

	peak = op.trackPeakRSS()
	idleStart := op.sample(b)
	time.Sleep(footprintIdle) // the idle window being measured
	idle := footprintBetween(n, "idle", idleStart, op.sample(b), peak())

	for _, f := range []record.Footprint{conv, idle} {
		b.Logf("%d clusters %s: %.1fs, %.2f CPU-s, RSS %.1f MiB (peak %.1f), %d reconciles, %d API requests",
			n, f.Phase, f.Seconds, f.CPUSeconds, f.RSSMiB, f.PeakRSSMiB, f.Reconciles, f.APIRequests)
		saveRecord(b, fmt.Sprintf("footprint-%02d-%s", n, f.Phase), record.File{Footprint: &f})
	}
	b.ReportMetric(conv.CPUSeconds, "CPU-s-converging")
	b.ReportMetric(idle.RSSMiB, "MiB-RSS-idle")

	deleteClustersAndWait(b, 5*time.Minute, ns)
}

func footprintBetween(clusters int, phase string, from, to procSample, peakRSS float64) record.Footprint {
	return record.Footprint{
		Clusters: clusters, Phase: phase,
		Seconds:     to.at.Sub(from.at).Seconds(),
		CPUSeconds:  to.cpu - from.cpu,
		RSSMiB:      to.rssMiB,
		PeakRSSMiB:  max(peakRSS, to.rssMiB),
		Reconciles:  int(to.reconciles - from.reconciles),
		APIRequests: int(to.apiRequests - from.apiRequests),
	}
}

// footprintOperator is the operator running as a process of its own,
// without leader election, whose lease renewals would count as its
// API requests.
type footprintOperator struct{ *operatorProcess }

func startFootprintOperator(b *testing.B, bin string, args ...string) footprintOperator {
	b.Helper()
	p := &operatorProcess{name: "footprint", metrics: freeAddr(b), log: filepath.Join(b.TempDir(), "operator.log")}
	logFile, err := os.Create(p.log)
	if err != nil {
		b.Fatal(err)
	}
	p.cmd = exec.Command(bin, append([]string{"--metrics-bind-address", p.metrics, "--metrics-secure=false",
		"--health-probe-bind-address", freeAddr(b)}, args...)...)
	p.cmd.Env = append(os.Environ(), "KUBECONFIG="+local.Kubeconfig)
	p.cmd.Stdout, p.cmd.Stderr = logFile, logFile
	// Should this process die, the operator must not outlive it.
	p.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := p.cmd.Start(); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		p.stop(b)
		logFile.Close()
		if b.Failed() {
			if msg, err := os.ReadFile(p.log); err == nil {
				b.Logf("operator log:\n%s", tail(msg, 8000))
			}
		}
	})
	eventually(b, time.Minute, "the operator's controllers on /metrics", func() error {
		if _, ok := p.metric("controller_runtime_reconcile_total"); !ok {
			return fmt.Errorf("no reconcile counter yet")
		}
		return nil
	})
	return footprintOperator{p}
}

type procSample struct {
	at                      time.Time
	cpu                     float64 // user + system CPU-seconds
	rssMiB                  float64
	reconciles, apiRequests float64
}

func (op footprintOperator) sample(b *testing.B) procSample {
	b.Helper()
	s, err := op.procStats()
	if err != nil {
		b.Fatal(err)
	}
	s.reconciles, _ = op.metric("controller_runtime_reconcile_total")
	s.apiRequests, _ = op.metric("rest_client_requests_total")
	return s
}

// procStats reads the process's CPU time from /proc/PID/stat (fields 14
// and 15, in clock ticks of 1/100 s on Linux) and its RSS from
// /proc/PID/status.
func (op footprintOperator) procStats() (procSample, error) {
	return procStatsOf(op.cmd.Process.Pid)
}

// procStatsOf is procStats of any process.
func procStatsOf(pid int) (procSample, error) {
	s := procSample{at: time.Now()}
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return s, err
	}
	// The command name may hold spaces; the fields after it do not.
	fields := strings.Fields(string(stat[strings.LastIndexByte(string(stat), ')')+1:]))
	utime, _ := strconv.ParseFloat(fields[11], 64)
	stime, _ := strconv.ParseFloat(fields[12], 64)
	s.cpu = (utime + stime) / 100
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return s, err
	}
	for line := range strings.SplitSeq(string(status), "\n") {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, _ := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 64)
			s.rssMiB = kb / 1024
		}
	}
	return s, nil
}

// trackPeakRSS samples the RSS until the returned function is called,
// which returns the highest value seen.
func (op footprintOperator) trackPeakRSS() func() float64 {
	var mu sync.Mutex
	peak := 0.0
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			if s, err := op.procStats(); err == nil {
				mu.Lock()
				peak = max(peak, s.rssMiB)
				mu.Unlock()
			}
			select {
			case <-stop:
				return
			case <-time.After(100 * time.Millisecond):
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

// waitQuiet waits, at most limit, until the process uses under 5% of a
// core over half a second: start-up or convergence work has ended.
func (op footprintOperator) waitQuiet(b *testing.B, limit time.Duration) {
	b.Helper()
	deadline := time.Now().Add(limit)
	prev, err := op.procStats()
	if err != nil {
		b.Fatal(err)
	}
	for time.Now().Before(deadline) {
		time.Sleep(500 * time.Millisecond)
		cur, err := op.procStats()
		if err != nil {
			b.Fatal(err)
		}
		if (cur.cpu-prev.cpu)/cur.at.Sub(prev.at).Seconds() < 0.05 {
			return
		}
		prev = cur
	}
}

// allActive says whether all n clusters in ns are Active with every slot
// assigned.
func allActive(ns string, n int) error {
	var list valkeyv1.ValkeyClusterList
	if err := k8sClient.List(context.Background(), &list, client.InNamespace(ns)); err != nil {
		return err
	}
	active := 0
	for _, vc := range list.Items {
		if vc.Status.State == valkeyv1.StateActive && vc.Status.SlotsAssigned == 16384 {
			active++
		}
	}
	if active != n {
		return fmt.Errorf("%d of %d Active", active, n)
	}
	return nil
}
