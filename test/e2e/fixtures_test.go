package e2e

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/valkey-io/valkey-go"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	valkeyv1 "github.com/gomomento/valkey-operator/api/v1alpha1"
	"github.com/gomomento/valkey-operator/bench/record"
	"github.com/gomomento/valkey-operator/internal/localkube/localkubetest"
	"github.com/gomomento/valkey-operator/internal/testcerts"
	vk "github.com/gomomento/valkey-operator/internal/valkey"
)

// The fixtures every test builds on: the clusters (plaintext and TLS),
// their deletion, and the client load that runs through a change.

const clusterDomain = "cluster.local"

// newPlainCluster creates a Valkey 8 cluster from its own menu and waits
// for it to be Active.
func newPlainCluster(t testing.TB, ns, name string, shards, replicas int) client.ObjectKey {
	t.Helper()
	createNamespace(t, ns)
	start := time.Now()
	key := newClusterWith(t, ns, name, createMenu(t, ns), shards, replicas)
	t.Logf("%dx%d cluster ready after %s", shards, replicas, time.Since(start).Round(time.Second))
	return key
}

// newClusterWith creates a plaintext cluster of the config in an existing
// namespace, deleted when the test ends, and waits for it to converge.
func newClusterWith(t testing.TB, ns, name, config string, shards, replicas int, edits ...func(*valkeyv1.ValkeyClusterSpec)) client.ObjectKey {
	t.Helper()
	key := createCluster(t, ns, name, config, shards, replicas, edits...)
	waitConverged(t, key, shards, replicas, 5*time.Minute)
	return key
}

// createCluster creates a plaintext cluster of the config in an existing
// namespace, deleted when the test ends, without waiting for it: clusters
// created together form together.
func createCluster(t testing.TB, ns, name, config string, shards, replicas int, edits ...func(*valkeyv1.ValkeyClusterSpec)) client.ObjectKey {
	t.Helper()
	vc := &valkeyv1.ValkeyCluster{}
	vc.Namespace, vc.Name = ns, name
	vc.Spec = valkeyv1.ValkeyClusterSpec{ConfigRef: config, Shards: int32(shards), ReplicasPerShard: int32(replicas)}
	for _, edit := range edits {
		edit(&vc.Spec)
	}
	if err := k8sClient.Create(context.Background(), vc); err != nil {
		t.Fatal(err)
	}
	deleteAtEnd(t, vc)
	return client.ObjectKeyFromObject(vc)
}

// tlsFixture is a running TLS cluster in its own namespace, Active and
// with every node serving the Secret's certificate.
type tlsFixture struct {
	t      testing.TB
	ns     string
	name   string
	secret string
	key    client.ObjectKey
	leaf   *testcerts.LeafCert
}

// tlsOption sets what a test's TLS cluster needs beyond its shape.
type tlsOption func(*tlsOptions)

type tlsOptions struct {
	config     string
	restricted bool
}

// withConfig runs the cluster on the ValkeyConfig config instead of a
// standard menu of its own.
func withConfig(config string) tlsOption { return func(o *tlsOptions) { o.config = config } }

// inRestrictedNamespace creates the namespace enforcing Pod Security
// "restricted".
func inRestrictedNamespace() tlsOption { return func(o *tlsOptions) { o.restricted = true } }

// newTLSCluster is a running TLS cluster of the given shape named cache, its
// Secret signed by ca, every node serving it.
func newTLSCluster(t testing.TB, ns string, ca *testcerts.CA, shards, replicas int, opts ...tlsOption) *tlsFixture {
	t.Helper()
	ctx := context.Background()
	var o tlsOptions
	for _, opt := range opts {
		opt(&o)
	}
	if o.restricted {
		createRestrictedNamespace(t, ns)
	} else {
		createNamespace(t, ns)
	}
	cfg := o.config
	if cfg == "" {
		cfg = createMenu(t, ns)
	}
	f := &tlsFixture{t: t, ns: ns, name: "cache", secret: "cache-tls"}
	f.key = client.ObjectKey{Namespace: ns, Name: f.name}
	f.leaf = testcerts.Leaf(ca, f.name, ns, clusterDomain)
	if err := k8sClient.Create(ctx, testcerts.Secret(f.secret, ns, f.leaf)); err != nil {
		t.Fatal(err)
	}
	createCluster(t, ns, f.name, cfg, shards, replicas, withTLS(f.secret))
	waitActive(t, f.key, shards, replicas, 5*time.Minute)
	f.waitCondition(valkeyv1.CondCertificatesServed, metav1.ConditionTrue, valkeyv1.ReasonServingCurrent, "", time.Minute)
	return f
}

