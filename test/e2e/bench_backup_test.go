package e2e

import (
	"bytes"
	"context"
	"encoding/csv"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/minio/minio-go/v7"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	valkeyv1 "github.com/gomomento/valkey-operator/api/v1alpha1"
	"github.com/gomomento/valkey-operator/bench/record"
	"github.com/gomomento/valkey-operator/internal/s3test"
)

// BenchmarkBackup measures a backup and a restore of
// $VALKEY_BENCH_BACKUP_MB (1024) MiB of 10 KiB values against their
// limits on this machine, in the same run:
//
//   - backup: a 1x1 cluster's ValkeyBackup, from its creation to
//     Completed, beside the store's own upload of the same file with a
//     plain client and `valkey-cli --rdb` of the same data from a plain
//     server;
//   - restore: a 1x0 cluster restoring it, from the restore's start to its
//     end, beside the store's own download of the file and a plain
//     server's load of it;
//   - latency: valkey-benchmark's SET p99 against the primary during the
//     backup, beside its p99 with no backup.
func BenchmarkBackup(b *testing.B) {
	total := int64(envInt("VALKEY_BENCH_BACKUP_MB", 1024)) << 20
	requests := envInt("VALKEY_BENCH_BACKUP_REQUESTS", 200000)
	for range b.N {
		r := backupAndRestore(b, total, requests)
		b.Logf("backup of %d MiB: %.1f MB/s (store upload %.1f MB/s, valkey-cli --rdb %.1f MB/s); restore: %.1f MB/s (store download %.1f MB/s, plain load %.1f MB/s); SET p99 %.2f ms during the backup, %.2f ms without",
			r.Bytes>>20, r.BackupMBps(), record.MBps(r.Bytes, r.StoreUploadSeconds), record.MBps(r.Bytes, r.PlainRDBSeconds),
			r.RestoreMBps(), record.MBps(r.Bytes, r.StoreDownloadSeconds), record.MBps(r.Bytes, r.PlainLoadSeconds), r.P99DuringMs, r.P99IdleMs)
		b.ReportMetric(r.BackupMBps(), "backup-MB/s")
		b.ReportMetric(r.RestoreMBps(), "restore-MB/s")
		saveRecord(b, "backup-restore", record.File{Backup: &r})
	}
}

