package e2e

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/valkey-io/valkey-go"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	valkeyv1 "github.com/gomomento/valkey-operator/api/v1alpha1"
	"github.com/gomomento/valkey-operator/bench/record"
	"github.com/gomomento/valkey-operator/internal/testbin"
	vk "github.com/gomomento/valkey-operator/internal/valkey"
)

// reshardValueBytes is the size of every value of the data set.
const reshardValueBytes = 1024

// BenchmarkResharding moves a data set of 1 KiB values from 3 shards onto
// a fourth, empty one and back, on this machine: by the operator
// (spec.shards 3 -> 4 -> 3) on Valkey 8 (classic MIGRATE) and by
// valkey-cli --cluster rebalance on plain valkey-server 8 processes
// ($VALKEY_BENCH_RESHARD_KEYS keys, default 300,000); by the operator on
// Valkey 9 (CLUSTER MIGRATESLOTS) and by hand-issued CLUSTER MIGRATESLOTS
// on plain Valkey 9 processes, the limit ($VALKEY_BENCH_RESHARD_KEYS_9,
// default 1,000,000: a gigabyte). All are watched the same way, by polling
// the fourth shard, under the same client load.
func BenchmarkResharding(b *testing.B) {
	keys8 := envInt("VALKEY_BENCH_RESHARD_KEYS", 300000)
	keys9 := envInt("VALKEY_BENCH_RESHARD_KEYS_9", 1000000)
	for _, method := range []struct {
		name string
		keys int
		run  func(b *testing.B, keys int) []record.Resharding
	}{
		{"operator", keys8, func(b *testing.B, keys int) []record.Resharding { return reshardWithOperator(b, keys, "8.0.1") }},
		{"valkey-cli", keys8, reshardWithValkeyCLI},
		{"operator-9", keys9, func(b *testing.B, keys int) []record.Resharding { return reshardWithOperator(b, keys, "9.1.2") }},
		{"migrateslots", keys9, reshardWithMigrateSlots},
	} {
		b.Run(method.name, func(b *testing.B) {
			for range b.N {
				for i, r := range method.run(b, method.keys) {
					keysPerSecond := float64(r.KeysMoved) / r.MigrationSeconds
					b.Logf("%s %s: %d of %d keys (%d slots) in %.1fs of migration, %.0f keys/s, %.2f MB/s; %.1fs in all; load: %d of %d requests failed, longest write gap %.0f ms",
						r.Method, r.Direction, r.KeysMoved, r.Keys, r.SlotsMoved, r.MigrationSeconds,
						keysPerSecond, float64(r.BytesMoved)/1e6/r.MigrationSeconds, r.TotalSeconds,
						r.Failed, r.Requests, r.LongestGapMs)
					b.ReportMetric(keysPerSecond, fmt.Sprintf("keys/s-%d", i))
					saveRecord(b, fmt.Sprintf("resharding-%s-%d", r.Method, i), record.File{Resharding: &r})
				}
			}
		})
	}
}

// Directions of the two moves every method makes.
const (
	reshardOut = "3 → 4"
	reshardIn  = "4 → 3"
)

func reshardWithOperator(b *testing.B, keys int, version string) []record.Resharding {
	ns := benchNamespace("bench-reshard")
	createNamespace(b, ns)
	method := "operator"
	if version != "8.0.1" {
		method = "operator-" + strings.Split(version, ".")[0]
	}
	// The menu's 64mb would not hold the data set.
	cfgName := createConfig(b, ns+"-data", version, valkeyv1.ValkeyConfigSpec{Valkey: map[string]string{"maxmemory": "1gb"}})
	vc := &valkeyv1.ValkeyCluster{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "data"},
		Spec: valkeyv1.ValkeyClusterSpec{ConfigRef: cfgName, Shards: 3}}
	if err := k8sClient.Create(context.Background(), vc); err != nil {
		b.Fatal(err)
	}
	key := client.ObjectKeyFromObject(vc)
	old := waitConverged(b, key, 3, 0, 5*time.Minute).Status.Nodes
	c := clusterClient(b, seedOf(key), nil)
	writeDataSet(b, c, keys)

	var fourth string
	dial := func() (*vk.Node, error) {
		if fourth == "" {
			var pods corev1.PodList
			if err := k8sClient.List(context.Background(), &pods, client.InNamespace(ns)); err != nil {
				return nil, err
			}
			for _, p := range pods.Items {
				if !slices.Contains(old, p.Name) && p.Status.PodIP != "" {
					fourth = p.Name
				}
			}
			if fourth == "" {
				return nil, fmt.Errorf("no new pod yet")
			}
		}
		return dialPod(ns, fourth)
	}
	version = "Valkey " + version
	out := measureReshard(b, c, dial, func() {
		updateCluster(b, key, func(vc *valkeyv1.ValkeyCluster) { vc.Spec.Shards = 4 })
		waitConverged(b, key, 4, 0, 15*time.Minute)
	})
	out.Command = "spec.shards: 3 → 4 (" + version + ")"
	in := measureReshard(b, c, dial, func() {
		updateCluster(b, key, func(vc *valkeyv1.ValkeyCluster) { vc.Spec.Shards = 3 })
		waitConverged(b, key, 3, 0, 15*time.Minute)
	})
	in.Command = "spec.shards: 4 → 3 (" + version + ")"
	deleteCluster(b, key)
	return finishReshards(method, keys, out, in)
}

