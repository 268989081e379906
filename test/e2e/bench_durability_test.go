package e2e

import (
	"bytes"
	"cmp"
	"context"
	"crypto/rand"
	"encoding/csv"
	"fmt"
	"net"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/valkey-io/valkey-go"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"sigs.k8s.io/controller-runtime/pkg/client"

	valkeyv1 "github.com/gomomento/valkey-operator/api/v1alpha1"
	"github.com/gomomento/valkey-operator/bench/record"
	"github.com/gomomento/valkey-operator/internal/render"
	"github.com/gomomento/valkey-operator/internal/topology"
	vk "github.com/gomomento/valkey-operator/internal/valkey"
)

// The durability benchmark's fixed settings: the values of the restarted
// data set, and valkey-benchmark's clients and value size.
const (
	durableValueBytes   = 10 * 1024
	durableVersion      = "8.0.1" // newDurableCluster's; valkey-server on the PATH is the same
	durableBenchClients = 16
	durableBenchBytes   = 100
)

// BenchmarkDurability measures the persistent mode against its limit, a
// plain valkey-server with the same append-only settings on this machine:
//
//   - restart: a persistent cluster (3x1, 16x1) holding
//     $VALKEY_BENCH_DURABLE_MB (1024) MiB of 10 KiB values has every pod
//     deleted at once; the time to converged with every key is put beside
//     a plain server's reload of one primary's share from its file;
//   - writes: valkey-benchmark's SETs ($VALKEY_BENCH_DURABLE_REQUESTS,
//     50,000) against a persistent 1x0 cluster's primary with appendfsync
//     always and everysec, and against a cluster in memory only, each
//     followed at once by the same run against a plain server.
func BenchmarkDurability(b *testing.B) {
	total := int64(envInt("VALKEY_BENCH_DURABLE_MB", 1024)) << 20
	requests := envInt("VALKEY_BENCH_DURABLE_REQUESTS", 50000)
	for _, shards := range []int{3, 16} {
		b.Run(fmt.Sprintf("restart-%dx1", shards), func(b *testing.B) {
			for range b.N {
				r := durableRestart(b, shards, 1, total)
				ratio := r.Seconds / r.PlainLoadSeconds
				b.Logf("%dx%d, %d MiB (%d keys), appendfsync %s: converged with every key %.1fs after deleting every pod; plain valkey-server loads one primary's %d MiB in %.2fs: %.1f×",
					r.Shards, r.Replicas, r.DataBytes>>20, r.Keys, r.Appendfsync, r.Seconds, r.DataBytes/int64(r.Shards)>>20, r.PlainLoadSeconds, ratio)
				b.ReportMetric(r.Seconds, "s-to-converged")
				b.ReportMetric(r.PlainLoadSeconds, "s-plain-load")
				saveRecord(b, fmt.Sprintf("durable-restart-%02dx%d", shards, 1), record.File{DurableRestart: &r})
			}
		})
	}
	b.Run("writes", func(b *testing.B) {
		for range b.N {
			for i, mode := range []valkeyv1.AppendFsync{valkeyv1.AppendFsyncAlways, valkeyv1.AppendFsyncEverysec, ""} {
				r := durableWrites(b, mode, requests)
				what := "appendfsync " + r.Appendfsync
				if mode == "" {
					what = "in memory"
				}
				b.Logf("%s: cluster primary %.0f SET/s, plain valkey-server %.0f SET/s: %.2f×", what, r.ClusterRPS, r.PlainRPS, r.ClusterRPS/r.PlainRPS)
				b.ReportMetric(r.ClusterRPS/r.PlainRPS, fmt.Sprintf("ratio-%s", cmp.Or(string(mode), "memory")))
				saveRecord(b, fmt.Sprintf("durable-writes-%d", i), record.File{DurableWrites: &r})
			}
		}
	})
}

