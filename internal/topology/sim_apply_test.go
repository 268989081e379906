package topology

import (
	"fmt"
	"slices"
)

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
		n := s.alive(a.Meet.Node)
		for _, sd := range a.Meet.Seeds {
			seed := s.alive(sd.Name)
			if sd.IP != seed.ip {
				s.fatalf("meet with wrong address %q", sd.IP)
			}
			n.knows[seed.id], seed.knows[n.id] = true, true
		}
	case KindForget:
		id := a.Forget.NodeID
		var want []string
		if q := s.byID(id); q != nil && q.alive && q.phase == PodRunning && q.lifecycle != LifecycleLeaving {
			s.fatalf("forgetting %s, whose pod still runs and which was not retired", q.name)
		}
		if len(s.slotsOf(id)) > 0 && !a.LosesData {
			s.fatalf("forgetting slot owner %s without reporting its keys lost", id)
		}
		if h := s.dataHolder(id, nil); len(s.slotsOf(id)) > 0 && h != nil {
			s.fatalf("forgetting slot owner %s while %s still holds its keys", s.label(id), h.name)
		}
		for _, p := range s.members() {
			if p.healthy() && !s.silent[p.name] && !s.hidden[p.name] && p.phase == PodRunning && p.id != id && !(p.role == RoleReplica && p.primary == id) {
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
		// A pod gone from the API whose process nobody else reaches is
		// gone as far as anyone can prove; one its peers still reach is
		// not, whatever the API says.
		knownAlive := p.healthy() && s.reachedByPeers(p)
		if p.alive && len(s.slotsOf(p.id)) > 0 && (!s.hidden[p.name] || knownAlive) {
			s.fatalf("deleting %s while it holds slots", p.name)
		}
		if p.alive && p.role == RoleReplica && p.synced() && len(s.slotsOf(p.primary)) > 0 &&
			!s.byID(p.primary).alive && s.dataHolder(p.primary, p) == nil {
			s.fatalf("deleting %s, the last copy of lost primary %s's keys", p.name, s.label(p.primary))
		}
		if s.hidden[p.name] && knownAlive {
			s.fatalf("deleting %s, whose process its peers reach while its pod is only missing from the view", p.name)
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
		if a.Failover.Mode == FailoverForce {
			// FORCE skips the primary's handshake: over a process that
			// still runs it drops what that process acknowledges since.
			if old.alive {
				s.fatalf("FAILOVER FORCE on %s while %s's process runs", r.name, old.name)
			}
			if !s.quorum() {
				s.fatalf("FAILOVER FORCE on %s without a majority of primaries to vote", r.name)
			}
			s.forced++
		}
		if !r.synced() && len(s.slotsOf(old.id)) > 0 {
			s.fatalf("FAILOVER on %s, which holds none of %s's keys", r.name, old.name)
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
	case KindClearSlotStates:
		if p := s.alive(a.ClearSlotStates.Node); p.role != RolePrimary {
			s.fatalf("SETSLOT STABLE on non-primary %s", p.name)
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
		// Valkey elects only a replica that synced: one that never did
		// has no data age and stays out of the election.
		var r *simProc
		for _, q := range s.procs {
			if q.healthy() && q.role == RoleReplica && q.primary == id && q.synced() {
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

// reachedByPeers: some other healthy process knows p.
func (s *sim) reachedByPeers(p *simProc) bool {
	for _, q := range s.procs {
		if q != p && q.healthy() && q.knows[p.id] {
			return true
		}
	}
	return false
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

// dataHolder is a running process other than except that holds the keys
// of slot owner id: the owner itself, or a replica of it that synced; a
// stalled one counts, it keeps its memory, and so does a replica being
// retired. Nil when every copy is gone.
func (s *sim) dataHolder(id string, except *simProc) *simProc {
	for _, q := range s.procs {
		if q == except || !q.alive {
			continue
		}
		if q.id == id || (q.role == RoleReplica && q.primary == id && q.synced()) {
			return q
		}
	}
	return nil
}