// finishReshards labels the two moves of one method.
func finishReshards(method string, keys int, out, in record.Resharding) []record.Resharding {
	out.Direction, in.Direction = reshardOut, reshardIn
	rs := []record.Resharding{out, in}
	for i := range rs {
		rs[i].Method, rs[i].Keys, rs[i].ValueBytes = method, keys, reshardValueBytes
	}
	return rs
}

func reshardWithValkeyCLI(b *testing.B, keys int) []record.Resharding {
	addrs, c, added := plainClusterPlusEmpty(b, []string{"valkey-server"}, keys)
	dial := func() (*vk.Node, error) { return vk.Dial(context.Background(), vk.Target{Address: addrs[3]}) }
	outArgs := []string{"--cluster", "rebalance", addrs[0], "--cluster-use-empty-masters"}
	out := measureReshard(b, c, dial, func() { valkeyCLI(b, outArgs...) })
	out.TotalSeconds += added.Seconds()
	id := plainNodeID(b, addrs[3])
	inArgs := []string{"--cluster", "rebalance", addrs[0], "--cluster-weight", id + "=0"}
	in := measureReshard(b, c, dial, func() {
		valkeyCLI(b, inArgs...)
		valkeyCLI(b, "--cluster", "del-node", addrs[0], id)
	})
	host := func(args []string) string {
		return "valkey-cli " + strings.ReplaceAll(strings.ReplaceAll(strings.Join(args, " "), addrs[0], "HOST:PORT"), id, "<new>")
	}
	out.Command, in.Command = host(outArgs), host(inArgs)+"; del-node"
	return finishReshards("valkey-cli", keys, out, in)
}

// reshardWithMigrateSlots is the limit on Valkey 9: plain servers, and
// CLUSTER MIGRATESLOTS issued by hand, every source at once: onto the new
// node, each source gives it the top of its range so that all four end
// even; off it, it gives each range back to the node below it.
func reshardWithMigrateSlots(b *testing.B, keys int) []record.Resharding {
	server := testbin.Valkey9Server()
	if server == nil {
		b.Fatal("Valkey 9 is not installed: run make valkey")
	}
	addrs, c, added := plainClusterPlusEmpty(b, server, keys)
	nodes := make([]*vk.Node, len(addrs))
	ids := make([]string, len(addrs))
	for i, addr := range addrs {
		n, err := vk.Dial(context.Background(), vk.Target{Address: addr})
		if err != nil {
			b.Fatal(err)
		}
		defer n.Close()
		nodes[i], ids[i] = n, plainNodeID(b, addr)
	}
	dial := func() (*vk.Node, error) { return vk.Dial(context.Background(), vk.Target{Address: addrs[3]}) }
	quarter := (vk.MaxSlot + 1) / 4
	out := measureReshard(b, c, dial, func() {
		var moves []plainMove
		for i := range 3 {
			me := plainMyself(b, nodes[i])
			top := me.Slots[len(me.Slots)-1]
			give := me.SlotCount() - quarter
			moves = append(moves, plainMove{from: nodes[i], to: ids[3], r: vk.SlotRange{Start: top.End - give + 1, End: top.End}})
		}
		migrateAll(b, moves)
		waitSlots(b, nodes[3], func(n int) bool { return n >= quarter })
	})
	out.TotalSeconds += added.Seconds()
	in := measureReshard(b, c, dial, func() {
		var moves []plainMove
		for _, r := range plainMyself(b, nodes[3]).Slots {
			below := plainOwner(b, nodes[0], r.Start-1)
			moves = append(moves, plainMove{from: nodes[3], to: below, r: r})
		}
		migrateAll(b, moves)
		waitSlots(b, nodes[3], func(n int) bool { return n == 0 })
	})
	const cmd = "CLUSTER MIGRATESLOTS SLOTSRANGE … NODE <%s>, %s (Valkey 9.1.2)"
	out.Command = fmt.Sprintf(cmd, "new", "on each of 3 sources at once")
	in.Command = fmt.Sprintf(cmd, "old owner", "one per range, at once")
	return finishReshards("migrateslots", keys, out, in)
}