// withTLS serves the cluster with the certificate in Secret secret.
func withTLS(secret string) func(*valkeyv1.ValkeyClusterSpec) {
	return func(s *valkeyv1.ValkeyClusterSpec) { s.TLS = &valkeyv1.TLSSpec{SecretRef: secret} }
}

func (f *tlsFixture) service() string {
	return fmt.Sprintf("%s.%s.svc.%s:6379", f.name, f.ns, clusterDomain)
}

func (f *tlsFixture) cluster() *valkeyv1.ValkeyCluster { return getCluster(f.t, f.key) }

func (f *tlsFixture) pods() []corev1.Pod {
	f.t.Helper()
	var list corev1.PodList
	if err := k8sClient.List(context.Background(), &list, client.InNamespace(f.ns),
		client.MatchingLabels{valkeyv1.LabelInstance: f.name}); err != nil {
		f.t.Fatalf("listing pods: %v", err)
	}
	sort.Slice(list.Items, func(i, j int) bool { return list.Items[i].Name < list.Items[j].Name })
	return list.Items
}

func (f *tlsFixture) podNames() []string {
	var out []string
	for _, p := range f.pods() {
		out = append(out, p.Name)
	}
	return out
}

// podIdentity is what a restart or a replacement would change.
type podIdentity struct {
	UID      types.UID
	Restarts int32
}

func (f *tlsFixture) podSnapshot() map[string]podIdentity {
	out := map[string]podIdentity{}
	for _, p := range f.pods() {
		id := podIdentity{UID: p.UID}
		for _, cs := range p.Status.ContainerStatuses {
			id.Restarts += cs.RestartCount
		}
		out[p.Name] = id
	}
	return out
}

func (f *tlsFixture) assertPodsUntouched(before map[string]podIdentity) {
	f.t.Helper()
	after := f.podSnapshot()
	if len(after) != len(before) {
		f.t.Fatalf("pods changed: before %v, after %v", before, after)
	}
	for name, id := range before {
		if got, ok := after[name]; !ok || got != id {
			f.t.Fatalf("pod %s changed: before %+v, after %+v", name, id, got)
		}
		if id.Restarts != 0 {
			f.t.Fatalf("pod %s has restarted %d times", name, id.Restarts)
		}
	}
}

// waitCondition waits for a condition; an empty message matches any.
func (f *tlsFixture) waitCondition(typ string, status metav1.ConditionStatus, reason, message string, timeout time.Duration) {
	f.t.Helper()
	eventually(f.t, timeout, fmt.Sprintf("condition %s=%s (%s)", typ, status, reason), func() error {
		c := meta.FindStatusCondition(f.cluster().Status.Conditions, typ)
		if c == nil {
			return errors.New("condition not set")
		}
		if c.Status != status || c.Reason != reason || (message != "" && c.Message != message) {
			return fmt.Errorf("%s (%s): %s", c.Status, c.Reason, c.Message)
		}
		return nil
	})
}

// waitEvent waits for an Event on the cluster whose note contains note.
func (f *tlsFixture) waitEvent(typ, reason, note string, timeout time.Duration) {
	f.t.Helper()
	eventually(f.t, timeout, fmt.Sprintf("%s Event %s %q", typ, reason, note), func() error {
		var list eventsv1.EventList
		if err := k8sClient.List(context.Background(), &list, client.InNamespace(f.ns)); err != nil {
			return err
		}
		var seen []string
		for _, e := range list.Items {
			if e.Regarding.Kind != "ValkeyCluster" || e.Regarding.Name != f.name {
				continue
			}
			if e.Type == typ && e.Reason == reason && strings.Contains(e.Note, note) {
				return nil
			}
			seen = append(seen, e.Type+"/"+e.Reason+": "+e.Note)
		}
		return fmt.Errorf("events so far: %q", seen)
	})
}

