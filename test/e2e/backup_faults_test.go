package e2e

import (
	"context"
	"fmt"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/minio/minio-go/v7"
	"sigs.k8s.io/controller-runtime/pkg/client"

	valkeyv1 "github.com/gomomento/valkey-operator/api/v1alpha1"
	"github.com/gomomento/valkey-operator/internal/backup"
	"github.com/gomomento/valkey-operator/internal/s3test"
)

// The replica a backup streams from is SIGKILLed mid-stream: the backup
// fails, naming the shard and the node, writes no manifest (so it is never
// restorable as whole), and the cluster heals with every key.
func TestBackupSourceKilledMidStream(t *testing.T) {
	t.Parallel()
	store := s3test.Start(t)
	store.MakeBucket(t, backupBucket)
	key := newPlainCluster(t, "backup-kill", "vb", 1, 1)
	c := clusterClient(t, seedOf(key), nil)
	// 30 MiB (the menu allows 64), so that the stream lasts long enough to
	// be cut.
	const keys = 3000
	writeValues(t, c, keys, randomValue(t, 10*1024))
	waitReplicated(t, c)
	replica := getCluster(t, key).Status.ShardStatuses[0].Replicas[0]

	createBackupCredentials(t, key.Namespace, "store-credentials", store.AccessKey, store.SecretKey)
	b := createBackup(t, key.Namespace, "cut", key.Name, "store-credentials", store.Endpoint, "")
	eventually(t, time.Minute, "the backup streaming", func() error {
		var got valkeyv1.ValkeyBackup
		if err := k8sClient.Get(context.Background(), client.ObjectKeyFromObject(b), &got); err != nil {
			return err
		}
		if got.Status.Phase != valkeyv1.BackupRunning {
			return fmt.Errorf("phase %q", got.Status.Phase)
		}
		return nil
	})
	signal(t, key, replica, syscall.SIGKILL)
	t.Logf("SIGKILLed %s, the backup's source, while it streamed", replica)

	b = waitBackupFinal(t, client.ObjectKeyFromObject(b))
	if b.Status.Phase != valkeyv1.BackupFailed || !strings.Contains(b.Status.Message, "shard 0 (node "+replica+")") {
		t.Fatalf("backup %s: %s; want Failed naming shard 0 and node %s", b.Status.Phase, b.Status.Message, replica)
	}
	base := backup.Base("", key.Namespace, key.Name, b.Name)
	if _, err := store.Client(t).StatObject(context.Background(), backupBucket, backup.ManifestObject(base), minio.StatObjectOptions{}); minio.ToErrorResponse(err).Code != "NoSuchKey" {
		t.Fatalf("a failed backup's manifest: %v, want none", err)
	}
	t.Logf("backup failed: %s", b.Status.Message)

	waitReplaced(t, key, replica, 1, 1)
	eventually(t, time.Minute, "every key on the primary", func() error {
		n, err := primaryKeys(t, key)
		if err == nil && n != keys {
			err = fmt.Errorf("%d of %d keys", n, keys)
		}
		return err
	})
}