// plainMove is one hand-issued CLUSTER MIGRATESLOTS.
type plainMove struct {
	from *vk.Node
	to   string
	r    vk.SlotRange
}

// migrateAll issues every move at once.
func migrateAll(b *testing.B, moves []plainMove) {
	b.Helper()
	errs := make([]error, len(moves))
	var wg sync.WaitGroup
	for i, m := range moves {
		wg.Go(func() { errs[i] = m.from.ClusterMigrateSlots(context.Background(), m.to, m.r) })
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			b.Fatal(err)
		}
	}
}

// waitSlots waits until the node's slot count satisfies done.
func waitSlots(b *testing.B, n *vk.Node, done func(int) bool) {
	b.Helper()
	eventually(b, 10*time.Minute, "the slot moves to complete", func() error {
		all, err := n.ClusterNodes(context.Background())
		if err != nil {
			return err
		}
		me, _ := all.Myself()
		if !done(me.SlotCount()) {
			return fmt.Errorf("%d slots", me.SlotCount())
		}
		return nil
	})
}

func plainMyself(b *testing.B, n *vk.Node) vk.ClusterNode {
	b.Helper()
	all, err := n.ClusterNodes(context.Background())
	if err != nil {
		b.Fatal(err)
	}
	me, _ := all.Myself()
	return me
}

func plainNodeID(b *testing.B, addr string) string {
	b.Helper()
	n, err := vk.Dial(context.Background(), vk.Target{Address: addr})
	if err != nil {
		b.Fatal(err)
	}
	defer n.Close()
	return plainMyself(b, n).ID
}

// plainOwner is the ID of the node owning slot, as n sees it.
func plainOwner(b *testing.B, n *vk.Node, slot int) string {
	b.Helper()
	all, err := n.ClusterNodes(context.Background())
	if err != nil {
		b.Fatal(err)
	}
	for _, cn := range all {
		for _, r := range cn.Slots {
			if r.Start <= slot && slot <= r.End {
				return cn.ID
			}
		}
	}
	b.Fatalf("no node owns slot %d", slot)
	return ""
}

// measureReshard runs act (one move, returning when it is done) under a
// client load and times it by polling the fourth shard's node.
func measureReshard(b *testing.B, c valkey.Client, dial func() (*vk.Node, error), act func()) record.Resharding {
	b.Helper()
	load := startProbeLoad(b, c, "reshard")
	watch := watchSlots(dial)
	start := time.Now()
	act()
	r := watch.finish(b)
	r.TotalSeconds = time.Since(start).Seconds()
	a := load.finish(start)
	if len(load.errs) > 0 {
		b.Logf("first failed requests (the move began %s): %s", start.Format("15:04:05.000"), strings.Join(load.errs, "; "))
	}
	r.Requests, r.Failed, r.P99Ms = a.Requests, a.Failed, a.P99Ms
	for _, g := range a.Shards {
		r.LongestGapMs = max(r.LongestGapMs, g.LongestGapMs)
	}
	return r
}

// plainClusterPlusEmpty runs four valkey-server processes (argv), forms a
// cluster of the first three holding the data set, and adds the fourth,
// empty, once every node knows every other and every slot: a node that has
// not heard of the new one refuses to hand it a slot, and one that has not
// learnt the slot map answers CLUSTERDOWN. added is how long the add took;
// the client is the data set's.
func plainClusterPlusEmpty(b *testing.B, argv []string, keys int) (addrs []string, c valkey.Client, added time.Duration) {
	b.Helper()
	dir := b.TempDir()
	for range 4 {
		addrs = append(addrs, startServer(b, dir, argv))
	}
	valkeyCLI(b, append(append([]string{"--cluster", "create"}, addrs[:3]...), "--cluster-yes")...)
	c, err := valkey.NewClient(valkey.ClientOption{InitAddress: addrs[:1], DisableCache: true})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(c.Close)
	eventually(b, time.Minute, "the plain cluster to serve every slot", func() error {
		return plainClusterSettled(addrs[:3])
	})
	writeDataSet(b, c, keys)

	start := time.Now()
	valkeyCLI(b, "--cluster", "add-node", addrs[3], addrs[0])
	eventually(b, time.Minute, "every node to know every other and every slot", func() error {
		return plainClusterSettled(addrs)
	})
	return addrs, c, time.Since(start)
}