// watchStates records every state other than Active the cluster passes
// through until the returned function is called.
func (f *tlsFixture) watchStates() func() []string {
	var mu sync.Mutex
	var bad []string
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			var vc valkeyv1.ValkeyCluster
			if err := k8sClient.Get(context.Background(), f.key, &vc); err == nil && vc.Status.State != valkeyv1.StateActive {
				mu.Lock()
				bad = append(bad, fmt.Sprintf("%s %s (%s)", time.Now().Format("15:04:05.000"), vc.Status.State, vc.Status.Message))
				mu.Unlock()
			}
			select {
			case <-stop:
				return
			case <-time.After(100 * time.Millisecond):
			}
		}
	}()
	return func() []string {
		close(stop)
		<-done
		mu.Lock()
		defer mu.Unlock()
		return bad
	}
}

// deleteAtEnd deletes the cluster when the test ends: its nodes would
// otherwise keep running, and the operator reconciling them, through every
// later test.
func deleteAtEnd(t testing.TB, vc *valkeyv1.ValkeyCluster) {
	t.Cleanup(func() {
		obj := &valkeyv1.ValkeyCluster{ObjectMeta: metav1.ObjectMeta{Namespace: vc.Namespace, Name: vc.Name}}
		_ = k8sClient.Delete(context.Background(), obj)
	})
}

// deleteCluster deletes a cluster and waits until every object and
// process of it is gone, so the next measurement has the machine.
func deleteCluster(t testing.TB, key client.ObjectKey) {
	t.Helper()
	vc := &valkeyv1.ValkeyCluster{ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: key.Name}}
	if err := k8sClient.Delete(context.Background(), vc); err != nil {
		t.Fatal(err)
	}
	waitGone(t, key.Namespace, key.Name)
}

// waitGone waits until a namespace holds none of the objects a cluster
// creates, and no process of its pods survives.
func waitGone(t testing.TB, ns, cluster string) {
	t.Helper()
	ctx := context.Background()
	sel := client.MatchingLabels{valkeyv1.LabelInstance: cluster}
	eventually(t, 2*time.Minute, "every object of the cluster to be gone", func() error {
		var left []string
		lists := map[string]client.ObjectList{
			"pods": &corev1.PodList{}, "configmaps": &corev1.ConfigMapList{}, "secrets": &corev1.SecretList{},
			"services": &corev1.ServiceList{}, "valkeynodes": &valkeyv1.ValkeyNodeList{},
			"persistentvolumeclaims": &corev1.PersistentVolumeClaimList{},
		}
		for kind, l := range lists {
			opts := []client.ListOption{client.InNamespace(ns)}
			if kind != "pods" && kind != "valkeynodes" {
				opts = append(opts, sel)
			}
			if err := k8sClient.List(ctx, l, opts...); err != nil {
				return err
			}
			if n := metaLen(l); n > 0 {
				left = append(left, fmt.Sprintf("%d %s", n, kind))
			}
		}
		if len(left) > 0 {
			return fmt.Errorf("left behind: %s", strings.Join(left, ", "))
		}
		return nil
	})
	assertNoProcesses(t, ns)
}

func metaLen(l client.ObjectList) int {
	switch v := l.(type) {
	case *corev1.PodList:
		return len(v.Items)
	case *corev1.ConfigMapList:
		return len(v.Items)
	case *corev1.SecretList:
		return len(v.Items)
	case *corev1.ServiceList:
		return len(v.Items)
	case *valkeyv1.ValkeyNodeList:
		return len(v.Items)
	case *corev1.PersistentVolumeClaimList:
		return len(v.Items)
	}
	return 0
}

func assertNoProcesses(t testing.TB, ns string) {
	t.Helper()
	localkubetest.AssertNoLeakedProcesses(t, local.Runtime.PodDirPrefix(ns))
}

