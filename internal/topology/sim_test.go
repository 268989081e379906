package topology

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

// simProc is one ValkeyNode with its pod and Valkey process, as the
// simulator's ground truth.
type simProc struct {
	name      string
	shard     int
	lifecycle Lifecycle
	join      JoinType
	version   int
	phase     PodPhase
	ip        string
	unsched   string
	alive     bool
	member    bool
	id        string
	role      Role
	primary   string
	syncTicks int
	knows     map[string]bool
	banned    map[string]bool
	// stalled: the process is paused (SIGSTOP, a long fork): it keeps its
	// data and its pod runs, but it answers nobody, so its peers flag it
	// failed and Valkey may promote its replica.
	stalled bool
}

// healthy: the process runs and answers.
func (p *simProc) healthy() bool { return p.alive && !p.stalled }

func (p *simProc) synced() bool { return p.role == RoleReplica && p.syncTicks >= 2 }

// sim is a tiny in-memory cluster: it turns Plan's actions into state
// changes, lets pods start, gossip spread, replicas sync and Valkey fail
// over by itself, and checks that every action is legal when applied.
type sim struct {
	t             testing.TB
	shards        int
	replicas      int
	creating      bool
	atomic        bool
	batch         int
	version       int
	unschedulable bool
	procs         []*simProc // every process ever created, in creation order
	owner         [TotalSlots]string
	seq           int
	failovers     map[int]int
	takeovers     int
	forced        int
	// unreported: processes whose end the kubelet does not report (a
	// Kubernetes node gone silent, say): the planner sees their pods gone
	// but not their process exited.
	unreported      map[string]bool
	pendingFailover map[string]int
	trace           []string
	// silent are the nodes the operator cannot reach this tick although
	// the cluster sees them fine (a partial view).
	silent map[string]bool
	// hidden are the nodes whose pod the operator cannot see (relabelled
	// out of its cache) while the process runs and its peers reach it.
	hidden map[string]bool
	// waves counts the waves that acted (neither Wait nor Done).
	waves int
	rng   *rand.Rand
	// onPlan, when set, sees every tick's input and the wave planned.
	onPlan func(in Input, wv Wave)
}

func newSim(t testing.TB, shards, replicas int) *sim {
	return &sim{t: t, shards: shards, replicas: replicas, creating: true, batch: 64,
		failovers: map[int]int{}, pendingFailover: map[string]int{}, unreported: map[string]bool{}, silent: map[string]bool{}, hidden: map[string]bool{}, rng: rand.New(rand.NewPCG(1, 2))}
}

func (s *sim) byName(name string) *simProc {
	for _, p := range s.procs {
		if p.name == name && p.member {
			return p
		}
	}
	s.t.Fatalf("no member %q", name)
	return nil
}

func (s *sim) byID(id string) *simProc {
	for _, p := range s.procs {
		if p.id == id {
			return p
		}
	}
	return nil
}

func (s *sim) members() []*simProc {
	var out []*simProc
	for _, p := range s.procs {
		if p.member {
			out = append(out, p)
		}
	}
	return out
}

func (s *sim) slotsOf(id string) []SlotRange {
	return rangesOf(func(slot int) bool { return s.owner[slot] == id && id != "" })
}

func (s *sim) holders() []string {
	var out []string
	for id := range s.ownership() {
		out = append(out, id)
	}
	slices.Sort(out)
	return out
}

func (s *sim) quorum() bool {
	hs := s.holders()
	ok := 0
	for _, id := range hs {
		if p := s.byID(id); p != nil && p.healthy() {
			ok++
		}
	}
	return 2*ok > len(hs)
}

func (s *sim) ownership() map[string][]SlotRange {
	out := map[string][]SlotRange{}
	for slot, id := range s.owner {
		if id == "" {
			continue
		}
		rs := out[id]
		if k := len(rs); k > 0 && rs[k-1].End == slot-1 {
			rs[k-1].End = slot
		} else {
			rs = append(rs, SlotRange{Start: slot, End: slot})
		}
		out[id] = rs
	}
	return out
}

