// Package record is the data the benchmarks measure and the report is made
// from. The benchmarks in test/e2e write one JSON file per measurement into
// the directory named by $VALKEY_BENCH_OUT; the bench command reads them
// back. Durations are seconds and sizes bytes unless a name says otherwise.
package record

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
)

// EnvDir names the directory records are written to; unset, Save does
// nothing and the benchmarks only report their metrics.
const EnvDir = "VALKEY_BENCH_OUT"

// Bootstrap is one cluster created from nothing to Active.
type Bootstrap struct {
	Version  string `json:"version"` // Valkey's
	Shards   int    `json:"shards"`
	Replicas int    `json:"replicas"`
	// Seconds runs from the create call to the cluster Active with every
	// slot assigned and every member in place.
	Seconds float64 `json:"seconds"`
	// Reconciles are the cluster controller's; AllReconciles adds the node,
	// TLS and ACL controllers'.
	Reconciles    int `json:"reconciles"`
	AllReconciles int `json:"allReconciles"`
}

// Rotation is a series of leaf rotations of a TLS cluster.
type Rotation struct {
	// ProjectionDelay is the runtime's delay between a Secret change and
	// the pods' files changing (the kubelet's share).
	ProjectionDelay float64 `json:"projectionDelay"`
	Nodes           int     `json:"nodes"`
	// Seconds holds, per rotation, the time from the Secret update to every
	// node serving the new certificate to a new connection.
	Seconds []float64 `json:"seconds"`
	// TLSReloadInterval is the operator's safety tick; a change itself is
	// acted on at once.
	TLSReloadInterval float64 `json:"tlsReloadInterval"`
}

// Availability is a steady client load through one disruption.
type Availability struct {
	Scenario string `json:"scenario"`
	Cluster  string `json:"cluster"` // shape and mode, e.g. "3x1 plaintext"
	// Seconds runs from the disruption to the cluster converged again.
	Seconds  float64 `json:"seconds"`
	Requests int     `json:"requests"`
	Failed   int     `json:"failed"`
	P50Ms    float64 `json:"p50Ms"`
	P99Ms    float64 `json:"p99Ms"`
	MaxMs    float64 `json:"maxMs"`
	// Shards are the shards as they were when the disruption began; each
	// has its own writer of keys hashing to its slots.
	Shards []ShardGap `json:"shards"`
	// Timeline is the load in fixed buckets; T is the bucket's start in
	// seconds from the disruption (negative before it).
	Timeline []Bucket `json:"timeline"`
}

// ShardGap is the longest time one shard went without a successful write.
type ShardGap struct {
	Shard        int     `json:"shard"`
	Writes       int     `json:"writes"`
	LongestGapMs float64 `json:"longestGapMs"`
	// AtSeconds is when that window began, from the disruption.
	AtSeconds float64 `json:"atSeconds"`
}

// Bucket is the load during one slice of time.
type Bucket struct {
	T      float64 `json:"t"`
	OK     int     `json:"ok"`
	Failed int     `json:"failed"`
	P99Ms  float64 `json:"p99Ms"`
	// ShardWrites counts the acknowledged writes of each shard's writer.
	ShardWrites []int `json:"shardWrites"`
}

// Resharding is one move of a data set onto a new, empty shard, or off it
// again.
type Resharding struct {
	Method  string `json:"method"`  // "operator", "operator-9", "valkey-cli" or "migrateslots"
	Command string `json:"command"` // what was run or edited
	// Direction is "3 → 4" (onto a new, empty shard) or "4 → 3" (draining
	// that shard again).
	Direction  string `json:"direction"`
	Keys       int    `json:"keys"` // the data set
	ValueBytes int    `json:"valueBytes"`
	KeysMoved  int    `json:"keysMoved"`
	// BytesMoved counts keys and values of the moved keys.
	BytesMoved int64 `json:"bytesMoved"`
	SlotsMoved int   `json:"slotsMoved"`
	// MigrationSeconds runs from the first slot the fourth shard starts to
	// import (or export) to the last slot it gains (or loses), as seen by
	// polling it; TotalSeconds from the edit (or the command) to the end,
	// node start or removal included.
	MigrationSeconds float64 `json:"migrationSeconds"`
	TotalSeconds     float64 `json:"totalSeconds"`
	// Load is a client's experience during the move: one writer per
	// shard, as in Availability.
	Requests     int     `json:"requests"`
	Failed       int     `json:"failed"`
	P99Ms        float64 `json:"p99Ms"`
	LongestGapMs float64 `json:"longestGapMs"`
}

