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

// BenchmarkResharding moves the same data set ($VALKEY_BENCH_RESHARD_KEYS
// keys of 1 KiB, default 100000) from 3 shards onto a fourth, empty one,
// four times on this machine: by the operator (spec.shards 3 -> 4) on
// Valkey 8 (classic MIGRATE) and by valkey-cli --cluster rebalance on plain
// valkey-server 8 processes; by the operator on Valkey 9 (CLUSTER
// MIGRATESLOTS) and by hand-issued CLUSTER MIGRATESLOTS on plain Valkey 9
// processes, the limit. All are watched the same way, by polling the new
// shard.
func BenchmarkResharding(b *testing.B) {
	keys := envInt("VALKEY_BENCH_RESHARD_KEYS", 100000)
	for _, method := range []struct {
		name string
		run  func(b *testing.B, keys int) record.Resharding
	}{
		{"operator", func(b *testing.B, keys int) record.Resharding { return reshardWithOperator(b, keys, "8.0.1") }},
		{"valkey-cli", reshardWithValkeyCLI},
		{"operator-9", func(b *testing.B, keys int) record.Resharding { return reshardWithOperator(b, keys, "9.1.2") }},
		{"migrateslots", reshardWithMigrateSlots},
	} {
		b.Run(method.name, func(b *testing.B) {
			for range b.N {
				r := method.run(b, keys)
				keysPerSecond := float64(r.KeysMoved) / r.MigrationSeconds
				b.Logf("%s: %d of %d keys (%d slots) in %.1fs of migration, %.0f keys/s, %.2f MB/s; %.1fs in all",
					r.Method, r.KeysMoved, r.Keys, r.SlotsMoved, r.MigrationSeconds,
					keysPerSecond, float64(r.BytesMoved)/1e6/r.MigrationSeconds, r.TotalSeconds)
				b.ReportMetric(keysPerSecond, "keys/s")
				saveRecord(b, "resharding-"+r.Method, record.File{Resharding: &r})
			}
		})
	}
}

func reshardWithOperator(b *testing.B, keys int, version string) record.Resharding {
	ns := benchNamespace("bench-reshard")
	createNamespace(b, ns)
	cfgName := createMenu(b, ns)
	// The menu's 64mb would not hold the data set.
	var cfg valkeyv1.ValkeyConfig
	if err := k8sClient.Get(context.Background(), client.ObjectKey{Name: cfgName}, &cfg); err != nil {
		b.Fatal(err)
	}
	cfg.Spec.Valkey["maxmemory"] = "1gb"
	if err := k8sClient.Update(context.Background(), &cfg); err != nil {
		b.Fatal(err)
	}
	method := "operator"
	if version != "8.0.1" {
		method = "operator-" + strings.Split(version, ".")[0]
		var img valkeyv1.ValkeyImage
		if err := k8sClient.Get(context.Background(), client.ObjectKey{Name: cfg.Spec.ImageRef}, &img); err != nil {
			b.Fatal(err)
		}
		img.Spec.Tag, img.Spec.Version = version, version
		if err := k8sClient.Update(context.Background(), &img); err != nil {
			b.Fatal(err)
		}
	}
	vc := &valkeyv1.ValkeyCluster{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "data"},
		Spec: valkeyv1.ValkeyClusterSpec{ConfigRef: cfgName, Shards: 3}}
	if err := k8sClient.Create(context.Background(), vc); err != nil {
		b.Fatal(err)
	}
	key := client.ObjectKeyFromObject(vc)
	old := waitConverged(b, key, 3, 0, 5*time.Minute).Status.Nodes
	writeDataSet(b, clusterClient(b, seedOf(key), nil), keys)

	watch := watchImport(func() (*vk.Node, error) {
		var pods corev1.PodList
		if err := k8sClient.List(context.Background(), &pods, client.InNamespace(ns)); err != nil {
			return nil, err
		}
		for _, p := range pods.Items {
			if !slices.Contains(old, p.Name) && p.Status.PodIP != "" {
				return dialPod(ns, p.Name)
			}
		}
		return nil, fmt.Errorf("no new pod yet")
	})
	start := time.Now()
	updateCluster(b, key, func(vc *valkeyv1.ValkeyCluster) { vc.Spec.Shards = 4 })
	waitConverged(b, key, 4, 0, 15*time.Minute)
	r := watch.finish(b)
	r.Method, r.Command, r.Keys, r.ValueBytes = method, "spec.shards: 3 → 4 (Valkey "+version+")", keys, reshardValueBytes
	r.TotalSeconds = time.Since(start).Seconds()
	deleteCluster(b, key)
	return r
}

func reshardWithValkeyCLI(b *testing.B, keys int) record.Resharding {
	addrs, start := plainClusterPlusEmpty(b, []string{"valkey-server"}, keys)
	watch := watchImport(func() (*vk.Node, error) {
		return vk.Dial(context.Background(), vk.Target{Address: addrs[3]})
	})
	command := []string{"--cluster", "rebalance", addrs[0], "--cluster-use-empty-masters"}
	valkeyCLI(b, command...)
	r := watch.finish(b)
	r.Method, r.Keys, r.ValueBytes = "valkey-cli", keys, reshardValueBytes
	r.Command = "valkey-cli " + strings.ReplaceAll(strings.Join(command, " "), addrs[0], "HOST:PORT")
	r.TotalSeconds = time.Since(start).Seconds()
	return r
}

