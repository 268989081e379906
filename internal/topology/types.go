package topology

import "time"

// TotalSlots is the number of hash slots in a Valkey cluster.
const TotalSlots = 16384

// DefaultBatchSize is the number of slots moved per tick when Input.BatchSize
// is not set. The classic path moves a batch's keys and settles its slots
// in pipelined calls, so a wave's fixed cost (observing every node, the
// SETSLOT rounds) is what a smaller batch multiplies: 256 slots keep it
// under the keys' own transfer time.
const DefaultBatchSize = 256

// Lifecycle mirrors ValkeyNode.spec.lifecycle.
type Lifecycle string

const (
	LifecycleJoining Lifecycle = "Joining"
	LifecycleActive  Lifecycle = "Active"
	LifecycleLeaving Lifecycle = "Leaving"
)

// JoinType mirrors the valkey.gomomento.com/join-type label. Nodes created
// during bootstrap carry none.
type JoinType string

const (
	JoinNone    JoinType = ""
	JoinReplica JoinType = "replica"
	JoinPrimary JoinType = "primary"
	JoinShard   JoinType = "shard"
)

// PodPhase is what the planner needs to know about a node's pod.
type PodPhase string

const (
	// PodAbsent: no pod object exists (the API server says so, not merely
	// the operator's cache). For a Joining node whose pod was never created
	// this means the node controller has not got to it yet; for any other
	// node the pod is gone for good, because pods are created once and
	// never restarted.
	PodAbsent PodPhase = ""
	// PodPending: created but not running yet (scheduling, pulling, starting).
	PodPending PodPhase = "Pending"
	// PodRunning: the container runs and the pod has an IP.
	PodRunning PodPhase = "Running"
	// PodStopping: the pod is being deleted but its process may still run
	// (SIGTERM sent, grace period not over). It is neither live nor dead: a
	// primary's replica is not promoted over a process that still serves
	// writes, which would lose the writes it acknowledges until it exits.
	// Valkey's own shutdown waits for its replicas to catch up first.
	PodStopping PodPhase = "Stopping"
	// PodGone: the pod terminated (Failed or Succeeded), or is being
	// deleted and no longer runs.
	PodGone PodPhase = "Gone"
)

// Role is a node's role in Valkey's topology.
type Role string

const (
	RolePrimary Role = "primary"
	RoleReplica Role = "replica"
)

// Input is everything Plan looks at.
type Input struct {
	// Shards and ReplicasPerShard are the desired shape (during Creating, the
	// bootstrap target).
	Shards           int
	ReplicasPerShard int
	// Creating selects the bootstrap procedure: the cluster has never been
	// formed. Once it has, pass false for good, including after Invalid.
	Creating bool
	// AtomicMigration is true when every node runs Valkey >= 9.0 and slot
	// moves can use CLUSTER MIGRATESLOTS.
	AtomicMigration bool
	// BatchSize caps the slots moved by one MigrateSlots; <= 0 means
	// DefaultBatchSize.
	BatchSize int
	// Members are the cluster's ValkeyNodes, in any order.
	Members []Member
	// Now is the time Member.FailoverRequested is compared with; zero turns
	// the comparison off.
	Now time.Time
	// HoldForTLS: the cluster's TLS Secret is invalid. Only healing goes
	// ahead (see holds); every other change waits for a valid Secret.
	HoldForTLS bool
	// HoldRoll, when set, is why the roll may not start or go on: a fleet
	// rollout has not given the cluster its turn. Only the roll step waits,
	// with this as its message; healing and every other step go ahead.
	HoldRoll string
	// Backoff paces node creations after repeated container failures:
	// while Now is before Backoff.Until, no node is created (a replacement
	// of a lost node included) and every other action goes ahead.
	Backoff ReplacementBackoff
	// HoldForVersion, when set, says why no node may be created and the
	// roll may not go on: a node runs another Valkey version than its
	// image declares, or cannot load the data of the newer primary a
	// downgrade put it under. The held wave waits with this as its
	// detail; repairs other than a creation go ahead.
	HoldForVersion string
	// Unseen are nodes created by an earlier wave that the observation
	// does not show yet: the cache lags the apiserver. A plan of a view
	// without them would create them again, so nothing of it runs until
	// they appear; the wave waits and names them.
	Unseen []string
	// Paused: the cluster's paused annotation holds every action, after
	// the other holds; the wave waits and describes what runs first on
	// resume. Waits and Done stay as they are.
	Paused bool
}

// Member is one ValkeyNode with its pod and, when reachable, its Valkey view.
type Member struct {
	// Name of the ValkeyNode (and of its pod).
	Name       string
	ShardIndex int
	Lifecycle  Lifecycle
	JoinType   JoinType
	// Outdated: the node's spec differs from the freshly resolved one.
	Outdated bool
	// NodeID is the Valkey node ID last recorded for this node (status), used
	// to recognise it in peers' views when it cannot be asked itself.
	NodeID string
	// FailoverRequested is when this node was last sent CLUSTER FAILOVER
	// (zero if never, as recorded on the ValkeyNode), and
	// FailoverRequestedMode with which variant ("" reads as default).
	FailoverRequested     time.Time
	FailoverRequestedMode FailoverMode
	// LeavingSince is when this node was marked Leaving (zero if not, or
	// not recorded).
	LeavingSince time.Time
	Pod          Pod
	// PodCreated: the node's pod was created once (the ValkeyNode's
	// PodCreated condition). A Joining node whose pod is absent after that
	// lost it for good: it will never get another.
	PodCreated bool
	// ComesBack: the node keeps its data on a volume and gets a pod again
	// when this one ends (persistent, created once, not being retired).
	ComesBack bool
	// View is nil when the node could not be asked this tick.
	View *View
	// Storage is what the API server says of a persistent node's
	// volume, read while its pod does not run; nil when not read.
	Storage *Storage
}

