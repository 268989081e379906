package topology

import (
	"fmt"
	"strings"
)

// Kind tags an Action.
type Kind string

const (
	KindDone         Kind = "Done"
	KindWait         Kind = "Wait"
	KindCreateNode   Kind = "CreateNode"
	KindMeet         Kind = "Meet"
	KindForget       Kind = "Forget"
	KindAddSlots     Kind = "AddSlots"
	KindReplicate    Kind = "Replicate"
	KindMarkActive   Kind = "MarkActive"
	KindMarkLeaving  Kind = "MarkLeaving"
	KindDeleteNode   Kind = "DeleteNode"
	KindFailover     Kind = "Failover"
	KindMigrateSlots Kind = "MigrateSlots"
	// KindCancelMigrations: CLUSTER CANCELSLOTMIGRATIONS on a source.
	KindCancelMigrations Kind = "CancelMigrations"
	// KindClearSlotStates: CLUSTER SETSLOT STABLE on a primary, replicated
	// to its replicas.
	KindClearSlotStates Kind = "ClearSlotStates"
)

// Tier is the priority tier that produced an Action; it drives the
// cluster state (see DecideState).
type Tier string

const (
	TierBootstrap Tier = "Bootstrap"
	TierStability Tier = "Stability"
	TierTopology  Tier = "Topology"
	TierUpdate    Tier = "Update"
	TierCleanup   Tier = "Cleanup"
	// TierSteady is used for Done and for waiting on a converged-looking
	// cluster to settle.
	TierSteady Tier = "Steady"
)

// FailoverMode selects the CLUSTER FAILOVER variant.
type FailoverMode string

const (
	// FailoverDefault is CLUSTER FAILOVER: the replica catches up first.
	FailoverDefault FailoverMode = "default"
	// FailoverForce is CLUSTER FAILOVER FORCE: no handshake with the
	// primary, whose process is known to be gone, but a majority of
	// primaries still votes, so the epoch stays agreed.
	FailoverForce FailoverMode = "force"
	// FailoverTakeover is CLUSTER FAILOVER TAKEOVER: no primary agreement.
	FailoverTakeover FailoverMode = "takeover"
)

// strength orders the modes by how little each needs from the rest of the
// cluster: default the primary and a majority, force a majority, takeover
// nothing. "" is a request recorded before modes were, a default one.
func (m FailoverMode) strength() int {
	switch m {
	case FailoverForce:
		return 1
	case FailoverTakeover:
		return 2
	}
	return 0
}

// MigrationMethod selects how slots are moved.
type MigrationMethod string

const (
	// MigrationAtomic is CLUSTER MIGRATESLOTS (Valkey >= 9.0), run on the
	// source; it completes asynchronously.
	MigrationAtomic MigrationMethod = "atomic"
	// MigrationClassic is SETSLOT IMPORTING/MIGRATING, MIGRATE of every key,
	// then SETSLOT NODE on both ends. It must be safe to run again on slots
	// already half-moved: Plan re-issues it for slots left MIGRATING.
	MigrationClassic MigrationMethod = "classic"
)

// Command names the Valkey command that moves the slots, for messages.
func (m MigrationMethod) Command() string {
	if m == MigrationAtomic {
		return "CLUSTER MIGRATESLOTS"
	}
	return "SETSLOT and MIGRATE"
}