// Footprint is the operator process over one phase with a number of
// clusters.
type Footprint struct {
	Clusters    int     `json:"clusters"`
	Phase       string  `json:"phase"` // "converging" or "idle"
	Seconds     float64 `json:"seconds"`
	CPUSeconds  float64 `json:"cpuSeconds"`
	RSSMiB      float64 `json:"rssMiB"`     // at the end of the phase
	PeakRSSMiB  float64 `json:"peakRssMiB"` // highest sampled during it
	Reconciles  int     `json:"reconciles"`
	APIRequests int     `json:"apiRequests"`
}

// SecretCache is the operator process started while many Secrets that are
// not its own exist, its cache filtered to its own Secrets and Pods or not.
type SecretCache struct {
	Secrets     int  `json:"secrets"`     // unrelated Secrets present
	SecretBytes int  `json:"secretBytes"` // data in each
	Filtered    bool `json:"filtered"`
	// RSSMiB is once the process has gone quiet after starting; PeakRSSMiB
	// the most it ever held (VmHWM); HeapMiB the Go heap in use then.
	RSSMiB     float64 `json:"rssMiB"`
	PeakRSSMiB float64 `json:"peakRssMiB"`
	HeapMiB    float64 `json:"heapMiB"`
}

// Autoscale is one scale-out the autoscaler decided on real load.
type Autoscale struct {
	Trigger string `json:"trigger"` // "memory" or "cpu"
	Cluster string `json:"cluster"`
	// SampleIntervalSeconds is the operator's sampling period in the run,
	// SafetyIntervalSeconds its safety pass of a converged cluster (0 in
	// records from before it was kept).
	SampleIntervalSeconds float64 `json:"sampleIntervalSeconds"`
	SafetyIntervalSeconds float64 `json:"safetyIntervalSeconds,omitempty"`
	// From the threshold crossed (the load in place) to the ScaleOut
	// decision, to the new shard owning slots, and to Active again.
	DecisionSeconds float64 `json:"decisionSeconds"`
	SlotsSeconds    float64 `json:"slotsSeconds"`
	ActiveSeconds   float64 `json:"activeSeconds"`
	// DecisionSeenSeconds is when the benchmark's polling of the status
	// first saw the decision, from the threshold; DecisionSeconds is the
	// autoscaler's own stamp (status.autoscaling.lastScaleOutTime, kept to
	// the second) narrowed by it.
	DecisionSeenSeconds float64 `json:"decisionSeenSeconds,omitempty"`
	// From the decision to the new shard owning slots and to Active again;
	// records from before these were kept have them as the differences of
	// the figures above (see SinceDecision).
	SlotsAfterDecisionSeconds  float64 `json:"slotsAfterDecisionSeconds,omitempty"`
	ActiveAfterDecisionSeconds float64 `json:"activeAfterDecisionSeconds,omitempty"`
}

// SinceDecision returns the times from the decision to the new shard
// owning slots and to Active, derived from the threshold-relative ones in
// a record that does not have them.
func (a Autoscale) SinceDecision() (slots, active float64) {
	slots, active = a.SlotsAfterDecisionSeconds, a.ActiveAfterDecisionSeconds
	if slots == 0 && a.SlotsSeconds > 0 {
		slots = a.SlotsSeconds - a.DecisionSeconds
	}
	if active == 0 && a.ActiveSeconds > 0 {
		active = a.ActiveSeconds - a.DecisionSeconds
	}
	return slots, active
}

