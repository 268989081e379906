package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/valkey-io/valkey-go"
	"sigs.k8s.io/controller-runtime/pkg/client"

	valkeyv1 "github.com/gomomento/valkey-operator/api/v1alpha1"
	"github.com/gomomento/valkey-operator/internal/s3test"
	"github.com/gomomento/valkey-operator/internal/testcerts"
)

// restoreKeys is how many keys the TLS restore test writes.
const restoreKeys = 300_000

// A 3x1 TLS cluster holding 300,000 keys of every type is backed up under
// client load with no failed request, and restored into a 3-shard and a
// 5-shard TLS cluster: every key written before the backup reads back
// identical (the small ones by DUMP payload, the large ones and the stream
// by value; absolute expiry for all), every key the load had written
// before the backup began is there, and neither cluster is Active before
// all are in.
func TestRestoreTLSClusterIntoThreeAndFiveShards(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	store := s3test.Start(t)
	store.MakeBucket(t, backupBucket)
	ca := testcerts.NewCA("restore-ca")
	f := newTLSCluster(t, "restore-tls", ca, 3, 1)
	c := clusterClient(t, f.service(), ca.CertPEM)
	var small, rich []string
	for _, k := range writeRichKeys(t, c, restoreKeys) {
		if strings.HasPrefix(k, "rich:") {
			rich = append(rich, k)
		} else {
			small = append(small, k)
		}
	}
	wantSmall, wantRich := dumpPayloads(t, c, small), dumpKeys(t, c, rich)

	load := startLoad(c, "restore-load")
	eventually(t, time.Minute, "the load writing", func() error {
		if n := load.writes.Load(); n < 300 {
			return fmt.Errorf("%d writes acknowledged", n)
		}
		return nil
	})
	createBackupCredentials(t, f.ns, "store-credentials", store.AccessKey, store.SecretKey)
	began := time.Now()
	b := createBackup(t, f.ns, "big", f.name, "store-credentials", store.Endpoint, "")
	b = waitBackupFinal(t, client.ObjectKeyFromObject(b))
	acked := load.finishUndisturbed(t)
	if b.Status.Phase != valkeyv1.BackupCompleted {
		t.Fatalf("backup %s: %s", b.Status.Phase, b.Status.Message)
	}
	before, _ := load.splitByAckTime(acked, load.start, began)

	shapes := map[string]int{"three": 3, "five": 5}
	start := time.Now()
	for name, shards := range shapes {
		leaf := testcerts.Leaf(ca, name, f.ns, clusterDomain)
		if err := k8sClient.Create(ctx, testcerts.Secret(name+"-tls", f.ns, leaf)); err != nil {
			t.Fatal(err)
		}
		createCluster(t, f.ns, name, menuConfigName(f.ns), shards, 0, withTLS(name+"-tls"), func(s *valkeyv1.ValkeyClusterSpec) {
			s.Restore = &valkeyv1.ClusterRestore{BackupName: b.Name}
		})
	}
	for name, shards := range shapes {
		vc := waitRestored(t, client.ObjectKey{Namespace: f.ns, Name: name}, shards)
		t.Logf("%s: restored %d keys into %d shards %s after the clusters' creation: %s", name, vc.Status.Restore.Keys, shards,
			time.Since(start).Round(time.Second), vc.Status.Restore.Message)
		cc := clusterClient(t, fmt.Sprintf("%s.%s.svc.%s:6379", name, f.ns, clusterDomain), ca.CertPEM)
		gotSmall, gotRich := dumpPayloads(t, cc, small), dumpKeys(t, cc, rich)
		for _, k := range small {
			if gotSmall[k] != wantSmall[k] {
				t.Fatalf("%s: key %s restored as %q expiring at %d, was %q expiring at %d", name, k,
					short(gotSmall[k].payload), gotSmall[k].expireAt, short(wantSmall[k].payload), wantSmall[k].expireAt)
			}
		}
		for _, k := range rich {
			if gotRich[k] != wantRich[k] {
				t.Fatalf("%s: key %s restored as %+v, was %+v", name, k, gotRich[k], wantRich[k])
			}
		}
		var missing []string
		for k := range before {
			n, err := cc.Do(ctx, cc.B().Exists().Key(k).Build()).AsInt64()
			if err != nil {
				t.Fatal(err)
			}
			if n != 1 {
				missing = append(missing, k)
			}
		}
		if len(missing) > 0 {
			t.Fatalf("%s: %d of the %d keys the load wrote before the backup began are missing: %v", name, len(missing), len(before), missing[:min(5, len(missing))])
		}
	}
}