// Storage is what the API server itself, asked around the operator's
// cache, says of a persistent node's pod, claim, volume and the
// Kubernetes node the volume is pinned to. A cache miss or a label says
// nothing about any of them: only these reads do.
type Storage struct {
	// PodRuns: the node's pod exists and a container of it runs.
	PodRuns bool
	// Claim is the node's PersistentVolumeClaim.
	Claim string
	// ClaimPhase is the claim's phase; ClaimMissing when it does not
	// exist.
	ClaimPhase ClaimPhase
	// Volume is the PersistentVolume the claim is bound to, "" when none.
	Volume string
	// VolumeMissing: the claim names Volume and Volume does not exist.
	VolumeMissing bool
	// PinnedTo is the Kubernetes node (its hostname label) the volume can
	// only be used on, "" when it is not pinned to one node.
	PinnedTo string
	// PinnedNodeMissing: no Kubernetes node carries PinnedTo's hostname.
	PinnedNodeMissing bool
}

// ClaimPhase mirrors a PersistentVolumeClaim's phase, plus its absence.
type ClaimPhase string

const (
	ClaimMissing ClaimPhase = "Missing"
	ClaimPending ClaimPhase = "Pending"
	ClaimBound   ClaimPhase = "Bound"
	ClaimLost    ClaimPhase = "Lost"
)

// Pod is the observed state of a member's pod.
type Pod struct {
	Phase PodPhase
	IP    string
	// Exited: the kubelet reports that the node's Valkey process ended and
	// that this pod will not run it again (its container terminated under
	// restartPolicy Never, or the pod Failed or Succeeded). It is the one
	// proof of death that allows promoting over a primary before Valkey's
	// own failure detection: a missing pod, a deletion or a missed ping
	// leave open that the process still runs somewhere.
	Exited bool
	// Unschedulable carries the scheduler's reason when a pending pod cannot
	// be placed.
	Unschedulable string
}

// View is one node's answer about itself and the cluster (CLUSTER NODES,
// CLUSTER INFO, INFO REPLICATION and, on Valkey 9, CLUSTER GETSLOTMIGRATIONS).
type View struct {
	ID string
	// Hostname is the name this node announces
	// (cluster-announce-hostname), "" when it announces none.
	Hostname  string
	Role      Role
	PrimaryID string
	// Slots this node serves as a primary.
	Slots []SlotRange
	// ClusterOK is cluster_state:ok.
	ClusterOK bool
	// SlotsAssigned is cluster_slots_assigned as this node sees it.
	SlotsAssigned int
	// Peers are the other nodes this node knows (not itself).
	Peers []Peer
	// LinkUp: replica with master_link_status:up.
	LinkUp bool
	// SyncDone: replica whose initial sync has completed.
	SyncDone bool
	// HoldsData: replica that completed a sync with its primary at some
	// point and keeps that data (up to ReplOffset) even with its link
	// down, as it reports itself. Only such a replica may take over a
	// lost primary: one still in its first sync has nothing.
	HoldsData bool
	// ReplOffset is the replication offset, used to pick the most caught-up
	// replica for a forced takeover.
	ReplOffset int64
	// LinkDownSeconds: how long a replica's link to its primary has been
	// down, as it reports itself (0 while up, -1 if it never synced). It
	// is the clock that bounds the wait for Valkey's own election.
	LinkDownSeconds int64
	// Migrating and Importing are classic (SETSLOT) migrations: slot -> peer
	// node ID.
	Migrating map[int]string
	Importing map[int]string
	// AtomicMigrationInFlight: a CLUSTER MIGRATESLOTS job that involves this
	// node has not finished.
	AtomicMigrationInFlight bool
	// Memory sizes the node's data, for the headroom check of a scale-in.
	Memory Memory
	// Exports are the CLUSTER MIGRATESLOTS jobs this node runs as the
	// source and that have not finished, for status.
	Exports []Export
	// AtomicMigrationFailure describes this node's latest finished
	// CLUSTER MIGRATESLOTS job when it did not succeed ("" otherwise).
	AtomicMigrationFailure string
}

// Memory is a node's INFO MEMORY figures in bytes.
type Memory struct {
	// Used is used_memory; Dataset the part of it that is keys and values.
	Used, Dataset int64
	// Max is maxmemory, 0 when unlimited.
	Max int64
}

// Export is one unfinished CLUSTER MIGRATESLOTS job seen on its source.
type Export struct {
	TargetID string
	Slots    []SlotRange
}

// Peer is one line of a node's CLUSTER NODES other than its own.
type Peer struct {
	ID string
	IP string
	// Hostname is the name this node has learnt the peer announces, ""
	// until the peer's own ping brings it.
	Hostname  string
	Role      Role
	PrimaryID string
	Slots     []SlotRange
	Fail      bool
	PFail     bool
	Handshake bool
}