// writeDataSet writes keys 1 KiB values, pipelined.
func writeDataSet(b testing.TB, c valkey.Client, keys int) {
	b.Helper()
	value := strings.Repeat("v", reshardValueBytes)
	const batch = 500
	for i := 0; i < keys; i += batch {
		cmds := make(valkey.Commands, 0, batch)
		for j := i; j < min(i+batch, keys); j++ {
			cmds = append(cmds, c.B().Set().Key(dataSetKey(j)).Value(value).Build())
		}
		for _, res := range c.DoMulti(context.Background(), cmds...) {
			if err := res.Error(); err != nil {
				b.Fatalf("writing the data set: %v", err)
			}
		}
	}
}

func dataSetKey(i int) string { return fmt.Sprintf("data:%08d", i) }

// dataSet is what writeDataSet wrote, to read back.
func dataSet(keys int) map[string]string {
	value := strings.Repeat("v", reshardValueBytes)
	out := make(map[string]string, keys)
	for i := range keys {
		out[dataSetKey(i)] = value
	}
	return out
}

// slotWatch polls the fourth shard's node, whoever drives the move: it
// times the migration from the first sign of it (a slot importing or
// migrating, a changed slot count, or an atomic migration job created after
// the watch began) to the last change of its slot count, and counts the
// keys that arrived or left.
type slotWatch struct {
	mu            sync.Mutex
	first, last   time.Time
	slots0, slots int
	keys0         int
	// before are the atomic migration jobs the node listed at the first
	// poll: an earlier move's, which it keeps reporting for a while.
	before     map[string]bool
	node       *vk.Node
	seen       bool
	stop, done chan struct{}
}

// watchSlots takes the baseline before it returns, so the move it times
// cannot have begun before the baseline even when a loaded machine starves
// the polling goroutine.
func watchSlots(dial func() (*vk.Node, error)) *slotWatch {
	w := &slotWatch{stop: make(chan struct{}), done: make(chan struct{})}
	for deadline := time.Now().Add(time.Minute); !w.baseline() && time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		w.poll(dial)
	}
	go func() {
		defer close(w.done)
		for {
			w.poll(dial)
			select {
			case <-w.stop:
				return
			case <-time.After(20 * time.Millisecond):
			}
		}
	}()
	return w
}

func (w *slotWatch) baseline() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.seen
}

func (w *slotWatch) poll(dial func() (*vk.Node, error)) {
	if w.node == nil {
		n, err := dial()
		if err != nil {
			return
		}
		w.node = n
	}
	nodes, err := w.node.ClusterNodes(context.Background())
	if err != nil {
		return
	}
	me, ok := nodes.Myself()
	if !ok {
		return
	}
	now := time.Now()
	w.mu.Lock()
	defer w.mu.Unlock()
	n := me.SlotCount()
	if !w.seen {
		w.seen, w.slots0, w.slots = true, n, n
		w.keys0 = keyCount(w.node)
		w.before = map[string]bool{}
		for _, j := range w.jobs() {
			w.before[j.Name] = true
		}
	}
	if w.first.IsZero() && (len(me.Importing) > 0 || len(me.Migrating) > 0 || n != w.slots0 || w.atomicJob()) {
		w.first = now
	}
	if n != w.slots {
		w.slots, w.last = n, now
	}
}

// atomicJob: the node has an atomic slot migration (CLUSTER MIGRATESLOTS)
// begun since the watch started. Its slots change owner only when a job
// completes, so the job, not the first slot, marks the start.
func (w *slotWatch) atomicJob() bool {
	return slices.ContainsFunc(w.jobs(), func(j vk.SlotMigration) bool { return !w.before[j.Name] })
}

// jobs lists the node's atomic migration jobs (none below Valkey 9).
func (w *slotWatch) jobs() []vk.SlotMigration {
	jobs, _ := w.node.ClusterGetSlotMigrations(context.Background())
	return jobs
}