// durableRestart fills a persistent cluster, deletes every pod at once and
// times its return with every key; then, with the cluster gone, times a
// plain server's reload of one primary's share.
func durableRestart(b *testing.B, shards, replicas int, total int64) record.DurableRestart {
	mode := valkeyv1.AppendFsyncEverysec
	share := total / int64(shards)
	keys := int(total / durableValueBytes)
	ns := benchNamespace(fmt.Sprintf("bench-durable-%dx%d", shards, replicas))
	key := newDurableCluster(b, ns, shards, replicas, withFsync(mode),
		// Room for the share and Valkey's own overhead per key; the volume
		// holds the file and a rewrite's second copy.
		withValkeySetting("maxmemory", fmt.Sprintf("%dmb", 2*share>>20+64)),
		withVolumeSize(*resource.NewQuantity(max(1<<30, 4*share), resource.BinarySI)))
	c := clusterClient(b, seedOf(key), nil)
	value := randomValue(b, durableValueBytes)
	start := time.Now()
	writeValues(b, c, keys, value)
	waitReplicated(b, c)
	b.Logf("wrote %d keys of %d bytes in %s", keys, durableValueBytes, time.Since(start).Round(100*time.Millisecond))

	ctx := context.Background()
	members := sorted(getCluster(b, key).Status.Nodes)
	old := map[string]string{}
	for name, p := range clusterPods(b, key) {
		old[name] = string(p.UID)
	}
	deleted := time.Now()
	if err := k8sClient.DeleteAllOf(ctx, &corev1.Pod{}, client.InNamespace(ns),
		client.MatchingLabels(render.ClusterSelector(key.Name))); err != nil {
		b.Fatalf("deleting every pod of %s: %v", key, err)
	}
	// The status and the old pods say nothing of the restart until every
	// node runs again: only the new pods and the nodes themselves do.
	eventually(b, 10*time.Minute, "every node back with a new running pod", func() error {
		for _, name := range members {
			var p corev1.Pod
			if err := k8sClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, &p); err != nil {
				return err
			}
			if string(p.UID) == old[name] || p.Status.Phase != corev1.PodRunning || p.Status.PodIP == "" {
				return fmt.Errorf("%s: %s", name, podPhase(ns, name))
			}
		}
		return nil
	})
	eventually(b, 10*time.Minute, "every node reaching every other at its new address", func() error {
		return reformed(ns, members)
	})
	waitConverged(b, key, shards, replicas, 10*time.Minute)
	eventually(b, 5*time.Minute, "every key served by a primary", func() error {
		n, err := primaryKeys(b, key)
		if err == nil && n != keys {
			err = fmt.Errorf("%d of %d keys", n, keys)
		}
		return err
	})
	seconds := time.Since(deleted).Seconds()
	// The limit runs with the machine to itself.
	deleteCluster(b, key)
	return record.DurableRestart{
		Version: durableVersion, Shards: shards, Replicas: replicas, Appendfsync: string(mode),
		DataBytes: total, Keys: keys, ValueBytes: durableValueBytes, Seconds: seconds,
		PlainLoadSeconds: plainAOFLoad(b, mode, int(share/durableValueBytes), value),
	}
}

// randomValue is one value that no compression shrinks, as a rewritten
// file's RDB preamble would shrink a repeated byte.
func randomValue(b testing.TB, size int) string {
	buf := make([]byte, size)
	if _, err := rand.Read(buf); err != nil {
		b.Fatal(err)
	}
	return string(buf)
}

// writeValues writes keys keys of value, pipelined in batches of about a
// megabyte from four writers at once.
func writeValues(b testing.TB, c valkey.Client, keys int, value string) {
	b.Helper()
	batch := max(1, (1<<20)/len(value))
	next := make(chan int)
	errs := make(chan error, 4)
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			for i := range next {
				cmds := make(valkey.Commands, 0, batch)
				for j := i; j < min(i+batch, keys); j++ {
					cmds = append(cmds, c.B().Set().Key(dataSetKey(j)).Value(value).Build())
				}
				for _, res := range c.DoMulti(context.Background(), cmds...) {
					if err := res.Error(); err != nil {
						select {
						case errs <- err:
						default:
						}
						return
					}
				}
			}
		})
	}
	for i := 0; i < keys; i += batch {
		select {
		case err := <-errs:
			close(next)
			wg.Wait()
			b.Fatalf("writing the data set: %v", err)
		case next <- i:
		}
	}
	close(next)
	wg.Wait()
	select {
	case err := <-errs:
		b.Fatalf("writing the data set: %v", err)
	default:
	}
}