// clientLoad is a cluster-aware client that writes each of its keys again
// and again and reads them back for as long as a change runs, checking
// that every read returns the value last acknowledged. The last
// acknowledged value of each key is remembered, so the test can demand
// every one of them back afterwards (an older value is a lost update, not
// only a missing key), and every request's outcome is kept for an
// availability record. Failed requests are counted and reported here; the
// tests of changes no client may notice assert there are none
// (finishUndisturbed).
type clientLoad struct {
	c      valkey.Client
	prefix string
	// pause is the wait between one writer's requests, timeout the bound on
	// each request.
	pause, timeout time.Duration
	// owner, when set, runs one writer per shard: writer i writes only keys
	// whose slot owner maps to i, so a shard that stops taking writes shows
	// as a gap in its own writer and does not hold up the others.
	owner   []int
	writers int

	mu sync.Mutex
	// acked is each key's last acknowledged value, ackAt when that came;
	// ackTimes every acknowledgement, for the gaps between them.
	acked    map[string]string
	ackAt    map[string]time.Time
	ackTimes []time.Time
	// retired counts keys left out of acked after a write of unknown
	// outcome.
	retired int
	samples []loadSample
	// errs are the first few failures, for the log.
	errs []string

	writes, reads, writeErrs, readErrs, stale atomic.Int64
	start                                     time.Time
	stop                                      chan struct{}
	wg                                        sync.WaitGroup
}

// loadSample is one request's outcome.
type loadSample struct {
	at      time.Time // when the answer came
	latency time.Duration
	shard   int // the writer's
	write   bool
	ok      bool
}

// loadOption sets how a load runs where its callers differ.
type loadOption func(*clientLoad)

// perShard runs a writer per shard instead of one: owner maps each slot to
// its shard's writer.
func perShard(owner []int, shards int) loadOption {
	return func(l *clientLoad) { l.owner, l.writers = owner, shards }
}

// paced sets the pause between a writer's requests and the timeout of each.
func paced(pause, timeout time.Duration) loadOption {
	return func(l *clientLoad) { l.pause, l.timeout = pause, timeout }
}

// startLoad starts one writer, pausing 2 ms between requests of at most
// 5 s each, unless opts say otherwise.
func startLoad(c valkey.Client, prefix string, opts ...loadOption) *clientLoad {
	l := &clientLoad{c: c, prefix: prefix, pause: 2 * time.Millisecond, timeout: 5 * time.Second, writers: 1,
		acked: map[string]string{}, ackAt: map[string]time.Time{}, stop: make(chan struct{})}
	for _, opt := range opts {
		opt(l)
	}
	l.start = time.Now()
	for w := range l.writers {
		l.wg.Add(1)
		go l.write(w)
	}
	return l
}

// staleRead is a read that answered with another value than the one
// acknowledged, or none.
type staleRead struct{ key, got, want string }

func (e staleRead) Error() string { return fmt.Sprintf("%s = %q, want %q", e.key, e.got, e.want) }

// loadKeys is how many keys each writer cycles through: every key is
// written again and again, so a lost update (an acknowledged value
// replaced by an older one) shows as a stale read, not only a lost key.
const loadKeys = 256

func (l *clientLoad) write(w int) {
	defer l.wg.Done()
	rng := rand.New(rand.NewPCG(uint64(w), 7))
	var ring []string
	last := map[string]string{} // key -> value last acknowledged, checkable keys only
	n, seq := 0, 0
	for {
		select {
		case <-l.stop:
			return
		default:
		}
		var k string
		if i := seq % loadKeys; i < len(ring) {
			k = ring[i]
		} else {
			k = l.nextKey(w, &n)
			ring = append(ring, k)
		}
		seq++
		v := fmt.Sprintf("v%d-%d", w, seq)
		at, err := l.do(w, true, func(ctx context.Context) error {
			return l.c.Do(ctx, l.c.B().Set().Key(k).Value(v).Build()).Error()
		})
		if err != nil {
			// The write may still land (a timeout says nothing about the
			// server), so the key's value is no longer known exactly: it
			// is retired and a fresh key takes its place.
			l.writeErrs.Add(1)
			l.note("SET", at, err)
			l.retire(k)
			delete(last, k)
			ring[(seq-1)%loadKeys] = l.nextKey(w, &n)
		} else {
			l.writes.Add(1)
			l.mu.Lock()
			l.acked[k] = v
			l.ackAt[k] = at
			l.ackTimes = append(l.ackTimes, at)
			l.mu.Unlock()
			last[k] = v
		}
		if len(last) > 0 {
			r := ring[rng.IntN(len(ring))]
			l.check(w, r, last[r])
		}
		select {
		case <-l.stop:
			return
		case <-time.After(l.pause): // pacing the client, not waiting for the operator
		}
	}
}