// reshardWithMigrateSlots is the limit on Valkey 9: plain servers, and
// one CLUSTER MIGRATESLOTS per source, sent together, each giving the new
// node the top of its range so that all four end even.
func reshardWithMigrateSlots(b *testing.B, keys int) record.Resharding {
	server := testbin.Valkey9Server()
	if server == nil {
		b.Fatal("Valkey 9 is not installed: run make valkey")
	}
	addrs, start := plainClusterPlusEmpty(b, server, keys)
	nodes := make([]*vk.Node, len(addrs))
	ids := make([]string, len(addrs))
	for i, addr := range addrs {
		n, err := vk.Dial(context.Background(), vk.Target{Address: addr})
		if err != nil {
			b.Fatal(err)
		}
		defer n.Close()
		all, err := n.ClusterNodes(context.Background())
		if err != nil {
			b.Fatal(err)
		}
		me, _ := all.Myself()
		nodes[i], ids[i] = n, me.ID
	}
	watch := watchImport(func() (*vk.Node, error) {
		return vk.Dial(context.Background(), vk.Target{Address: addrs[3]})
	})
	target := (vk.MaxSlot + 1) / 4
	var wg sync.WaitGroup
	errs := make([]error, 3)
	for i := range 3 {
		all, err := nodes[i].ClusterNodes(context.Background())
		if err != nil {
			b.Fatal(err)
		}
		me, _ := all.Myself()
		top := me.Slots[len(me.Slots)-1]
		give := me.SlotCount() - target
		r := vk.SlotRange{Start: top.End - give + 1, End: top.End}
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = nodes[i].ClusterMigrateSlots(context.Background(), ids[3], r)
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			b.Fatal(err)
		}
	}
	eventually(b, 10*time.Minute, "the new node to own a quarter of the slots", func() error {
		all, err := nodes[3].ClusterNodes(context.Background())
		if err != nil {
			return err
		}
		me, _ := all.Myself()
		if me.SlotCount() < target {
			return fmt.Errorf("%d slots", me.SlotCount())
		}
		return nil
	})
	r := watch.finish(b)
	r.Method, r.Keys, r.ValueBytes = "migrateslots", keys, reshardValueBytes
	r.Command = "CLUSTER MIGRATESLOTS SLOTSRANGE … NODE <new> on each of 3 sources at once (Valkey 9.1.2)"
	r.TotalSeconds = time.Since(start).Seconds()
	return r
}

// plainClusterPlusEmpty runs four valkey-server processes (argv), forms a
// cluster of the first three holding the data set, and adds the fourth,
// empty, once every node knows every other and every slot: a node that has
// not heard of the new one refuses to hand it a slot, and one that has not
// learnt the slot map answers CLUSTERDOWN. start is when the add began.
func plainClusterPlusEmpty(b *testing.B, argv []string, keys int) (addrs []string, start time.Time) {
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
	defer c.Close()
	eventually(b, time.Minute, "the plain cluster to serve every slot", func() error {
		return plainClusterSettled(addrs[:3])
	})
	writeDataSet(b, c, keys)

	start = time.Now()
	valkeyCLI(b, "--cluster", "add-node", addrs[3], addrs[0])
	eventually(b, time.Minute, "every node to know every other and every slot", func() error {
		return plainClusterSettled(addrs)
	})
	return addrs, start
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

// importWatch polls the node that receives the slots: it times the
// migration from the first slot it imports (or owns) to the last slot it
// gains, whoever drives it.
type importWatch struct {
	mu          sync.Mutex
	first, last time.Time
	slots       int
	node        *vk.Node
	stop, done  chan struct{}
}

func watchImport(dial func() (*vk.Node, error)) *importWatch {
	w := &importWatch{stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(w.done)
		for {
			w.poll(dial)
			select {
			case <-w.stop:
				return
			case <-time.After(50 * time.Millisecond):
			}
		}
	}()
	return w
}

func (w *importWatch) poll(dial func() (*vk.Node, error)) {
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
	if w.first.IsZero() && (len(me.Importing) > 0 || me.SlotCount() > 0 || w.atomicImport()) {
		w.first = now
	}
	if n := me.SlotCount(); n > w.slots {
		w.slots, w.last = n, now
	}
}

// atomicImport: the node has an atomic slot migration (CLUSTER
// MIGRATESLOTS) under way or done. Its slots change owner only when a job
// completes, so the job, not the first owned slot, marks the start.
func (w *importWatch) atomicImport() bool {
	jobs, err := w.node.ClusterGetSlotMigrations(context.Background())
	return err == nil && len(jobs) > 0
}

// finish stops polling and counts what the new node holds.
func (w *importWatch) finish(b *testing.B) record.Resharding {
	b.Helper()
	close(w.stop)
	<-w.done
	if w.node == nil || w.first.IsZero() {
		b.Fatal("the new shard was never seen importing")
	}
	defer w.node.Close()
	info, err := w.node.Info(context.Background(), "keyspace")
	if err != nil {
		b.Fatal(err)
	}
	moved := 0
	if db0, ok := info["keyspace"]["db0"]; ok {
		for field := range strings.SplitSeq(db0, ",") {
			if v, ok := strings.CutPrefix(field, "keys="); ok {
				moved, _ = strconv.Atoi(v)
			}
		}
	}
	return record.Resharding{
		KeysMoved:        moved,
		BytesMoved:       int64(moved) * int64(len(dataSetKey(0))+reshardValueBytes),
		SlotsMoved:       w.slots,
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
