package e2e

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/minio/minio-go/v7"
	"github.com/valkey-io/valkey-go"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"sigs.k8s.io/controller-runtime/pkg/client"

	valkeyv1 "github.com/gomomento/valkey-operator/api/v1alpha1"
	"github.com/gomomento/valkey-operator/internal/backup"
	"github.com/gomomento/valkey-operator/internal/render"
	"github.com/gomomento/valkey-operator/internal/s3test"
)

// dumped is a key's type, a digest of its value and its absolute
// expiry: two keys with equal ones hold the same thing.
type dumped struct {
	payload  string
	expireAt int64
}

// A backup of a 2x1 cluster restores into a 3x0 cluster and into a 1x0
// one: every key the source held, of every type, reads back identical
// (type, value, a stream's consumer groups, absolute expiry), each on the shard that owns its slot
// now; neither cluster is Active before its restore has completed, and
// the scratch servers are gone afterwards. The 1x0 cluster names a backup
// that does not exist yet: it waits, saying so, and goes on once the
// backup is taken. A restore found by its store and path (another
// Kubernetes cluster's backup) whose file was damaged fails, saying which
// file, and never turns Active; so does one whose file is missing, and a
// restore into a cluster that took a write while it waited.
func TestRestoreIntoAnotherShape(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	store := s3test.Start(t)
	store.MakeBucket(t, backupBucket)
	const ns = "restore-shape"
	src := newPlainCluster(t, ns, "source", 2, 1)
	c := clusterClient(t, seedOf(src), nil)
	keys := writeRichKeys(t, c, 3000)
	want := dumpKeys(t, c, keys)
	createBackupCredentials(t, ns, "store-credentials", store.AccessKey, store.SecretKey)
	b := createBackup(t, ns, "full", "source", "store-credentials", store.Endpoint, "")
	if b = waitBackupFinal(t, client.ObjectKeyFromObject(b)); b.Status.Phase != valkeyv1.BackupCompleted {
		t.Fatalf("backup %s: %s", b.Status.Phase, b.Status.Message)
	}

	restoreFrom := func(r valkeyv1.ClusterRestore) func(*valkeyv1.ValkeyClusterSpec) {
		return func(s *valkeyv1.ValkeyClusterSpec) { s.Restore = &r }
	}
	three := createCluster(t, ns, "into-three", menuConfigName(ns), 3, 0, restoreFrom(valkeyv1.ClusterRestore{BackupName: "full"}))
	one := createCluster(t, ns, "into-one", menuConfigName(ns), 1, 0, restoreFrom(valkeyv1.ClusterRestore{BackupName: "later"}))

	// A copy of the backup under another path, its second file damaged.
	mc := store.Client(t)
	base, _ := strings.CutPrefix(b.Status.Path, "s3://"+backupBucket+"/")
	for i, s := range b.Status.Shards {
		body := getObject(t, mc, s.Object)
		if i == 1 {
			body[len(body)/2] ^= 0xff
		}
		putObject(t, mc, "elsewhere/"+strings.TrimPrefix(s.Object, base), body)
	}
	putObject(t, mc, "elsewhere/"+backup.ManifestName, getObject(t, mc, backup.ManifestObject(base)))
	damaged := createCluster(t, ns, "damaged", menuConfigName(ns), 2, 0, restoreFrom(valkeyv1.ClusterRestore{Source: &valkeyv1.RestoreSource{
		Store: b.Spec.Destination, Path: "elsewhere",
	}}))
	// Another copy, its second file gone.
	putObject(t, mc, "partial/"+backup.ManifestName, getObject(t, mc, backup.ManifestObject(base)))
	putObject(t, mc, "partial/"+strings.TrimPrefix(b.Status.Shards[0].Object, base), getObject(t, mc, b.Status.Shards[0].Object))
	partial := createCluster(t, ns, "partial", menuConfigName(ns), 1, 0, restoreFrom(valkeyv1.ClusterRestore{Source: &valkeyv1.RestoreSource{
		Store: b.Spec.Destination, Path: "partial/",
	}}))

	eventually(t, 3*time.Minute, "into-one waiting for backup later, saying so", func() error {
		vc := getCluster(t, one)
		if vc.Status.State == valkeyv1.StateActive {
			t.Fatalf("into-one is Active with no backup restored: %+v", vc.Status.Restore)
		}
		if r := vc.Status.Restore; r == nil || !strings.Contains(r.Message, "ValkeyBackup later does not exist") {
			return fmt.Errorf("restore status %+v", r)
		}
		return nil
	})
	// A cluster that waits for the same backup, and meanwhile takes a
	// write: the restore must refuse it rather than mix the two.
	occupied := createCluster(t, ns, "occupied", menuConfigName(ns), 1, 0, restoreFrom(valkeyv1.ClusterRestore{BackupName: "later"}))
	eventually(t, 3*time.Minute, "occupied formed and waiting", func() error {
		if r := getCluster(t, occupied).Status.Restore; r == nil || !strings.Contains(r.Message, "ValkeyBackup later does not exist") {
			return fmt.Errorf("restore status %+v", r)
		}
		return nil
	})
	oc := clusterClient(t, seedOf(occupied), nil)
	if err := oc.Do(ctx, oc.B().Set().Key("written-before-the-restore").Value("x").Build()).Error(); err != nil {
		t.Fatal(err)
	}
	later := createBackup(t, ns, "later", "source", "store-credentials", store.Endpoint, "")
	waitBackupFinal(t, client.ObjectKeyFromObject(later))

	for _, tc := range []struct {
		key    client.ObjectKey
		shards int
	}{{three, 3}, {one, 1}} {
		vc := waitRestored(t, tc.key, tc.shards)
		got := dumpKeys(t, clusterClient(t, seedOf(tc.key), nil), keys)
		for _, k := range keys {
			if got[k] != want[k] {
				t.Fatalf("%s: key %s restored as %q expiring at %d, was %q expiring at %d",
					tc.key.Name, k, got[k].payload, got[k].expireAt, want[k].payload, want[k].expireAt)
			}
		}
		if r := vc.Status.Restore; r.Keys < int64(len(keys)) || r.ShardsDone != 2 || r.ShardsTotal != 2 || r.CompletedAt == nil {
			t.Errorf("%s: restore status %+v, want 2 of 2 shards and at least %d keys", tc.key.Name, r, len(keys))
		}
		t.Logf("%s: %d keys identical to the source's; %s", tc.key.Name, len(keys), vc.Status.Restore.Message)
	}

	eventually(t, 3*time.Minute, "the damaged restore failing", func() error {
		vc := getCluster(t, damaged)
		if vc.Status.State == valkeyv1.StateActive {
			t.Fatalf("a restore of a damaged file turned Active: %+v", vc.Status.Restore)
		}
		r := vc.Status.Restore
		if r == nil || r.Phase != valkeyv1.RestoreFailed {
			return fmt.Errorf("restore status %+v", r)
		}
		ready := meta.FindStatusCondition(vc.Status.Conditions, valkeyv1.CondReady)
		if !strings.Contains(r.Message, "shard-1.rdb") || !strings.Contains(r.Message, "does not match the manifest") ||
			ready == nil || ready.Status != "False" || ready.Reason != valkeyv1.ReasonRestoreFailed {
			t.Fatalf("failed restore says %q, Ready %+v", r.Message, ready)
		}
		return nil
	})

	waitRestoreFailed(t, partial, "shard 1's file partial/shard-1.rdb is missing from bucket "+backupBucket)
	waitRestoreFailed(t, occupied, "the cluster already holds 1 keys: a restore fills only an empty cluster, and nothing was written")
	if n, err := oc.Do(ctx, oc.B().Dbsize().Build()).AsInt64(); err != nil || n != 1 {
		t.Errorf("the refused cluster holds %d keys (%v), want its own 1", n, err)
	}

	for _, name := range []string{"into-three", "into-one", "damaged", "partial", "occupied"} {
		key := client.ObjectKey{Namespace: ns, Name: name}
		eventually(t, time.Minute, name+"'s loaders gone", func() error {
			if n := len(restoreLoaders(t, key)); n > 0 {
				return fmt.Errorf("%d loader pods left", n)
			}
			var s corev1.Secret
			if err := k8sClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: render.RestoreLoaderSecretName(name)}, &s); err == nil {
				return fmt.Errorf("secret %s left", s.Name)
			}
			return nil
		})
	}
}

