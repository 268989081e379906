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
	t               testing.TB
	shards          int
	replicas        int
	creating        bool
	atomic          bool
	batch           int
	version         int
	unschedulable   bool
	procs           []*simProc // every process ever created, in creation order
	owner           [TotalSlots]string
	seq             int
	failovers       map[int]int
	takeovers       int
	pendingFailover map[string]int
	trace           []string
	// silent are the nodes the operator cannot reach this tick although
	// the cluster sees them fine (a partial view).
	silent map[string]bool
	// waves counts the waves that acted (neither Wait nor Done).
	waves int
	rng   *rand.Rand
}

func newSim(t testing.TB, shards, replicas int) *sim {
	return &sim{t: t, shards: shards, replicas: replicas, creating: true, batch: 64,
		failovers: map[int]int{}, pendingFailover: map[string]int{}, silent: map[string]bool{}, rng: rand.New(rand.NewPCG(1, 2))}
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
			Outdated: p.version != s.version, NodeID: p.id,
			Pod: Pod{Phase: p.phase, IP: p.ip, Unschedulable: p.unsched}}
		if p.healthy() && p.phase == PodRunning && !s.silent[p.name] {
			m.View = s.view(p, owned, quorum)
		}
		in.Members = append(in.Members, m)
	}
	return in
}