// DurableRestart is every pod of a persistent cluster deleted at once,
// beside the limit: a plain valkey-server reloading one primary's share of
// the data from its append-only file.
type DurableRestart struct {
	Version     string `json:"version"` // Valkey's
	Shards      int    `json:"shards"`
	Replicas    int    `json:"replicas"`
	Appendfsync string `json:"appendfsync"`
	// DataBytes is the whole data set, Keys its keys (values of ValueBytes).
	DataBytes  int64 `json:"dataBytes"`
	Keys       int   `json:"keys"`
	ValueBytes int   `json:"valueBytes"`
	// Seconds runs from the deletion to the cluster converged again with
	// every key served by a primary.
	Seconds float64 `json:"seconds"`
	// PlainLoadSeconds runs from starting the plain server on its file of
	// DataBytes/Shards to it answering PING with loading:0.
	PlainLoadSeconds float64 `json:"plainLoadSeconds"`
}

// DurableWrites is valkey-benchmark's SET throughput against a cluster's
// one primary and, back to back, against a plain valkey-server of the same
// append-only settings.
type DurableWrites struct {
	Version string `json:"version"`
	// Appendfsync is "always" or "everysec" with persistence, empty for a
	// cluster in memory only against a plain server with appendonly no.
	Appendfsync string  `json:"appendfsync"`
	Requests    int     `json:"requests"`
	Clients     int     `json:"clients"`
	ValueBytes  int     `json:"valueBytes"`
	ClusterRPS  float64 `json:"clusterRps"`
	PlainRPS    float64 `json:"plainRps"`
}

// Backup is one backup and one restore of the same data, each beside its
// limits measured in the same run: the object store's own transfer of the
// file with a plain client, and a plain valkey-server producing
// (valkey-cli --rdb) and loading it.
type Backup struct {
	Version    string `json:"version"`
	Keys       int    `json:"keys"`
	ValueBytes int    `json:"valueBytes"`
	// Bytes is the backup's size (its RDB files).
	Bytes int64 `json:"bytes"`
	// BackupSeconds and RestoreSeconds run from the start to the end the
	// backup's and the restore's status record.
	BackupSeconds  float64 `json:"backupSeconds"`
	RestoreSeconds float64 `json:"restoreSeconds"`
	// The limits.
	StoreUploadSeconds   float64 `json:"storeUploadSeconds"`
	StoreDownloadSeconds float64 `json:"storeDownloadSeconds"`
	PlainRDBSeconds      float64 `json:"plainRdbSeconds"`
	PlainLoadSeconds     float64 `json:"plainLoadSeconds"`
	// valkey-benchmark's SET p99 against the primary, with no backup and
	// during one, over Requests requests.
	Requests    int     `json:"requests"`
	P99IdleMs   float64 `json:"p99IdleMs"`
	P99DuringMs float64 `json:"p99DuringMs"`
}

// BackupMBps is the backup's throughput in MB/s.
func (b Backup) BackupMBps() float64 { return MBps(b.Bytes, b.BackupSeconds) }

// RestoreMBps is the restore's throughput in MB/s.
func (b Backup) RestoreMBps() float64 { return MBps(b.Bytes, b.RestoreSeconds) }

// MBps is bytes moved in seconds as MB/s; 0 when nothing was timed.
func MBps(bytes int64, seconds float64) float64 {
	if seconds <= 0 {
		return 0
	}
	return float64(bytes) / 1e6 / seconds
}