// waitRestoreFailed waits for a restore to fail saying want, failing at
// once if the cluster is ever Active meanwhile.
func waitRestoreFailed(t testing.TB, key client.ObjectKey, want string) {
	t.Helper()
	eventually(t, 3*time.Minute, key.Name+"'s restore failing", func() error {
		vc := getCluster(t, key)
		if vc.Status.State == valkeyv1.StateActive {
			t.Fatalf("%s turned Active: %+v", key.Name, vc.Status.Restore)
		}
		r := vc.Status.Restore
		if r == nil || r.Phase != valkeyv1.RestoreFailed {
			return fmt.Errorf("restore status %+v", r)
		}
		if !strings.Contains(r.Message, want) {
			t.Fatalf("%s's restore failed saying %q, want %q", key.Name, r.Message, want)
		}
		return nil
	})
}

// waitRestored waits for a restored cluster to be Active with its shape,
// failing at once if it is ever Active before its restore completed.
func waitRestored(t testing.TB, key client.ObjectKey, shards int) *valkeyv1.ValkeyCluster {
	t.Helper()
	var vc *valkeyv1.ValkeyCluster
	eventually(t, 5*time.Minute, key.Name+" restored and Active", func() error {
		vc = getCluster(t, key)
		r := vc.Status.Restore
		if r != nil && r.Phase == valkeyv1.RestoreFailed {
			t.Fatalf("%s: restore failed: %s", key.Name, r.Message)
		}
		if vc.Status.State != valkeyv1.StateActive {
			return fmt.Errorf("state %s, restore %+v", vc.Status.State, r)
		}
		if r == nil || r.Phase != valkeyv1.RestoreCompleted {
			t.Fatalf("%s is Active before its restore completed: %+v", key.Name, r)
		}
		if int(vc.Status.Shards) != shards || vc.Status.SlotsAssigned != 16384 {
			return fmt.Errorf("%d shards, %d slots", vc.Status.Shards, vc.Status.SlotsAssigned)
		}
		return nil
	})
	return vc
}