// Documented log lines the reconciler should log for the matching actions
// (Action.Reason carries them).
const (
	ReasonWaitAutoFailover = "primary unhealthy but replicas exist, waiting for auto-failover"
	ReasonTakeover         = "no quorum — issued TAKEOVER on replica"
	// ReasonElectionOverdue: a majority of primaries is healthy, yet no
	// replica was elected within ElectionDeadline; the best one that holds
	// the data takes over.
	ReasonElectionOverdue = "no replica elected in time — issued TAKEOVER on the most caught-up replica"
	// ReasonProcessExited: the kubelet reports that the primary's Valkey
	// process ended, so nothing can still be serving its writes; its most
	// caught-up replica is promoted at once rather than after Valkey's own
	// cluster-node-timeout and election delay.
	ReasonProcessExited = "primary's process exited — issued FAILOVER FORCE on the most caught-up replica"
	ReasonUnschedulable = "bootstrap blocked: pod cannot be scheduled"
	ReasonRollFailover  = "failover to up-to-date replica for rolling upgrade"
	// ReasonRetireOutdatedJoiner: a node created for a roll whose spec
	// changed again before it joined is retired rather than waited for.
	ReasonRetireOutdatedJoiner = "retiring a joining node whose spec changed again"
	// ReasonReplaceUnplaceable: a joining node whose pod the scheduler
	// cannot place, and whose spec has changed since (a placement fixed,
	// say), goes, so that one with the current spec takes its place.
	ReasonReplaceUnplaceable = "replacing a node the scheduler cannot place, whose spec has changed"
	// ReasonHandOver: a primary's pod is being deleted (deletion, eviction,
	// drain) while its process still serves; a synced replica takes over
	// before the process gets SIGTERM.
	ReasonHandOver         = "handing a stopping primary's role to an in-sync replica"
	ReasonFailoverInFlight = "waiting for the requested failover to complete"
	// ReasonRetryMigration: the source's previous CLUSTER MIGRATESLOTS job
	// failed; the move is tried again.
	ReasonRetryMigration = "retrying a failed slot migration"
	// ReasonCancelReversedMove: a CLUSTER MIGRATESLOTS job feeds a shard
	// the desired shape no longer keeps (the shard count was lowered
	// while it ran); finishing it would only move the slots back.
	ReasonCancelReversedMove = "cancelling slot migrations into a shard the desired shape no longer keeps"
	// ReasonPromoteMigrationHeir: the replica of a dead, slotless migration
	// target is promoted so the migration can resume on it.
	ReasonPromoteMigrationHeir = "promoting the replica of a dead slot migration end"
	// ReasonMigrationPeerDemoted: the other end of an interrupted slot
	// migration is a replica now and its primary cannot take its place.
	ReasonMigrationPeerDemoted = "waiting for the demoted end of a slot migration to have a healthy primary"
	// ReasonReplicaSyncing: a replica in its place has not finished
	// loading its primary's data.
	ReasonReplicaSyncing   = "waiting for a replica to finish its initial sync"
	ReasonPodUnschedulable = "pod cannot be scheduled"
	ReasonPodPending       = "waiting for pod to run"
	// ReasonPodStopping: a pod is being deleted and its process has not
	// exited yet.
	ReasonPodStopping = "waiting for a stopping pod's process to exit"
	// ReasonStrandedReplica: a replica whose primary is gone for good and
	// held no slot, with no primary in its shard to follow instead.
	ReasonStrandedReplica = "deleting a replica of a departed primary that held no slot"
	// ReasonKeepPromotedLeaver: a replica being retired was promoted by
	// Valkey when its primary died, before it left; it holds the shard's
	// keys and no replica can take them over, so it is kept.
	ReasonKeepPromotedLeaver = "keeping a retiring replica that Valkey promoted: it holds the shard's only copy"
	// ReasonReceiverNotReady: a primary due to receive slots does not
	// yet say cluster_state:ok itself (it has not learnt every slot's
	// owner, or started under two seconds ago); clients redirected to it
	// would get CLUSTERDOWN.
	ReasonReceiverNotReady = "waiting for a receiving primary to report cluster_state ok"
	// ReasonPeerNameUnknown: a node that is to serve slots is not yet
	// known by its announced hostname to every other node; those would
	// send clients to "?" in CLUSTER SHARDS, CLUSTER SLOTS and MOVED.
	ReasonPeerNameUnknown = "waiting for every node to learn the hostname of an up-to-date replica"
	// ReasonDepartureGrace: a node retired by scale-in is kept
	// DepartureGrace after it was marked Leaving, redirecting clients.
	ReasonDepartureGrace = "letting clients learn that a retired node's slots moved before it leaves"
	// ReasonScaleInNoHeadroom: a scale-in would leave the remaining
	// primaries too full; the detail names the figures.
	ReasonScaleInNoHeadroom = "scale-in held: the remaining primaries lack memory for the data they would receive"
	// ReasonPrimaryFlaggedButRunning: peers flag a slot-holding primary
	// FAIL (it stalled past the node timeout) but its pod never stopped and
	// it answers; its keys are only in its memory, so it is never forgotten
	// on a flag alone and Valkey clears the flag by itself.
	ReasonPrimaryFlaggedButRunning = "primary flagged failed by its peers but its process runs, waiting for the flag to clear"
	// ReasonHeldForTLS: a change waits while the TLS Secret is invalid.
	ReasonHeldForTLS = "topology changes wait for a valid TLS Secret"
	// ReasonReplacementBackoff: node creations wait after repeated
	// container failures (Input.Backoff).
	ReasonReplacementBackoff = "replacements back off after repeated container failures"
	// ReasonHeldForVersion: node creations and the roll wait while the
	// Valkey version check fails (Input.HoldForVersion, the detail).
	ReasonHeldForVersion = "node creations held by the Valkey version check"
	// ReasonNodesUnseen: the wave waits until the observation shows the
	// nodes an earlier wave created (Input.Unseen, the detail).
	ReasonNodesUnseen = "waiting for created nodes to appear in the operator's view"
	// ReasonPaused: the paused annotation holds every action
	// (Input.Paused); the detail describes the first of them, so the wait
	// reads "paused; next on resume: <what runs first>".
	ReasonPaused = "paused; next on resume"
	// ReasonPodMissingButAnswers: a slot owner's pod is missing from the
	// operator's view (deleted, or relabelled out of its cache) while its
	// peers still reach its process; nothing is replaced on that alone.
	ReasonPodMissingButAnswers = "slot owner's pod is missing but its peers still reach it"
	// ReasonEmptyReplicaOfLostPrimary: a lost primary's only replicas
	// never finished their first sync; they hold none of its keys.
	ReasonEmptyReplicaOfLostPrimary = "deleting a replica that never finished its sync with a lost primary"
	// ReasonPrimaryLostNoReplica: a primary is gone with no replica that
	// holds its keys; they are lost and a fresh primary takes its slots.
	ReasonPrimaryLostNoReplica = "primary lost with no replica, forgetting it; a fresh primary takes its slots"
	// ReasonVolumeLost: a persistent node's claim, volume or the
	// Kubernetes node its volume is pinned to is gone for good (see
	// VolumeLost); it can never come back with its data, so it goes like
	// a node whose process is lost, and is replaced.
	ReasonVolumeLost = "deleting a node whose volume is lost for good"
	ReasonNodeSilent = "waiting for node to answer"
	ReasonMeet       = "cluster meet issued"
	// ReasonReaddress: members that kept their node IDs across new pods
	// know each other only at their old addresses; each is met at the
	// address it answers from now.
	ReasonReaddress     = "meeting members at their new addresses"
	ReasonCompletedJoin = "completed join"
	ReasonFormed        = "cluster formed, transitioning to Active"
)