// keyCount is the node's number of keys, -1 if it cannot tell.
func keyCount(n *vk.Node) int {
	info, err := n.Info(context.Background(), "keyspace")
	if err != nil {
		return -1
	}
	count := 0
	if db0, ok := info["keyspace"]["db0"]; ok {
		for field := range strings.SplitSeq(db0, ",") {
			if v, ok := strings.CutPrefix(field, "keys="); ok {
				count, _ = strconv.Atoi(v)
			}
		}
	}
	return count
}

// finish stops polling and counts what moved.
func (w *slotWatch) finish(b *testing.B) record.Resharding {
	b.Helper()
	close(w.stop)
	<-w.done
	if w.node == nil || w.first.IsZero() || w.last.IsZero() {
		b.Fatal("the fourth shard was never seen moving slots")
	}
	// A drained node gave every key it had; it may be gone by now (the
	// operator deletes it, del-node shuts it down) or still deleting the
	// keys it gave in the background.
	moved := w.keys0
	if w.slots > 0 {
		moved = max(keyCount(w.node)-w.keys0, w.keys0-keyCount(w.node))
	}
	w.node.Close()
	return record.Resharding{
		KeysMoved:        moved,
		BytesMoved:       int64(moved) * int64(len(dataSetKey(0))+reshardValueBytes),
		SlotsMoved:       max(w.slots-w.slots0, w.slots0-w.slots),
		MigrationSeconds: w.last.Sub(w.first).Seconds(),
	}
}

// plainClusterSettled checks that every node sees every other connected
// and the cluster ok.
func plainClusterSettled(addrs []string) error {
	for _, addr := range addrs {
		n, err := vk.Dial(context.Background(), vk.Target{Address: addr})
		if err != nil {
			return err
		}
		nodes, err := n.ClusterNodes(context.Background())
		if err != nil {
			n.Close()
			return err
		}
		info, err := n.ClusterInfo(context.Background())
		n.Close()
		if err != nil {
			return err
		}
		connected := 0
		for _, cn := range nodes {
			if cn.Myself() || cn.LinkState == "connected" {
				connected++
			}
		}
		if connected != len(addrs) || !info.OK() {
			return fmt.Errorf("%s sees %d of %d nodes connected, cluster %s", addr, connected, len(addrs), info.State)
		}
	}
	return nil
}

// startServer runs argv (a valkey-server command) as a cluster node on a
// free port of 127.0.0.1, stopped when the benchmark ends.
func startServer(b *testing.B, dir string, argv []string) string {
	b.Helper()
	port := freePortPair(b)
	args := append(slices.Clone(argv[1:]), "--bind", "127.0.0.1", "--port", strconv.Itoa(port),
		"--cluster-enabled", "yes", "--cluster-config-file", fmt.Sprintf("nodes-%d.conf", port),
		"--dir", dir, "--save", "", "--appendonly", "no", "--maxmemory", "1gb",
		"--logfile", filepath.Join(dir, fmt.Sprintf("%d.log", port)))
	cmd := exec.Command(argv[0], args...)
	// Should this process die, the servers must not outlive it.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	eventually(b, 30*time.Second, "valkey-server on "+addr, func() error {
		n, err := vk.Dial(context.Background(), vk.Target{Address: addr})
		if err != nil {
			return err
		}
		n.Close()
		return nil
	})
	return addr
}

// freePortPair finds a port that is free together with the cluster bus
// port 10000 above it.
func freePortPair(b *testing.B) int {
	b.Helper()
	for range 100 {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			b.Fatal(err)
		}
		port := l.Addr().(*net.TCPAddr).Port
		if port+10000 > 65535 {
			l.Close()
			continue
		}
		bus, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port+10000)))
		l.Close()
		if err == nil {
			bus.Close()
			return port
		}
	}
	b.Fatal("no free port pair")
	return 0
}

func valkeyCLI(b *testing.B, args ...string) {
	b.Helper()
	var out bytes.Buffer
	cmd := exec.Command("valkey-cli", args...)
	cmd.Stdout, cmd.Stderr = &out, &out
	// valkey-cli --cluster reports some failures only on its output.
	if err := cmd.Run(); err != nil || bytes.Contains(out.Bytes(), []byte("***")) || bytes.Contains(out.Bytes(), []byte("[ERR]")) {
		b.Fatalf("valkey-cli %s: %v\n%s", strings.Join(args, " "), err, tail(out.Bytes(), 4000))
	}
}