// A backup of a Valkey 9.1.2 cluster restores into a 2-shard 9.1.2
// cluster, every key identical; restoring it into a Valkey 8.0.1 cluster,
// which cannot read 9's files, fails saying so and writes nothing.
func TestRestoreOnValkey9(t *testing.T) {
	t.Parallel()
	store := s3test.Start(t)
	store.MakeBucket(t, backupBucket)
	const ns = "restore-nine"
	createNamespace(t, ns)
	nine := createConfig(t, "restore-nine-912", "9.1.2", valkeyv1.ValkeyConfigSpec{Valkey: map[string]string{"maxmemory": "64mb"}})
	eight := createMenu(t, ns)
	src := newClusterWith(t, ns, "source", nine, 1, 0)
	c := clusterClient(t, seedOf(src), nil)
	keys := writeRichKeys(t, c, 2000)
	want := dumpKeys(t, c, keys)
	createBackupCredentials(t, ns, "store-credentials", store.AccessKey, store.SecretKey)
	b := createBackup(t, ns, "nine", "source", "store-credentials", store.Endpoint, "")
	if b = waitBackupFinal(t, client.ObjectKeyFromObject(b)); b.Status.Phase != valkeyv1.BackupCompleted {
		t.Fatalf("backup %s: %s", b.Status.Phase, b.Status.Message)
	}
	restore := func(s *valkeyv1.ValkeyClusterSpec) { s.Restore = &valkeyv1.ClusterRestore{BackupName: "nine"} }
	same := createCluster(t, ns, "same", nine, 2, 0, restore)
	older := createCluster(t, ns, "older", eight, 1, 0, restore)

	waitRestored(t, same, 2)
	got := dumpKeys(t, clusterClient(t, seedOf(same), nil), keys)
	for _, k := range keys {
		if got[k] != want[k] {
			t.Fatalf("key %s restored as %+v, was %+v", k, got[k], want[k])
		}
	}
	eventually(t, 3*time.Minute, "the restore into 8.0.1 failing", func() error {
		vc := getCluster(t, older)
		if vc.Status.State == valkeyv1.StateActive {
			t.Fatalf("a restore 8.0.1 cannot read turned Active: %+v", vc.Status.Restore)
		}
		r := vc.Status.Restore
		if r == nil || r.Phase != valkeyv1.RestoreFailed {
			return fmt.Errorf("restore status %+v", r)
		}
		if !strings.Contains(r.Message, "written by Valkey 9.1.2") || r.ShardsDone != 0 || r.Keys != 0 {
			t.Fatalf("failed restore: %+v", r)
		}
		return nil
	})
}

// dumpPayloads reads DUMP and PEXPIRETIME of every key, a thousand a
// round trip. For the small keys writeTypedKeys writes, whose encodings
// keep their order, equal payloads are equal keys.
func dumpPayloads(t testing.TB, c valkey.Client, keys []string) map[string]dumped {
	t.Helper()
	ctx := context.Background()
	out := make(map[string]dumped, len(keys))
	for start := 0; start < len(keys); start += 1000 {
		batch := keys[start:min(start+1000, len(keys))]
		cmds := make(valkey.Commands, 0, 2*len(batch))
		for _, k := range batch {
			cmds = append(cmds, c.B().Dump().Key(k).Build(), c.B().Pexpiretime().Key(k).Build())
		}
		res := c.DoMulti(ctx, cmds...)
		for i, k := range batch {
			payload, err := res[2*i].ToString()
			if err != nil {
				t.Fatalf("DUMP %s: %v", k, err)
			}
			at, err := res[2*i+1].AsInt64()
			if err != nil {
				t.Fatalf("PEXPIRETIME %s: %v", k, err)
			}
			out[k] = dumped{payload: payload, expireAt: at}
		}
	}
	return out
}

func short(s string) string {
	if len(s) > 40 {
		return s[:40] + "..."
	}
	return s
}