// Fleet is one operator process with many clusters of one shape, created
// all at once: until every one is Active, then over an idle window once
// they have settled, beside the limit: a plain loop PINGing the same nodes
// at the operator's steady resync interval.
type Fleet struct {
	Shape    string `json:"shape"` // "1x0", "3x1"
	Clusters int    `json:"clusters"`
	Nodes    int    `json:"nodes"`
	// ActiveSeconds runs from the first create call to every cluster
	// Active with every slot assigned.
	ActiveSeconds float64 `json:"activeSeconds"`
	// Converging is the operator process over those seconds: CPU-seconds
	// (user + system), the highest RSS sampled.
	ConvergingCPUSeconds float64 `json:"convergingCpuSeconds"`
	ConvergingPeakRSSMiB float64 `json:"convergingPeakRssMiB"`
	// PeakQueueDepth is the ValkeyCluster controller's workqueue_depth,
	// the highest sampled while converging; ReconcileP50Ms and
	// ReconcileP99Ms its controller_runtime_reconcile_time_seconds over
	// the same time (the upper bound of the histogram bucket).
	PeakQueueDepth float64 `json:"peakQueueDepth"`
	ReconcileP50Ms float64 `json:"reconcileP50Ms"`
	ReconcileP99Ms float64 `json:"reconcileP99Ms"`
	// The idle window, after SettleSeconds with every cluster Active.
	SettleSeconds   float64 `json:"settleSeconds"`
	IdleSeconds     float64 `json:"idleSeconds"`
	IdleCPUSeconds  float64 `json:"idleCpuSeconds"`
	IdleRSSMiB      float64 `json:"idleRssMiB"` // at the end of the window
	IdleReconciles  int     `json:"idleReconciles"`
	IdleAPIRequests int     `json:"idleApiRequests"` // rest_client_requests_total
	// IdleCommands is what the nodes processed during the window, summed
	// over them, by command (INFO commandstats), the benchmark's own INFO
	// calls taken out.
	IdleCommands map[string]int `json:"idleCommands"`
	// The limit: pingloop over a window as long, right after.
	PingIntervalSeconds float64 `json:"pingIntervalSeconds"`
	PingSeconds         float64 `json:"pingSeconds"`
	PingCPUSeconds      float64 `json:"pingCpuSeconds"`
	PingRSSMiB          float64 `json:"pingRssMiB"`
}

// IdleCPUShare is the operator's idle CPU as a share of one core.
func (f Fleet) IdleCPUShare() float64 { return share(f.IdleCPUSeconds, f.IdleSeconds) }

// PingCPUShare is the plain loop's CPU as a share of one core.
func (f Fleet) PingCPUShare() float64 { return share(f.PingCPUSeconds, f.PingSeconds) }

// APIRequestsPerClusterMinute is the operator's idle API traffic per
// cluster and minute.
func (f Fleet) APIRequestsPerClusterMinute() float64 {
	return share(float64(f.IdleAPIRequests), f.IdleSeconds/60*float64(f.Clusters))
}

// CommandsPerNodeMinute is what each node processed per idle minute.
func (f Fleet) CommandsPerNodeMinute() float64 {
	total := 0
	for _, n := range f.IdleCommands {
		total += n
	}
	return share(float64(total), f.IdleSeconds/60*float64(f.Nodes))
}

// share is a/b, 0 when b is not positive.
func share(a, b float64) float64 {
	if b <= 0 {
		return 0
	}
	return a / b
}

// RealNode is one scenario run on one runtime: the real node (a real
// kubelet with containerd and runc) or the local runtime, the same
// scenario code on both in the same run.
type RealNode struct {
	// Runtime is RuntimeRealNode or RuntimeLocal.
	Runtime string `json:"runtime"`
	// Scenario is one of the Scenario* names.
	Scenario string `json:"scenario"`
	// Seconds runs from the scenario's action (the create call, the pod
	// deletion, the deletion of every pod) to the cluster Active and
	// converged again.
	Seconds float64 `json:"seconds"`
	// Keys were written before the action and read back after it; Lost
	// of them did not come back.
	Keys int `json:"keys"`
	Lost int `json:"lost"`
}