// check reads k back and counts it stale unless it holds want, the value
// last acknowledged for it ("" for a key not known exactly: not read).
func (l *clientLoad) check(w int, k, want string) {
	if want == "" {
		return
	}
	at, err := l.do(w, false, func(ctx context.Context) error {
		got, err := l.c.Do(ctx, l.c.B().Get().Key(k).Build()).ToString()
		if err != nil && !valkey.IsValkeyNil(err) {
			return err
		}
		if got != want {
			return staleRead{k, got, want}
		}
		return nil
	})
	var stale staleRead
	switch {
	case errors.As(err, &stale):
		l.stale.Add(1)
		l.note("GET", at, err)
	case err != nil:
		l.readErrs.Add(1)
		l.note("GET", at, err)
	default:
		l.reads.Add(1)
	}
}

// retire takes a key whose last write failed out of what finish returns.
func (l *clientLoad) retire(k string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	delete(l.acked, k)
	delete(l.ackAt, k)
	l.retired++
}

// nextKey is writer w's next fresh key, n its count of keys tried so far.
func (l *clientLoad) nextKey(w int, n *int) string {
	for {
		k := fmt.Sprintf("%s:%d", l.prefix, *n)
		if l.owner != nil {
			k = fmt.Sprintf("%s:%d:%d", l.prefix, w, *n)
		}
		*n++
		if l.owner == nil || l.owner[vk.KeySlot(k)] == w {
			return k
		}
	}
}

// do runs one request within the timeout and keeps its outcome; it returns
// when the answer came.
func (l *clientLoad) do(w int, write bool, req func(ctx context.Context) error) (time.Time, error) {
	ctx, cancel := context.WithTimeout(context.Background(), l.timeout)
	defer cancel()
	start := time.Now()
	err := req(ctx)
	end := time.Now()
	l.mu.Lock()
	l.samples = append(l.samples, loadSample{at: end, latency: end.Sub(start), shard: w, write: write, ok: err == nil})
	l.mu.Unlock()
	return end, err
}

func (l *clientLoad) note(op string, at time.Time, err error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.errs) < 5 {
		l.errs = append(l.errs, fmt.Sprintf("%s at %s (after %s): %v", op, at.Format("15:04:05.000"), at.Sub(l.start).Round(time.Millisecond), err))
	}
}

func (l *clientLoad) halt() {
	close(l.stop)
	l.wg.Wait()
}