func (s *sim) fatalf(format string, args ...any) {
	s.t.Helper()
	s.t.Fatalf("%s\ntrace:\n%s", fmt.Sprintf(format, args...), strings.Join(s.tail(30), "\n"))
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

func (s *sim) promote(r *simProc) {
	old := s.byID(r.primary)
	for slot, id := range s.owner {
		if id == old.id {
			s.owner[slot] = r.id
		}
	}
	for _, q := range s.procs {
		if q.alive && q != r && q.role == RoleReplica && q.primary == old.id {
			q.primary = r.id
		}
	}
	r.role, r.primary = RolePrimary, ""
	if old.alive {
		old.role, old.primary, old.syncTicks = RoleReplica, r.id, 2
	}
	s.failovers[r.shard]++
}

func (s *sim) apply(a Action) {
	s.t.Helper()
	switch a.Kind {
	case KindCreateNode:
		s.seq++
		p := &simProc{name: fmt.Sprintf("n%03d", s.seq), shard: a.CreateNode.ShardIndex,
			lifecycle: LifecycleJoining, join: a.CreateNode.JoinType, version: s.version,
			phase: PodPending, member: true, knows: map[string]bool{}, banned: map[string]bool{}}
		if s.unschedulable {
			p.unsched = "0/3 nodes are available: insufficient memory"
		}
		s.procs = append(s.procs, p)
	case KindMeet:
		n, seed := s.alive(a.Meet.Node), s.alive(a.Meet.Seed)
		if a.Meet.SeedIP != seed.ip {
			s.fatalf("meet with wrong address %q", a.Meet.SeedIP)
		}
		n.knows[seed.id], seed.knows[n.id] = true, true
	case KindForget:
		id := a.Forget.NodeID
		var want []string
		if q := s.byID(id); q != nil && q.alive && q.phase == PodRunning && q.lifecycle != LifecycleLeaving {
			s.fatalf("forgetting %s, whose pod still runs and which was not retired", q.name)
		}
		for _, p := range s.members() {
			if p.healthy() && !s.silent[p.name] && p.phase == PodRunning && p.id != id && !(p.role == RoleReplica && p.primary == id) {
				want = append(want, p.name)
			}
		}
		slices.Sort(want)
		if !slices.Equal(want, a.Forget.On) {
			s.fatalf("forget %s sent to %v, want every live node %v", id, a.Forget.On, want)
		}
		for _, name := range a.Forget.On {
			p := s.alive(name)
			delete(p.knows, id)
			p.banned[id] = true
		}
		s.dropUnknownOwners()
	case KindAddSlots:
		p := s.alive(a.AddSlots.Node)
		if p.role != RolePrimary {
			s.fatalf("ADDSLOTS on replica %s", p.name)
		}
		for _, r := range a.AddSlots.Ranges {
			for slot := r.Start; slot <= r.End; slot++ {
				if s.owner[slot] != "" {
					s.fatalf("slot %d assigned twice", slot)
				}
				s.owner[slot] = p.id
			}
		}
	case KindReplicate:
		p := s.alive(a.Replicate.Node)
		q := s.byID(a.Replicate.PrimaryID)
		if len(s.slotsOf(p.id)) > 0 {
			s.fatalf("REPLICATE on slot holder %s", p.name)
		}
		if q == nil || !q.alive || q.role != RolePrimary || !p.knows[q.id] {
			s.fatalf("REPLICATE %s to unusable primary %s", p.name, a.Replicate.Primary)
		}
		for _, o := range s.procs {
			if o.alive && o.role == RoleReplica && o.primary == p.id {
				s.fatalf("REPLICATE on %s, which has replicas", p.name)
			}
		}
		p.role, p.primary, p.syncTicks = RoleReplica, q.id, 0
	case KindMarkActive:
		s.byName(a.MarkActive.Node).lifecycle = LifecycleActive
	case KindMarkLeaving:
		s.byName(a.MarkLeaving.Node).lifecycle = LifecycleLeaving
	case KindDeleteNode:
		p := s.byName(a.DeleteNode.Node)
		if p.alive && len(s.slotsOf(p.id)) > 0 {
			s.fatalf("deleting %s while it holds slots", p.name)
		}
		p.member, p.alive, p.phase = false, false, PodGone
	case KindFailover:
		r := s.alive(a.Failover.Node)
		old := s.byID(r.primary)
		if r.role != RoleReplica || old == nil {
			s.fatalf("FAILOVER on non-replica %s", r.name)
		}
		if a.Failover.Mode == FailoverDefault && !old.alive {
			s.fatalf("default FAILOVER with dead primary")
		}
		if a.Failover.Mode == FailoverTakeover {
			s.takeovers++
		}
		s.promote(r)
	case KindMigrateSlots:
		m := a.MigrateSlots
		from, to := s.alive(m.From), s.alive(m.To)
		if to.role != RolePrimary || from.id != m.FromID || to.id != m.ToID {
			s.fatalf("bad migration %v", a)
		}
		wantMethod := MigrationClassic
		if s.atomic {
			wantMethod = MigrationAtomic
		}
		if m.Method != wantMethod {
			s.fatalf("method %s, want %s", m.Method, wantMethod)
		}
		if m.Method == MigrationClassic && CountSlots(m.Slots) > s.batch {
			s.fatalf("batch of %d slots exceeds %d", CountSlots(m.Slots), s.batch)
		}
		for _, r := range m.Slots {
			for slot := r.Start; slot <= r.End; slot++ {
				if s.owner[slot] != from.id {
					s.fatalf("migrating slot %d not owned by %s", slot, from.name)
				}
				s.owner[slot] = to.id
			}
		}
	case KindWait:
	default:
		s.fatalf("unexpected action %v", a)
	}
}

// dropUnknownOwners unassigns the slots of a node no live node remembers.
func (s *sim) dropUnknownOwners() {
	for slot, id := range s.owner {
		if id == "" || s.byID(id).alive {
			continue
		}
		known := false
		for _, p := range s.procs {
			if p.alive && p.knows[id] {
				known = true
			}
		}
		if !known {
			s.owner[slot] = ""
		}
	}
}

// settle advances time by one tick.
func (s *sim) settle() {
	for _, p := range s.procs {
		if p.member && p.phase == PodPending && p.unsched == "" {
			p.phase, p.alive, p.role = PodRunning, true, RolePrimary
			p.ip = fmt.Sprintf("10.0.%d.%d", s.seqOf(p)/250, s.seqOf(p)%250+1)
			p.id = fmt.Sprintf("%040x", s.seqOf(p)*7919)
		}
		if p.healthy() && p.role == RoleReplica && s.byID(p.primary).healthy() {
			p.syncTicks++
		}
	}
	s.dropUnknownOwners()
	// One round of gossip.
	snapshot := map[*simProc][]string{}
	for _, p := range s.procs {
		for id := range p.knows {
			snapshot[p] = append(snapshot[p], id)
		}
	}
	for _, p := range s.procs {
		if !p.healthy() {
			continue
		}
		for _, id := range snapshot[p] {
			q := s.byID(id)
			if !q.healthy() {
				continue
			}
			if !q.banned[p.id] {
				q.knows[p.id] = true
			}
			for _, other := range snapshot[q] {
				if other != p.id && !p.banned[other] {
					p.knows[other] = true
				}
			}
		}
	}
	// Valkey's own failover: a replica of a failed primary is promoted one
	// tick later, but only while a majority of primaries is healthy.
	for _, id := range s.holders() {
		old := s.byID(id)
		if old.healthy() || !s.quorum() {
			delete(s.pendingFailover, id)
			continue
		}
		var r *simProc
		for _, q := range s.procs {
			if q.healthy() && q.role == RoleReplica && q.primary == id {
				r = q
				break
			}
		}
		if r == nil {
			continue
		}
		s.pendingFailover[id]++
		if s.pendingFailover[id] > 1 {
			delete(s.pendingFailover, id)
			s.promote(r)
		}
	}
}

func (s *sim) seqOf(p *simProc) int {
	var n int
	fmt.Sscanf(p.name, "n%d", &n)
	return n
}

func (s *sim) kill(name string) {
	p := s.byName(name)
	p.alive, p.phase = false, PodGone
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