func (s *sim) view(p *simProc, owned map[string][]SlotRange, quorum bool) *View {
	v := &View{ID: p.id, Role: p.role, PrimaryID: p.primary, ReplOffset: int64(p.syncTicks)}
	if p.role == RolePrimary {
		v.Slots = owned[p.id]
	}
	ids := make([]string, 0, len(p.knows))
	for id := range p.knows {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	for _, id := range ids {
		q := s.byID(id)
		peer := Peer{ID: id, IP: q.ip, Role: q.role, PrimaryID: q.primary}
		if q.role == RolePrimary {
			peer.Slots = owned[id]
		}
		if !q.healthy() {
			peer.Fail, peer.PFail = quorum, !quorum
		}
		v.Peers = append(v.Peers, peer)
	}
	okAll := true
	for id, rs := range owned {
		if id == p.id || p.knows[id] {
			v.SlotsAssigned += CountSlots(rs)
			if q := s.byID(id); !q.alive {
				okAll = false
			}
		}
	}
	v.ClusterOK = okAll && v.SlotsAssigned == TotalSlots
	if p.role == RoleReplica {
		v.HoldsData = p.synced()
		if q := s.byID(p.primary); q != nil && q.healthy() {
			v.LinkUp = true
			v.SyncDone = p.synced()
		}
	}
	return v
}

func (s *sim) input() Input {
	in := Input{Shards: s.shards, ReplicasPerShard: s.replicas, Creating: s.creating,
		AtomicMigration: s.atomic, BatchSize: s.batch}
	owned := s.ownership()
	quorum := s.quorum()
	for _, p := range s.members() {
		m := Member{Name: p.name, ShardIndex: p.shard, Lifecycle: p.lifecycle, JoinType: p.join,
			Outdated: p.version != s.version, NodeID: p.id, PodCreated: true,
			Pod: Pod{Phase: p.phase, IP: p.ip, Unschedulable: p.unsched, Exited: p.phase == PodGone && !p.alive && !s.unreported[p.name]}}
		if p.healthy() && p.phase == PodRunning && !s.silent[p.name] {
			m.View = s.view(p, owned, quorum)
		}
		if s.hidden[p.name] {
			m.Pod, m.View = Pod{Phase: PodAbsent}, nil
		}
		in.Members = append(in.Members, m)
	}
	return in
}

func (s *sim) fatalf(format string, args ...any) {
	s.t.Helper()
	s.t.Fatalf("%s\nstate (want %dx%d, version %d):\n%s\ntrace:\n%s", fmt.Sprintf(format, args...),
		s.shards, s.replicas, s.version, strings.Join(s.state(), "\n"), strings.Join(s.tail(30), "\n"))
}

// state describes every member, one line each, for failure messages.
func (s *sim) state() []string {
	var out []string
	for _, p := range s.members() {
		line := fmt.Sprintf("%s shard=%d %s %s %s alive=%v stalled=%v synced=%v version=%d slots=%d id=%.6s",
			p.name, p.shard, p.lifecycle, p.phase, p.role, p.alive, p.stalled, p.synced(), p.version, CountSlots(s.slotsOf(p.id)), p.id)
		if p.role == RoleReplica {
			line += " of=" + s.label(p.primary)
		}
		out = append(out, line)
	}
	for _, id := range s.holders() {
		if q := s.byID(id); q == nil || !q.member {
			out = append(out, fmt.Sprintf("slots=%d held by non-member %s", CountSlots(s.slotsOf(id)), s.label(id)))
		}
	}
	return out
}

func (s *sim) label(id string) string {
	if q := s.byID(id); q != nil {
		return q.name
	}
	return id
}

func (s *sim) tail(n int) []string {
	if len(s.trace) > n {
		return s.trace[len(s.trace)-n:]
	}
	return s.trace
}

func (s *sim) alive(name string) *simProc {
	p := s.byName(name)
	if !p.alive || p.phase != PodRunning {
		s.fatalf("action on %s, which is not running", name)
	}
	if p.stalled || s.silent[name] {
		s.fatalf("action on %s, which the operator cannot reach", name)
	}
	return p
}

// step runs one tick: plan a wave, check the planner is deterministic and
// independent of member order, apply every action of the wave, settle.
func (s *sim) step() Wave { return s.stepChecked(nil) }

func (s *sim) stepChecked(check func(a Action)) Wave {
	s.t.Helper()
	in := s.input()
	wv := Plan(in)
	shuffled := in
	shuffled.Members = slices.Clone(in.Members)
	s.rng.Shuffle(len(shuffled.Members), func(i, j int) {
		shuffled.Members[i], shuffled.Members[j] = shuffled.Members[j], shuffled.Members[i]
	})
	if b := Plan(shuffled); b.String() != wv.String() {
		s.fatalf("plan depends on member order: %v vs %v", wv, b)
	}
	s.checkWave(wv)
	if s.onPlan != nil {
		s.onPlan(in, wv)
	}
	for _, a := range wv.Actions {
		if check != nil {
			check(a)
		}
		s.trace = append(s.trace, a.String())
	}
	if wv.Done() {
		return wv
	}
	s.waves++
	for _, a := range wv.Actions {
		s.apply(a)
	}
	s.settle()
	return wv
}

// checkWave enforces the wave contract: Waits and Done stand alone; no
// two actions touch one slot; at most one failover, and never with another
// action on that shard's roles.
func (s *sim) checkWave(wv Wave) {
	s.t.Helper()
	if len(wv.Actions) == 0 {
		s.fatalf("empty wave")
	}
	slots := map[int]bool{}
	failovers := 0
	for _, a := range wv.Actions {
		if (a.Kind == KindWait || a.Kind == KindDone) && len(wv.Actions) > 1 {
			s.fatalf("%s inside a wave of %d: %v", a.Kind, len(wv.Actions), wv)
		}
		var rs []SlotRange
		switch a.Kind {
		case KindMigrateSlots:
			rs = a.MigrateSlots.Slots
		case KindAddSlots:
			rs = a.AddSlots.Ranges
		case KindFailover:
			failovers++
		}
		for _, r := range rs {
			for slot := r.Start; slot <= r.End; slot++ {
				if slots[slot] {
					s.fatalf("slot %d touched twice in one wave: %v", slot, wv)
				}
				slots[slot] = true
			}
		}
	}
	if failovers > 0 && len(wv.Actions) > 1 {
		s.fatalf("failover in a wave with other actions: %v", wv)
	}
}

// run loops the planner until Done, calling check before each action is
// applied, and fails after maxSteps ticks or 25 waits in a row.
func (s *sim) run(maxSteps int, check func(a Action)) int {
	s.t.Helper()
	waits := 0
	for i := 1; i <= maxSteps; i++ {
		wv := s.stepChecked(check)
		if wv.Done() {
			s.creating = false
			return i
		}
		if !wv.Acts() {
			waits++
			if waits > 25 {
				s.fatalf("stuck waiting: %v", wv)
			}
		} else {
			waits = 0
		}
	}
	s.fatalf("no convergence within %d steps", maxSteps)
	return 0
}

// assertConverged checks the formation criteria and the exact shape.
func (s *sim) assertConverged(maxSpread int) {
	s.t.Helper()
	for slot, id := range s.owner {
		if id == "" {
			s.fatalf("slot %d unassigned", slot)
		}
	}
	ms := s.members()
	if want := s.shards * (1 + s.replicas); len(ms) != want {
		s.fatalf("%d nodes, want %d", len(ms), want)
	}
	hs := s.holders()
	if len(hs) != s.shards {
		s.fatalf("%d slot holders, want %d", len(hs), s.shards)
	}
	lo, hi := TotalSlots, 0
	for _, id := range hs {
		n := CountSlots(s.slotsOf(id))
		lo, hi = min(lo, n), max(hi, n)
		reps := 0
		for _, p := range ms {
			if p.alive && p.role == RoleReplica && p.primary == id {
				reps++
			}
		}
		if reps != s.replicas {
			s.fatalf("primary %s has %d replicas, want %d", s.byID(id).name, reps, s.replicas)
		}
	}
	if hi-lo > maxSpread {
		s.fatalf("slot spread %d..%d exceeds %d", lo, hi, maxSpread)
	}
	for _, p := range ms {
		if !p.alive || p.lifecycle != LifecycleActive || p.version != s.version {
			s.fatalf("node %s: alive=%v lifecycle=%s outdated=%v", p.name, p.alive, p.lifecycle, p.version != s.version)
		}
	}
}

// bootstrapped returns a sim with a formed cluster.
func bootstrapped(t *testing.T, shards, replicas int) *sim {
	t.Helper()
	s := newSim(t, shards, replicas)
	s.run(400, nil)
	s.assertConverged(1)
	return s
}

func (s *sim) allSlotsAssigned() bool {
	return !slices.Contains(s.owner[:], "")
}

func (s *sim) primaryOf(shard int) *simProc {
	for _, p := range s.members() {
		if p.shard == shard && p.alive && p.role == RolePrimary && len(s.slotsOf(p.id)) > 0 {
			return p
		}
	}
	return nil
}

func (s *sim) replicasOf(shard int) []*simProc {
	var out []*simProc
	for _, p := range s.members() {
		if p.shard == shard && p.alive && p.role == RoleReplica {
			out = append(out, p)
		}
	}
	return out
}