// finish stops the client, logs what it saw and returns every acknowledged
// write. It fails the test only when nothing succeeded at all.
func (l *clientLoad) finish(t testing.TB) map[string]string {
	t.Helper()
	l.halt()
	t.Logf("client load over %s: %d writes ok, %d failed; %d reads ok, %d failed, %d wrong or missing; %d keys left unchecked after a failed write; first errors: %v",
		time.Since(l.start).Round(time.Second), l.writes.Load(), l.writeErrs.Load(),
		l.reads.Load(), l.readErrs.Load(), l.stale.Load(), l.retired, l.errs)
	if l.writes.Load() == 0 {
		t.Fatal("no write succeeded during the change")
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	out := make(map[string]string, len(l.acked))
	for k, v := range l.acked {
		out[k] = v
	}
	return out
}

// finishUndisturbed is finish for a change no client may notice: a failed
// or wrong request fails the test.
func (l *clientLoad) finishUndisturbed(t testing.TB) map[string]string {
	t.Helper()
	acked := l.finish(t)
	if n := l.writeErrs.Load() + l.readErrs.Load() + l.stale.Load(); n > 0 {
		t.Fatalf("%d client requests failed, e.g. %v", n, l.errs)
	}
	return acked
}

// splitByAckTime separates the acknowledged writes into those acknowledged
// between from and to and all others.
func (l *clientLoad) splitByAckTime(acked map[string]string, from, to time.Time) (inside, outside map[string]string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	inside, outside = map[string]string{}, map[string]string{}
	for k, v := range acked {
		if at := l.ackAt[k]; !at.Before(from) && !at.After(to) {
			inside[k] = v
		} else {
			outside[k] = v
		}
	}
	return inside, outside
}

// ackedBetween counts the writes acknowledged between from and to: every
// acknowledgement, not only each key's last.
func (l *clientLoad) ackedBetween(from, to time.Time) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for _, at := range l.ackTimes {
		if !at.Before(from) && !at.After(to) {
			n++
		}
	}
	return n
}

// longestWriteGap is the longest time between two acknowledged writes (or
// from the start or to now), and when it began.
func (l *clientLoad) longestWriteGap() (time.Duration, time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	ats := slices.Clone(l.ackTimes)
	slices.SortFunc(ats, func(a, b time.Time) int { return a.Compare(b) })
	var longest time.Duration
	var from time.Time
	prev := l.start
	for _, at := range append(ats, time.Now()) {
		if d := at.Sub(prev); d > longest {
			longest, from = d, prev
		}
		prev = at
	}
	return longest, from
}

const (
	// probePace is the pause between one writer's requests in the
	// benchmarks: about 100 writes a second per shard, so a window without
	// a write stands out from the pace by two orders of magnitude.
	probePace = 10 * time.Millisecond
	// probeTimeout bounds one request, so a dead node costs a writer a
	// failure, not the rest of the run.
	probeTimeout = 2 * time.Second
)

// probeLoad is the benchmarks' load: a writer per shard, as the shards were
// when it started, read as an availability record.
type probeLoad struct{ *clientLoad }

// startProbeLoad maps slots to shards from CLUSTER SHARDS and starts one
// writer per shard.
func startProbeLoad(t testing.TB, c valkey.Client, prefix string) *probeLoad {
	t.Helper()
	owner := make([]int, vk.SlotCount) // shard index per slot, -1 for unassigned
	shards := 0
	eventually(t, 30*time.Second, "the slot map from CLUSTER SHARDS", func() error {
		for i := range owner {
			owner[i] = -1
		}
		reply, err := c.Do(context.Background(), c.B().ClusterShards().Build()).ToAny()
		if err != nil {
			return err
		}
		all, err := vk.ParseClusterShards(reply)
		if err != nil {
			return err
		}
		// Shards are numbered by their lowest slot, so shard 0 is the one
		// holding slot 0 whatever order CLUSTER SHARDS lists them in.
		all = slices.DeleteFunc(all, func(sh vk.Shard) bool { return len(sh.Slots) == 0 })
		lowest := func(sh vk.Shard) int {
			lo := vk.SlotCount
			for _, r := range sh.Slots {
				lo = min(lo, r.Start)
			}
			return lo
		}
		slices.SortFunc(all, func(a, b vk.Shard) int { return lowest(a) - lowest(b) })
		shards = len(all)
		for i, sh := range all {
			for _, r := range sh.Slots {
				for s := r.Start; s <= r.End; s++ {
					owner[s] = i
				}
			}
		}
		if shards == 0 {
			return fmt.Errorf("no shard holds a slot")
		}
		return nil
	})
	return &probeLoad{startLoad(c, prefix, perShard(owner, shards), paced(probePace, probeTimeout))}
}

// finish stops the writers and summarises the load relative to the moment
// of the disruption.
func (l *probeLoad) finish(disruption time.Time) record.Availability {
	l.halt()
	return summarizeLoad(l.samples, l.writers, l.start, time.Now(), disruption)
}
