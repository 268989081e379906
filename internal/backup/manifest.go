package backup

import (
	"encoding/json"
	"fmt"
	"time"
)

// ManifestVersion is the manifest format; a restore refuses a version it
// does not know.
const ManifestVersion = 1

// Manifest describes a completed backup. It is written after every shard's
// file, so its presence is what says the backup is whole.
type Manifest struct {
	Version   int       `json:"version"`
	Namespace string    `json:"namespace"`
	Cluster   string    `json:"cluster"`
	Backup    string    `json:"backup"`
	StartedAt time.Time `json:"startedAt"`
	// CompletedAt is when the last shard's file was written.
	CompletedAt time.Time       `json:"completedAt"`
	Shards      []ManifestShard `json:"shards"`
}

// ManifestShard is one shard's file. Keys is the source node's key count
// when its snapshot started (INFO keyspace), a check rather than an exact
// figure: writes land between that reading and the fork.
type ManifestShard struct {
	Index         int       `json:"index"`
	Object        string    `json:"object"`
	Slots         []string  `json:"slots"`
	Node          string    `json:"node"`
	ValkeyVersion string    `json:"valkeyVersion"`
	Keys          int64     `json:"keys"`
	Bytes         int64     `json:"bytes"`
	SHA256        string    `json:"sha256"`
	StartedAt     time.Time `json:"startedAt"`
	CompletedAt   time.Time `json:"completedAt"`
}

// ShardResult is what copying one shard produced.
type ShardResult struct {
	Index         int
	Object        string
	Slots         []string
	Node          string
	ValkeyVersion string
	Keys          int64
	Bytes         int64
	SHA256        string
	StartedAt     time.Time
	CompletedAt   time.Time
	// Err is why the shard could not be copied; nil when it was.
	Err error
}

// BuildManifest is the manifest of a backup whose every shard was copied,
// or an error naming the shards that were not.
func BuildManifest(namespace, cluster, name string, startedAt time.Time, results []ShardResult) (Manifest, error) {
	if err := Failures(results); err != nil {
		return Manifest{}, err
	}
	m := Manifest{Version: ManifestVersion, Namespace: namespace, Cluster: cluster, Backup: name, StartedAt: startedAt.UTC()}
	for i, r := range results {
		if r.Index != i {
			return Manifest{}, fmt.Errorf("shard results out of order: position %d holds shard %d", i, r.Index)
		}
		if r.SHA256 == "" || r.Bytes <= 0 {
			return Manifest{}, fmt.Errorf("shard %d has no checksum or size", i)
		}
		if r.CompletedAt.After(m.CompletedAt) {
			m.CompletedAt = r.CompletedAt.UTC()
		}
		m.Shards = append(m.Shards, ManifestShard{
			Index: r.Index, Object: r.Object, Slots: r.Slots, Node: r.Node, ValkeyVersion: r.ValkeyVersion,
			Keys: r.Keys, Bytes: r.Bytes, SHA256: r.SHA256, StartedAt: r.StartedAt.UTC(), CompletedAt: r.CompletedAt.UTC(),
		})
	}
	if len(m.Shards) == 0 {
		return Manifest{}, fmt.Errorf("no shard was copied")
	}
	return m, nil
}

// Encode is the manifest's bytes in the bucket.
func (m Manifest) Encode() ([]byte, error) {
	b, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("encoding the manifest: %w", err)
	}
	return append(b, '\n'), nil
}

// Failures joins the errors of the shards that could not be copied, each
// named by its index and node; nil when every shard was.
func Failures(results []ShardResult) error {
	var msg string
	for _, r := range results {
		if r.Err == nil {
			continue
		}
		if msg != "" {
			msg += "; "
		}
		msg += fmt.Sprintf("shard %d (node %s): %v", r.Index, r.Node, r.Err)
	}
	if msg == "" {
		return nil
	}
	return fmt.Errorf("%s", msg)
}