// primaryKeys adds up the keys of the cluster's primaries.
func primaryKeys(b testing.TB, key client.ObjectKey) (int, error) {
	total := 0
	for _, sh := range getCluster(b, key).Status.ShardStatuses {
		n, err := dialPod(key.Namespace, sh.Primary)
		if err != nil {
			return 0, err
		}
		k, err := keysOf(n)
		n.Close()
		if err != nil {
			return 0, fmt.Errorf("%s: %w", sh.Primary, err)
		}
		total += k
	}
	return total, nil
}

// keysOf is a node's DBSIZE, read from INFO keyspace (db0:keys=N,...).
func keysOf(n *vk.Node) (int, error) {
	info, err := n.Info(context.Background(), "keyspace")
	if err != nil {
		return 0, err
	}
	db0 := info["keyspace"]["db0"]
	if db0 == "" {
		return 0, nil
	}
	var keys int
	if _, err := fmt.Sscanf(db0, "keys=%d", &keys); err != nil {
		return 0, fmt.Errorf("keyspace %q: %w", db0, err)
	}
	return keys, nil
}

// plainServer is a valkey-server process of its own, as a one-node cluster
// owning every slot when cluster mode is on.
type plainServer struct {
	args []string
	addr string
	cmd  *exec.Cmd
}

func newPlainServer(b *testing.B, mode valkeyv1.AppendFsync) *plainServer {
	b.Helper()
	dir := b.TempDir()
	port := freePortPair(b)
	appendonly := "no"
	if mode != "" {
		appendonly = "yes"
	}
	s := &plainServer{
		args: []string{"--bind", "127.0.0.1", "--port", strconv.Itoa(port), "--dir", dir, "--save", "",
			"--appendonly", appendonly, "--appendfsync", cmp.Or(string(mode), "everysec"),
			"--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf",
			"--logfile", filepath.Join(dir, "valkey.log")},
		addr: net.JoinHostPort("127.0.0.1", strconv.Itoa(port)),
	}
	b.Cleanup(s.kill)
	s.start(b)
	s.waitReady(b)
	n := s.dial(b)
	defer n.Close()
	if err := n.ClusterAddSlotsRange(context.Background(), vk.SlotRange{Start: 0, End: topology.TotalSlots - 1}); err != nil {
		b.Fatalf("assigning every slot to %s: %v", s.addr, err)
	}
	eventually(b, 30*time.Second, "the plain server serving every slot", func() error {
		info, err := n.ClusterInfo(context.Background())
		if err == nil && !info.OK() {
			err = fmt.Errorf("cluster_state:%s", info.State)
		}
		return err
	})
	return s
}

func (s *plainServer) start(b *testing.B) {
	b.Helper()
	s.cmd = exec.Command("valkey-server", s.args...)
	// Should this process die, the server must not outlive it.
	s.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := s.cmd.Start(); err != nil {
		b.Fatal(err)
	}
}