// Action is the planner's answer: exactly one of the payload pointers that
// matches Kind is set (none for Done and Wait).
type Action struct {
	Kind Kind
	Tier Tier
	// Reason is a fixed message suitable as a log message.
	Reason string
	// Detail names the nodes, slots or blocker involved.
	Detail string
	// Cause names what a Wait is held up by, for status; CauseNone for
	// every other action and for the waits that are steps of a procedure.
	Cause WaitCause
	// LosesData: done successfully, the action drops keys nobody else
	// holds (a primary lost with no replica); the reconciler reports it
	// as DataLost. What is reported never depends on Reason's wording.
	LosesData bool
	// Retry: the action repeats one that failed (a slot move whose last
	// attempt failed), so it is logged and paced as a retry.
	Retry bool

	CreateNode   *CreateNode
	Meet         *Meet
	Forget       *Forget
	AddSlots     *AddSlots
	Replicate    *Replicate
	MarkActive   *NodeRef
	MarkLeaving  *NodeRef
	DeleteNode   *NodeRef
	Failover     *Failover
	MigrateSlots *MigrateSlots
	// CancelMigrations names the source whose atomic migrations stop.
	CancelMigrations *NodeRef
	ClearSlotStates  *ClearSlotStates
}

// CreateNode asks for a new ValkeyNode in Joining.
type CreateNode struct {
	ShardIndex int
	JoinType   JoinType
}

// Meet: run CLUSTER MEET <ip> <port> on Node for every seed, in order.
type Meet struct {
	Node  string
	Seeds []Seed
}

// Seed is a member another one is introduced to.
type Seed struct {
	Name string
	IP   string
}

// Forget: run CLUSTER FORGET NodeID on every member listed in On, in the
// same tick (forgets are not gossiped; a peer that still remembers the node
// would teach it back). On holds every reachable member except the
// forgotten node itself and nodes replicating it, which Valkey refuses.
type Forget struct {
	NodeID string
	// Node is the forgotten member's name, or its ID when no member of
	// the cluster has it.
	Node string
	On   []string
}

// AddSlots: CLUSTER ADDSLOTSRANGE on Node.
type AddSlots struct {
	Node   string
	Ranges []SlotRange
}

// Replicate: CLUSTER REPLICATE PrimaryID on Node. Primary names the member
// that owns PrimaryID.
type Replicate struct {
	Node      string
	Primary   string
	PrimaryID string
}

