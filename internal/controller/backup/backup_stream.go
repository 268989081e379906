package backup

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"time"

	"github.com/minio/minio-go/v7"

	"github.com/gomomento/valkey-operator/internal/backup"
	"github.com/gomomento/valkey-operator/internal/controller/nodeconn"
	"github.com/gomomento/valkey-operator/internal/render"
	"github.com/gomomento/valkey-operator/internal/valkey"
)

// copyShard streams one node's snapshot into the bucket: SYNC as the
// replication user, the RDB payload piped into a multipart upload while it
// is hashed, never whole on disk or in memory. The version and key count
// are read as the operator user first.
func copyShard(ctx context.Context, conn *nodeconn.Connector, replPassword string, mc *minio.Client, bucket string, res backup.ShardResult, src backup.Member, now func() time.Time) backup.ShardResult {
	res.Node, res.StartedAt = src.Name, now()
	fail := func(err error) backup.ShardResult {
		res.Err, res.CompletedAt = err, now()
		return res
	}
	n, err := conn.Dial(ctx, src.Name, src.IP)
	if err != nil {
		return fail(err)
	}
	server, err := n.InfoServer(ctx)
	if err == nil {
		var keyspace valkey.InfoSections
		if keyspace, err = n.Info(ctx, "keyspace"); err == nil {
			res.Keys, err = backup.KeyCount(keyspace["keyspace"])
		}
	}
	n.Close()
	if err != nil {
		return fail(fmt.Errorf("reading INFO: %w", err))
	}
	res.ValkeyVersion = server.Version.String()

	t := conn.Target(src.Name, src.IP)
	t.Username, t.Password = render.ReplicationUser, replPassword
	snap, err := valkey.SyncSnapshot(ctx, t)
	if err != nil {
		return fail(err)
	}
	defer func() { _ = snap.Close() }()
	sum := sha256.New()
	info, err := mc.PutObject(ctx, bucket, res.Object, io.TeeReader(snap, sum), -1, minio.PutObjectOptions{
		ContentType: "application/octet-stream",
		PartSize:    backupPartSize,
	})
	if err != nil {
		return fail(fmt.Errorf("streaming to %s: %s", res.Object, describeStoreError(err)))
	}
	res.Bytes, res.SHA256, res.CompletedAt = info.Size, hex.EncodeToString(sum.Sum(nil)), now()
	return res
}

// replicaCatchUp is how long a replica source may take to apply what its
// primary had acknowledged when the backup began; past it the primary is
// copied instead.
const replicaCatchUp = 30 * time.Second

// caughtUpSource waits until a replica source has applied the shard's
// primary offset, so that its snapshot holds every write acknowledged
// before the backup began; a replica that does not get there in time (or
// does not answer) gives way to the primary.
func caughtUpSource(ctx context.Context, conn *nodeconn.Connector, s backup.Shard, src backup.Member) backup.Member {
	if src.Primary {
		return src
	}
	primary, ok := backup.Primary(s)
	if !ok {
		return src
	}
	ctx, cancel := context.WithTimeout(ctx, replicaCatchUp)
	defer cancel()
	n, err := conn.Dial(ctx, src.Name, src.IP)
	if err != nil {
		return primary
	}
	defer n.Close()
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		repl, err := n.InfoReplication(ctx)
		if err == nil && repl.LinkUp() && backup.CaughtUp(s.PrimaryOffset, repl.ReplicaOffset) {
			return src
		}
		select {
		case <-ctx.Done():
			return primary
		case <-tick.C:
		}
	}
}

// putManifest writes the manifest, the object that makes the backup whole.
func putManifest(ctx context.Context, mc *minio.Client, bucket, object string, body []byte) error {
	if _, err := mc.PutObject(ctx, bucket, object, bytes.NewReader(body), int64(len(body)), minio.PutObjectOptions{
		ContentType: "application/json",
	}); err != nil {
		return fmt.Errorf("writing the manifest %s: %s", object, describeStoreError(err))
	}
	return nil
}