// writeRichKeys writes n keys of the simple types (writeTypedKeys) and one
// of each encoding those leave out: a large hash, list and set, an integer
// set, sorted sets small and large, and a stream with a consumer group
// and pending entries. It returns every key written.
func writeRichKeys(t testing.TB, c valkey.Client, n int) []string {
	t.Helper()
	ctx := context.Background()
	var keys []string
	for k := range writeTypedKeys(t, c, n) {
		keys = append(keys, k)
	}
	var cmds valkey.Commands
	big := c.B().Hset().Key("rich:hash").FieldValue()
	for i := range 300 {
		big = big.FieldValue("f"+strconv.Itoa(i), strings.Repeat("v", i%50))
	}
	cmds = append(cmds, big.Build())
	list := make([]string, 2000)
	for i := range list {
		list[i] = "e" + strconv.Itoa(i)
	}
	cmds = append(cmds,
		c.B().Rpush().Key("rich:list").Element(list...).Build(),
		c.B().Sadd().Key("rich:set").Member(list...).Build(),
		c.B().Sadd().Key("rich:intset").Member("1", "2", "3", "500000").Build(),
		c.B().Zadd().Key("rich:zset").ScoreMember().ScoreMember(1.5, "a").ScoreMember(-2, "b").Build(),
		c.B().Set().Key("rich:big").Value(strings.Repeat("x", 100_000)).Build(),
		c.B().Set().Key("rich:counter").Value("12345").Build(),
	)
	zset := c.B().Zadd().Key("rich:bigzset").ScoreMember()
	for i := range 500 {
		zset = zset.ScoreMember(float64(i)/3, "m"+strconv.Itoa(i))
	}
	cmds = append(cmds, zset.Build())
	for i := range 50 {
		cmds = append(cmds, c.B().Xadd().Key("rich:stream").Id("*").FieldValue().FieldValue("n", strconv.Itoa(i)).Build())
	}
	cmds = append(cmds,
		c.B().XgroupCreate().Key("rich:stream").Group("g").Id("0").Build(),
		c.B().Xreadgroup().Group("g", "consumer").Count(10).Streams().Key("rich:stream").Id(">").Build(),
		c.B().Pexpire().Key("rich:zset").Milliseconds(3_600_000).Build(),
	)
	for i, r := range c.DoMulti(ctx, cmds...) {
		if err := r.Error(); err != nil {
			t.Fatalf("writing rich key %d: %v", i, err)
		}
	}
	return append(keys, "rich:hash", "rich:list", "rich:set", "rich:intset", "rich:zset", "rich:big", "rich:counter", "rich:bigzset", "rich:stream")
}