// NodeRef names one member: for MarkActive and MarkLeaving, set
// spec.lifecycle; for DeleteNode, delete the ValkeyNode; for
// CancelMigrations, the source to send CLUSTER CANCELSLOTMIGRATIONS.
type NodeRef struct {
	Node string
}

// ClearSlotStates: CLUSTER SETSLOT <slot> STABLE for every slot of Slots
// on the primary Node, which holds no migration state for them; Valkey
// replicates the command, and its replicas drop the state they kept.
type ClearSlotStates struct {
	Node  string
	Slots []SlotRange
}

// Failover: CLUSTER FAILOVER [TAKEOVER] on Node, a replica.
type Failover struct {
	Node string
	Mode FailoverMode
}

// MigrateSlots moves Slots from the primary From to the primary To. A
// classic move carries one batch (one range); an atomic one carries every
// range the source gives the target, in one CLUSTER MIGRATESLOTS.
type MigrateSlots struct {
	From   string
	FromID string
	To     string
	ToID   string
	ToIP   string
	Slots  []SlotRange
	Method MigrationMethod
	// EmptiesSource: the wave's atomic moves take every slot From holds,
	// so From is first told to stay an empty primary once they are done
	// (cluster-allow-replica-migration no) rather than turn itself into a
	// replica of the target that took its last slot. That demotion is
	// gossiped at once, and a node that hears it before it hears the
	// target claim the slots drops them from its map: with a slot
	// unowned it reports cluster_state:fail and answers every client
	// CLUSTERDOWN until the target's claim reaches it, tens of
	// milliseconds when many moves finish at once. An empty primary that
	// stops claiming its slots keeps them bound on the other nodes until
	// the claim arrives, and redirects clients to the target meanwhile.
	EmptiesSource bool
}

// Done reports whether there is nothing left to do.
func (a Action) Done() bool { return a.Kind == KindDone }

// Acts reports whether the action changes anything (it is neither a Wait
// nor Done).
func (a Action) Acts() bool { return a.Kind != KindWait && a.Kind != KindDone }

// Describe is the action as one human sentence, for conditions and
// Events: its reason and detail, its rendering when it has neither.
func (a Action) Describe() string {
	parts := []string{}
	if a.Reason != "" {
		parts = append(parts, a.Reason)
	}
	if a.Detail != "" {
		parts = append(parts, a.Detail)
	}
	if len(parts) == 0 {
		return a.String()
	}
	return strings.Join(parts, ": ")
}

// String renders a one-line summary for logs and test failures.
func (a Action) String() string {
	var b strings.Builder
	b.WriteString(string(a.Kind))
	switch {
	case a.CreateNode != nil:
		fmt.Fprintf(&b, " shard=%d join=%q", a.CreateNode.ShardIndex, a.CreateNode.JoinType)
	case a.Meet != nil:
		fmt.Fprintf(&b, " node=%s", a.Meet.Node)
		for i, s := range a.Meet.Seeds {
			sep := ","
			if i == 0 {
				sep = " seed="
			}
			fmt.Fprintf(&b, "%s%s(%s)", sep, s.Name, s.IP)
		}
	case a.Forget != nil:
		fmt.Fprintf(&b, " id=%s on=%v", a.Forget.NodeID, a.Forget.On)
	case a.AddSlots != nil:
		fmt.Fprintf(&b, " node=%s slots=%s", a.AddSlots.Node, FormatRanges(a.AddSlots.Ranges))
	case a.Replicate != nil:
		fmt.Fprintf(&b, " node=%s primary=%s(%s)", a.Replicate.Node, a.Replicate.Primary, a.Replicate.PrimaryID)
	case a.MarkActive != nil:
		fmt.Fprintf(&b, " node=%s", a.MarkActive.Node)
	case a.MarkLeaving != nil:
		fmt.Fprintf(&b, " node=%s", a.MarkLeaving.Node)
	case a.DeleteNode != nil:
		fmt.Fprintf(&b, " node=%s", a.DeleteNode.Node)
	case a.Failover != nil:
		fmt.Fprintf(&b, " node=%s mode=%s", a.Failover.Node, a.Failover.Mode)
	case a.MigrateSlots != nil:
		m := a.MigrateSlots
		fmt.Fprintf(&b, " %s->%s slots=%s method=%s", m.From, m.To, FormatRanges(m.Slots), m.Method)
		if m.EmptiesSource {
			b.WriteString(" empties-source")
		}
	case a.CancelMigrations != nil:
		fmt.Fprintf(&b, " node=%s", a.CancelMigrations.Node)
	case a.ClearSlotStates != nil:
		fmt.Fprintf(&b, " node=%s slots=%s", a.ClearSlotStates.Node, FormatRanges(a.ClearSlotStates.Slots))
	}
	if a.Reason != "" {
		fmt.Fprintf(&b, " (%s", a.Reason)
		if a.Detail != "" {
			fmt.Fprintf(&b, ": %s", a.Detail)
		}
		b.WriteString(")")
	} else if a.Detail != "" {
		fmt.Fprintf(&b, " (%s)", a.Detail)
	}
	return b.String()
}