// waitReady polls every 10 ms until the server answers PING with its
// file loaded.
func (s *plainServer) waitReady(b *testing.B) {
	b.Helper()
	deadline := time.Now().Add(10 * time.Minute)
	var err error
	for time.Now().Before(deadline) {
		if err = s.ready(); err == nil {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	b.Fatalf("valkey-server on %s not ready: %v", s.addr, err)
}

func (s *plainServer) ready() error {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	n, err := vk.Dial(ctx, vk.Target{Address: s.addr})
	if err != nil {
		return err
	}
	defer n.Close()
	if err := n.Ping(ctx); err != nil {
		return err
	}
	info, err := n.Info(ctx, "persistence")
	if err != nil {
		return err
	}
	if l := info["persistence"]["loading"]; l != "0" {
		return fmt.Errorf("loading:%s", l)
	}
	return nil
}

func (s *plainServer) dial(b *testing.B) *vk.Node {
	b.Helper()
	n, err := vk.Dial(context.Background(), vk.Target{Address: s.addr})
	if err != nil {
		b.Fatal(err)
	}
	return n
}

// stop ends the server as a pod's stop does (SIGTERM: it flushes its
// file) and waits for it to exit.
func (s *plainServer) stop(b *testing.B) {
	b.Helper()
	if err := s.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		b.Fatal(err)
	}
	_ = s.cmd.Wait()
	s.cmd = nil
}

func (s *plainServer) kill() {
	if s.cmd != nil {
		_ = s.cmd.Process.Kill()
		_ = s.cmd.Wait()
	}
}

// plainAOFLoad writes keys of value to a plain server with appendfsync
// mode, stops it, and times its start again up to PING with loading:0.
func plainAOFLoad(b *testing.B, mode valkeyv1.AppendFsync, keys int, value string) float64 {
	b.Helper()
	s := newPlainServer(b, mode)
	c, err := valkey.NewClient(valkey.ClientOption{InitAddress: []string{s.addr}, DisableCache: true})
	if err != nil {
		b.Fatal(err)
	}
	writeValues(b, c, keys, value)
	c.Close()
	s.stop(b)
	start := time.Now()
	s.start(b)
	s.waitReady(b)
	seconds := time.Since(start).Seconds()
	n := s.dial(b)
	defer n.Close()
	if got, err := keysOf(n); err != nil || got != keys {
		b.Fatalf("the plain server came back with %d of %d keys (%v)", got, keys, err)
	}
	s.stop(b)
	return seconds
}

// durableWrites runs valkey-benchmark against a 1x0 cluster's primary,
// persistent with appendfsync mode or in memory only when mode is empty,
// then against a plain server with the same settings.
func durableWrites(b *testing.B, mode valkeyv1.AppendFsync, requests int) record.DurableWrites {
	ns := benchNamespace("bench-durable-writes")
	var key client.ObjectKey
	if mode == "" {
		key = newPlainCluster(b, ns, "cache", 1, 0)
	} else {
		key = newDurableCluster(b, ns, 1, 0, withFsync(mode))
	}
	pod := clusterPods(b, key)[getCluster(b, key).Status.ShardStatuses[0].Primary]
	r := record.DurableWrites{Version: durableVersion, Appendfsync: string(mode), Requests: requests,
		Clients: durableBenchClients, ValueBytes: durableBenchBytes}
	r.ClusterRPS = valkeyBenchmarkSET(b, pod.Status.PodIP, 6379, requests)
	s := newPlainServer(b, mode)
	r.PlainRPS = valkeyBenchmarkSET(b, "127.0.0.1", mustPort(b, s.addr), requests)
	s.stop(b)
	deleteCluster(b, key)
	return r
}

func mustPort(b *testing.B, addr string) int {
	_, p, err := net.SplitHostPort(addr)
	if err != nil {
		b.Fatal(err)
	}
	port, err := strconv.Atoi(p)
	if err != nil {
		b.Fatal(err)
	}
	return port
}

// valkeyBenchmarkSET runs valkey-benchmark's SET test and returns its
// requests per second.
func valkeyBenchmarkSET(b *testing.B, host string, port, requests int) float64 {
	b.Helper()
	var out, errOut bytes.Buffer
	cmd := exec.Command("valkey-benchmark", "-h", host, "-p", strconv.Itoa(port), "-t", "set",
		"-n", strconv.Itoa(requests), "-c", strconv.Itoa(durableBenchClients), "-d", strconv.Itoa(durableBenchBytes), "--csv")
	cmd.Stdout, cmd.Stderr = &out, &errOut
	if err := cmd.Run(); err != nil {
		b.Fatalf("valkey-benchmark against %s:%d: %v\n%s", host, port, err, tail(errOut.Bytes(), 2000))
	}
	rows, err := csv.NewReader(&out).ReadAll()
	if err != nil {
		b.Fatalf("valkey-benchmark output %q: %v", out.String(), err)
	}
	for _, row := range rows {
		if len(row) > 1 && row[0] == "SET" {
			rps, err := strconv.ParseFloat(row[1], 64)
			if err != nil {
				b.Fatalf("valkey-benchmark rps %q: %v", row[1], err)
			}
			return rps
		}
	}
	b.Fatalf("no SET line in valkey-benchmark's output %q", out.String())
	return 0
}