// dumpKeys reads each key's type, value and absolute expiry in a form
// that two equal keys share whatever their internal order (a set's or a
// hash's members come back sorted); a missing key fails.
func dumpKeys(t testing.TB, c valkey.Client, keys []string) map[string]dumped {
	t.Helper()
	ctx := context.Background()
	out := make(map[string]dumped, len(keys))
	for _, k := range keys {
		typ, err := c.Do(ctx, c.B().Type().Key(k).Build()).ToString()
		if err != nil || typ == "none" {
			t.Fatalf("TYPE %s: %q, %v", k, typ, err)
		}
		var parts []string
		switch typ {
		case "string":
			v, e := c.Do(ctx, c.B().Get().Key(k).Build()).ToString()
			parts, err = []string{v}, e
		case "list":
			parts, err = c.Do(ctx, c.B().Lrange().Key(k).Start(0).Stop(-1).Build()).AsStrSlice()
		case "set":
			parts, err = c.Do(ctx, c.B().Smembers().Key(k).Build()).AsStrSlice()
			slices.Sort(parts)
		case "hash":
			var m map[string]string
			m, err = c.Do(ctx, c.B().Hgetall().Key(k).Build()).AsStrMap()
			for f, v := range m {
				parts = append(parts, f+"="+v)
			}
			slices.Sort(parts)
		case "zset":
			parts, err = c.Do(ctx, c.B().Zrange().Key(k).Min("0").Max("-1").Withscores().Build()).AsStrSlice()
		case "stream":
			var entries []valkey.XRangeEntry
			entries, err = c.Do(ctx, c.B().Xrange().Key(k).Start("-").End("+").Build()).AsXRange()
			for _, e := range entries {
				parts = append(parts, fmt.Sprint(e.ID, e.FieldValues))
			}
			var groups []valkey.ValkeyMessage
			if err == nil {
				groups, err = c.Do(ctx, c.B().XinfoGroups().Key(k).Build()).ToArray()
			}
			for _, msg := range groups {
				g, _ := msg.AsMap()
				name, pending, last := g["name"], g["pending"], g["last-delivered-id"]
				n, _ := name.ToString()
				p, _ := pending.AsInt64()
				l, _ := last.ToString()
				parts = append(parts, fmt.Sprintf("group %s pending %d last %s", n, p, l))
			}
		default:
			t.Fatalf("key %s of type %s", k, typ)
		}
		if err != nil {
			t.Fatalf("reading %s (%s): %v", k, typ, err)
		}
		at, err := c.Do(ctx, c.B().Pexpiretime().Key(k).Build()).AsInt64()
		if err != nil {
			t.Fatalf("PEXPIRETIME %s: %v", k, err)
		}
		sum := sha256.Sum256([]byte(typ + "\x00" + strings.Join(parts, "\x00")))
		out[k] = dumped{payload: typ + ":" + hex.EncodeToString(sum[:8]), expireAt: at}
	}
	return out
}

func putObject(t testing.TB, mc *minio.Client, object string, body []byte) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if _, err := mc.PutObject(ctx, backupBucket, object, bytes.NewReader(body), int64(len(body)), minio.PutObjectOptions{}); err != nil {
		t.Fatalf("putting %s: %v", object, err)
	}
}