// The runtimes and scenarios of RealNode records.
const (
	RuntimeRealNode = "real kubelet"
	RuntimeLocal    = "local runtime"

	ScenarioBootstrapTLS  = "bootstrap of 3×1 TLS"
	ScenarioPrimaryDelete = "primary pod deleted (3×1)"
	ScenarioFullRestart   = "full restart of a persistent 3×1"
)

// File is one record as written to disk: exactly one field is set.
type File struct {
	Bootstrap    *Bootstrap    `json:"bootstrap,omitempty"`
	Rotation     *Rotation     `json:"rotation,omitempty"`
	Availability *Availability `json:"availability,omitempty"`
	Resharding   *Resharding   `json:"resharding,omitempty"`
	Footprint    *Footprint    `json:"footprint,omitempty"`
	SecretCache  *SecretCache  `json:"secretCache,omitempty"`
	Autoscale    *Autoscale    `json:"autoscale,omitempty"`
	// DurableRestart and DurableWrites make the durability section.
	DurableRestart *DurableRestart `json:"durableRestart,omitempty"`
	DurableWrites  *DurableWrites  `json:"durableWrites,omitempty"`
	Backup         *Backup         `json:"backup,omitempty"`
	Fleet          *Fleet          `json:"fleet,omitempty"`
	RealNode       *RealNode       `json:"realNode,omitempty"`
}

// Set is every record of a run, in the order their files sort.
type Set struct {
	Bootstrap      []Bootstrap
	Rotation       []Rotation
	Availability   []Availability
	Resharding     []Resharding
	Footprint      []Footprint
	SecretCache    []SecretCache
	Autoscale      []Autoscale
	DurableRestart []DurableRestart
	DurableWrites  []DurableWrites
	Backup         []Backup
	Fleet          []Fleet
	RealNode       []RealNode
}

var unsafeName = regexp.MustCompile(`[^A-Za-z0-9._-]+`)

// Save writes f as DIR/name.json when $VALKEY_BENCH_OUT names a directory.
func Save(name string, f File) error {
	dir := os.Getenv(EnvDir)
	if dir == "" {
		return nil
	}
	b, err := json.MarshalIndent(f, "", "  ")
	if err != nil {
		return err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, unsafeName.ReplaceAllString(name, "_")+".json"), b, 0o644)
}

// Load reads every record file of dir.
func Load(dir string) (Set, error) {
	var s Set
	paths, err := filepath.Glob(filepath.Join(dir, "*.json"))
	if err != nil {
		return s, err
	}
	sort.Strings(paths)
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			return s, err
		}
		var f File
		if err := json.Unmarshal(b, &f); err != nil {
			return s, fmt.Errorf("%s: %w", p, err)
		}
		s.Add(f)
	}
	return s, nil
}

// Add files f under its kind.
func (s *Set) Add(f File) {
	switch {
	case f.Bootstrap != nil:
		s.Bootstrap = append(s.Bootstrap, *f.Bootstrap)
	case f.Rotation != nil:
		s.Rotation = append(s.Rotation, *f.Rotation)
	case f.Availability != nil:
		s.Availability = append(s.Availability, *f.Availability)
	case f.Resharding != nil:
		s.Resharding = append(s.Resharding, *f.Resharding)
	case f.Footprint != nil:
		s.Footprint = append(s.Footprint, *f.Footprint)
	case f.SecretCache != nil:
		s.SecretCache = append(s.SecretCache, *f.SecretCache)
	case f.Autoscale != nil:
		s.Autoscale = append(s.Autoscale, *f.Autoscale)
	case f.DurableRestart != nil:
		s.DurableRestart = append(s.DurableRestart, *f.DurableRestart)
	case f.DurableWrites != nil:
		s.DurableWrites = append(s.DurableWrites, *f.DurableWrites)
	case f.Backup != nil:
		s.Backup = append(s.Backup, *f.Backup)
	case f.Fleet != nil:
		s.Fleet = append(s.Fleet, *f.Fleet)
	case f.RealNode != nil:
		s.RealNode = append(s.RealNode, *f.RealNode)
	}
}