func backupAndRestore(b *testing.B, total int64, requests int) record.Backup {
	ctx := context.Background()
	store := s3test.Start(b)
	store.MakeBucket(b, backupBucket)
	ns := benchNamespace("bench-backup")
	createNamespace(b, ns)
	cfg := createConfig(b, ns+"-config", durableVersion, valkeyv1.ValkeyConfigSpec{Valkey: map[string]string{
		"maxmemory": fmt.Sprintf("%dmb", 2*total>>20+64)}})
	key := newClusterWith(b, ns, "cache", cfg, 1, 1)
	c := clusterClient(b, seedOf(key), nil)
	keys := int(total / durableValueBytes)
	writeValues(b, c, keys, randomValue(b, durableValueBytes))
	waitReplicated(b, c)
	primary := clusterPods(b, key)[getCluster(b, key).Status.ShardStatuses[0].Primary]
	r := record.Backup{Version: durableVersion, Keys: keys, ValueBytes: durableValueBytes, Requests: requests}
	_, r.P99IdleMs = valkeyBenchmarkP99(b, primary.Status.PodIP, 6379, requests)

	createBackupCredentials(b, ns, "store-credentials", store.AccessKey, store.SecretKey)
	during := make(chan float64, 1)
	go func() {
		_, p99 := valkeyBenchmarkP99(b, primary.Status.PodIP, 6379, requests)
		during <- p99
	}()
	bk := createBackup(b, ns, "bench", key.Name, "store-credentials", store.Endpoint, "")
	bk = waitBackupFinal(b, client.ObjectKeyFromObject(bk))
	r.P99DuringMs = <-during
	if bk.Status.Phase != valkeyv1.BackupCompleted {
		b.Fatalf("backup %s: %s", bk.Status.Phase, bk.Status.Message)
	}
	r.Bytes, r.BackupSeconds = bk.Status.Bytes, bk.Status.CompletedAt.Sub(bk.Status.StartedAt.Time).Seconds()

	copyKey := createCluster(b, ns, "copy", cfg, 1, 0, func(s *valkeyv1.ValkeyClusterSpec) {
		s.Restore = &valkeyv1.ClusterRestore{BackupName: bk.Name}
	})
	vc := waitRestored(b, copyKey, 1)
	r.RestoreSeconds = vc.Status.Restore.CompletedAt.Sub(vc.Status.Restore.StartedAt.Time).Seconds()
	// Both go before the limits run; the namespace's pods are counted as one.
	for _, k := range []client.ObjectKey{copyKey, key} {
		if err := k8sClient.Delete(ctx, &valkeyv1.ValkeyCluster{ObjectMeta: metav1.ObjectMeta{Namespace: k.Namespace, Name: k.Name}}); err != nil {
			b.Fatal(err)
		}
	}
	waitGone(b, ns, key.Name)
	waitGone(b, ns, copyKey.Name)

	// The limits, with the machine to the plain tools.
	file := filepath.Join(b.TempDir(), "shard.rdb")
	mc := store.Client(b)
	start := time.Now()
	if err := mc.FGetObject(ctx, backupBucket, bk.Status.Shards[0].Object, file, minio.GetObjectOptions{}); err != nil {
		b.Fatalf("downloading the shard: %v", err)
	}
	r.StoreDownloadSeconds = time.Since(start).Seconds()
	start = time.Now()
	if _, err := mc.FPutObject(ctx, backupBucket, "plain-upload.rdb", file, minio.PutObjectOptions{PartSize: 16 << 20}); err != nil {
		b.Fatalf("uploading the shard: %v", err)
	}
	r.StoreUploadSeconds = time.Since(start).Seconds()
	s := &plainServer{args: []string{"--bind", "127.0.0.1", "--port", strconv.Itoa(freePortPair(b)), "--dir", filepath.Dir(file),
		"--dbfilename", filepath.Base(file), "--save", "", "--appendonly", "no", "--logfile", filepath.Join(filepath.Dir(file), "valkey.log")}}
	s.addr = net.JoinHostPort("127.0.0.1", s.args[3])
	b.Cleanup(s.kill)
	start = time.Now()
	s.start(b)
	s.waitReady(b)
	r.PlainLoadSeconds = time.Since(start).Seconds()
	out := filepath.Join(b.TempDir(), "plain.rdb")
	start = time.Now()
	if msg, err := exec.Command("valkey-cli", "-h", "127.0.0.1", "-p", s.args[3], "--rdb", out).CombinedOutput(); err != nil {
		b.Fatalf("valkey-cli --rdb: %v\n%s", err, msg)
	}
	r.PlainRDBSeconds = time.Since(start).Seconds()
	s.kill()
	if fi, err := os.Stat(out); err != nil || fi.Size() < r.Bytes/2 {
		b.Fatalf("valkey-cli --rdb wrote %v (%v), want about %d bytes", fi, err, r.Bytes)
	}
	return r
}

// valkeyBenchmarkP99 runs valkey-benchmark's SET test and returns its
// requests per second and 99th percentile latency in milliseconds.
func valkeyBenchmarkP99(b *testing.B, host string, port, requests int) (rps, p99 float64) {
	var stdout, stderr bytes.Buffer
	cmd := exec.Command("valkey-benchmark", "-h", host, "-p", strconv.Itoa(port), "-t", "set",
		"-n", strconv.Itoa(requests), "-c", strconv.Itoa(durableBenchClients), "-d", strconv.Itoa(durableBenchBytes), "--csv")
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		b.Errorf("valkey-benchmark against %s:%d: %v\n%s", host, port, err, tail(stderr.Bytes(), 2000))
		return 0, 0
	}
	rows, err := csv.NewReader(io.Reader(&stdout)).ReadAll()
	if err != nil || len(rows) < 2 {
		b.Errorf("valkey-benchmark output %q: %v", stdout.String(), err)
		return 0, 0
	}
	col := map[string]int{}
	for i, h := range rows[0] {
		col[h] = i
	}
	for _, row := range rows[1:] {
		if row[0] != "SET" {
			continue
		}
		rps, err1 := strconv.ParseFloat(row[col["rps"]], 64)
		p99, err2 := strconv.ParseFloat(row[col["p99_latency_ms"]], 64)
		if _, ok := col["p99_latency_ms"]; !ok || err1 != nil || err2 != nil {
			b.Errorf("valkey-benchmark row %v of header %v", row, rows[0])
		}
		return rps, p99
	}
	b.Errorf("no SET line in valkey-benchmark's output %q", stdout.String())
	return 0, 0
}