func done(reason string) Action {
	return Action{Kind: KindDone, Tier: TierSteady, Reason: reason}
}

func wait(tier Tier, reason, detail string) Action {
	return Action{Kind: KindWait, Tier: tier, Reason: reason, Detail: detail}
}

// waitOn is a Wait on something a reader can act on or should expect to
// clear by itself; cause, not reason, decides its condition reason.
func waitOn(tier Tier, cause WaitCause, reason, detail string) Action {
	a := wait(tier, reason, detail)
	a.Cause = cause
	return a
}

func pendingDetail(n *node) string {
	if n.Pod.Unschedulable != "" {
		return fmt.Sprintf("%s: %s", n.Name, n.Pod.Unschedulable)
	}
	return n.Name
}

func waitForPod(tier Tier, n *node) Action {
	if n.Pod.Unschedulable != "" {
		reason := ReasonPodUnschedulable
		if tier == TierBootstrap {
			reason = ReasonUnschedulable
		}
		return waitOn(tier, CausePodUnschedulable, reason, pendingDetail(n))
	}
	if n.pending() {
		return waitOn(tier, CausePodPending, ReasonPodPending, n.Name)
	}
	if n.Pod.Phase == PodStopping {
		return waitOn(tier, CausePodStopping, ReasonPodStopping, n.Name)
	}
	return waitOn(tier, CauseNodeSilent, ReasonNodeSilent, n.Name)
}

func meet(tier Tier, n *node, seeds ...*node) Action {
	m := &Meet{Node: n.Name}
	names := make([]string, len(seeds))
	for i, s := range seeds {
		m.Seeds = append(m.Seeds, Seed{Name: s.Name, IP: s.Pod.IP})
		names[i] = s.Name
	}
	return Action{Kind: KindMeet, Tier: tier, Reason: ReasonMeet,
		Detail: fmt.Sprintf("%s meets %s", n.Name, strings.Join(names, ", ")), Meet: m}
}

func replicate(tier Tier, n, p *node) Action {
	return Action{Kind: KindReplicate, Tier: tier, Reason: "attaching replica",
		Detail:    fmt.Sprintf("%s follows %s", n.Name, p.Name),
		Replicate: &Replicate{Node: n.Name, Primary: p.Name, PrimaryID: p.id}}
}

func markActive(tier Tier, n *node) Action {
	return Action{Kind: KindMarkActive, Tier: tier, Reason: ReasonCompletedJoin,
		Detail: n.Name, MarkActive: &NodeRef{Node: n.Name}}
}

func markLeaving(tier Tier, n *node, reason string) Action {
	return Action{Kind: KindMarkLeaving, Tier: tier, Reason: reason,
		Detail: n.Name, MarkLeaving: &NodeRef{Node: n.Name}}
}

func createNode(tier Tier, idx int, jt JoinType, reason string) Action {
	return Action{Kind: KindCreateNode, Tier: tier, Reason: reason,
		Detail:     fmt.Sprintf("shard %d", idx),
		CreateNode: &CreateNode{ShardIndex: idx, JoinType: jt}}
}

func (w *world) migrate(from, to *node, r SlotRange, method MigrationMethod, reason string) Action {
	return w.migrateRanges(from, to, []SlotRange{r}, method, reason)
}

func (w *world) migrateRanges(from, to *node, rs []SlotRange, method MigrationMethod, reason string) Action {
	return Action{Kind: KindMigrateSlots, Tier: TierTopology, Reason: reason,
		Detail: fmt.Sprintf("%s -> %s slots %s by %s", from.Name, to.Name, FormatRanges(rs), method.Command()),
		MigrateSlots: &MigrateSlots{From: from.Name, FromID: from.id, To: to.Name, ToID: to.id,
			ToIP: to.Pod.IP, Slots: rs, Method: method}}
}
