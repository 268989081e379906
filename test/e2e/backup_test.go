package e2e

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/minio/minio-go/v7"
	"github.com/valkey-io/valkey-go"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	valkeyv1 "github.com/gomomento/valkey-operator/api/v1alpha1"
	"github.com/gomomento/valkey-operator/internal/backup"
	"github.com/gomomento/valkey-operator/internal/s3test"
	"github.com/gomomento/valkey-operator/internal/testcerts"
	vk "github.com/gomomento/valkey-operator/internal/valkey"
)

const backupBucket = "valkey-backups"

// typedValue is what a key written before a backup holds, by type.
type typedValue struct {
	typ   string // string, hash, list, set
	value string // the string, or the hash/list/set elements joined by ","
	ttl   bool
}

// A backup of a 2x1 cluster under client load streams each shard from a
// replica to the bucket and writes the manifest last; each shard's file
// loads into a plain valkey-server and holds every key of its slots written
// before the backup, with its type, value and TTL, and no key of another
// shard's slots. A backup with credentials the store refuses then fails,
// saying so, and so does one whose endpoint does not answer.
func TestBackupStreamsEveryShardToTheBucket(t *testing.T) {
	t.Parallel()
	store := s3test.Start(t)
	store.MakeBucket(t, backupBucket)
	key := newPlainCluster(t, "backup-shards", "vb", 2, 1)
	c := clusterClient(t, seedOf(key), nil)
	data := writeTypedKeys(t, c, 3000)
	load := startLoad(c, "backup-load")
	// The backup starts while the load is writing, not before it has begun.
	eventually(t, time.Minute, "the load writing", func() error {
		if n := load.writes.Load(); n < 300 {
			return fmt.Errorf("%d writes acknowledged", n)
		}
		return nil
	})

	createBackupCredentials(t, key.Namespace, "store-credentials", store.AccessKey, store.SecretKey)
	b := createBackup(t, key.Namespace, "nightly", key.Name, "store-credentials", store.Endpoint, "team-a")
	b = waitBackupFinal(t, client.ObjectKeyFromObject(b))
	load.finishUndisturbed(t)
	if b.Status.Phase != valkeyv1.BackupCompleted {
		t.Fatalf("backup %s: %s", b.Status.Phase, b.Status.Message)
	}
	wantBase := backup.Base("team-a", key.Namespace, key.Name, b.Name)
	if b.Status.Path != "s3://"+backupBucket+"/"+wantBase || len(b.Status.Shards) != 2 || b.Status.StartedAt == nil || b.Status.CompletedAt == nil {
		t.Fatalf("status: %+v", b.Status)
	}

	mc := store.Client(t)
	var m backup.Manifest
	if err := json.Unmarshal(getObject(t, mc, backup.ManifestObject(wantBase)), &m); err != nil {
		t.Fatalf("manifest: %v", err)
	}
	if len(m.Shards) != 2 || m.Cluster != key.Name || m.Namespace != key.Namespace {
		t.Fatalf("manifest lists %d shards of %s/%s, want 2 of %s", len(m.Shards), m.Namespace, m.Cluster, key)
	}
	slotOf := typedKeySlots(t, c, data)
	var total int64
	for i, s := range b.Status.Shards {
		ms := m.Shards[i]
		if !slices.Equal(ms.Slots, s.Slots) || ms.SHA256 != s.SHA256 || ms.Bytes != s.Bytes || ms.Node != s.Node {
			t.Fatalf("shard %d: manifest %+v, status %+v", i, ms, s)
		}
		// The snapshot comes from the shard's replica, so the primary
		// serving the load does not fork.
		if me := podMyself(t, key.Namespace, s.Node); !me.IsReplica() {
			t.Errorf("shard %d was copied from %s, which is not a replica (flags %v)", i, s.Node, me.Flags)
		}
		rdb := getObject(t, mc, s.Object)
		sum := sha256.Sum256(rdb)
		if hex.EncodeToString(sum[:]) != s.SHA256 || int64(len(rdb)) != s.Bytes {
			t.Fatalf("shard %d: object is %d bytes with sha256 %x; status says %d bytes, %s", i, len(rdb), sum, s.Bytes, s.SHA256)
		}
		total += s.Bytes
		t.Logf("shard %d: %s from %s, slots %v, %d keys, %d bytes, Valkey %s", i, s.Object, s.Node, s.Slots, s.Keys, s.Bytes, s.ValkeyVersion)
		checkRestoredShard(t, c, rdb, parseRanges(t, s.Slots), data, slotOf)
	}
	if b.Status.Bytes != total {
		t.Fatalf("status.bytes = %d, want the shards' %d", b.Status.Bytes, total)
	}

	t.Run("refused credentials", func(t *testing.T) {
		createBackupCredentials(t, key.Namespace, "wrong-credentials", store.AccessKey, "not-the-secret")
		bad := createBackup(t, key.Namespace, "refused", key.Name, "wrong-credentials", store.Endpoint, "")
		bad = waitBackupFinal(t, client.ObjectKeyFromObject(bad))
		cond := meta.FindStatusCondition(bad.Status.Conditions, valkeyv1.CondBackupComplete)
		if bad.Status.Phase != valkeyv1.BackupFailed || cond == nil || cond.Reason != valkeyv1.ReasonBackupDestinationInvalid ||
			!strings.Contains(bad.Status.Message, "checking bucket "+backupBucket) {
			t.Fatalf("phase %s, condition %+v, message %q", bad.Status.Phase, cond, bad.Status.Message)
		}
		t.Logf("refused: %s", bad.Status.Message)
	})

	t.Run("unreachable endpoint", func(t *testing.T) {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		closed := "http://" + l.Addr().String()
		_ = l.Close()
		bad := createBackup(t, key.Namespace, "unreachable", key.Name, "store-credentials", closed, "")
		bad = waitBackupFinal(t, client.ObjectKeyFromObject(bad))
		cond := meta.FindStatusCondition(bad.Status.Conditions, valkeyv1.CondBackupComplete)
		if bad.Status.Phase != valkeyv1.BackupFailed || cond == nil || cond.Reason != valkeyv1.ReasonBackupDestinationInvalid ||
			!strings.Contains(bad.Status.Message, "checking bucket "+backupBucket+" at "+closed) {
			t.Fatalf("phase %s, condition %+v, message %q", bad.Status.Phase, cond, bad.Status.Message)
		}
		t.Logf("unreachable: %s", bad.Status.Message)
	})
}

// A backup naming a cluster that does not exist fails at once, naming it.
func TestBackupOfMissingClusterFails(t *testing.T) {
	t.Parallel()
	ns := "backup-missing"
	createNamespace(t, ns)
	createBackupCredentials(t, ns, "store-credentials", "id", "secret")
	b := createBackup(t, ns, "orphan", "no-such-cluster", "store-credentials", "http://127.0.0.1:1", "")
	b = waitBackupFinal(t, client.ObjectKeyFromObject(b))
	cond := meta.FindStatusCondition(b.Status.Conditions, valkeyv1.CondBackupComplete)
	if b.Status.Phase != valkeyv1.BackupFailed || cond == nil || cond.Reason != valkeyv1.ReasonBackupClusterNotFound ||
		!strings.Contains(b.Status.Message, "ValkeyCluster no-such-cluster does not exist") || b.Status.CompletedAt == nil {
		t.Fatalf("phase %s, condition %+v, message %q", b.Status.Phase, cond, b.Status.Message)
	}
}

// writeTypedKeys writes n keys of several types, a fifth of them with a
// TTL, and returns what each holds.
func writeTypedKeys(t testing.TB, c valkey.Client, n int) map[string]typedValue {
	t.Helper()
	ctx := context.Background()
	out := make(map[string]typedValue, n)
	var cmds valkey.Commands
	for i := range n {
		k := fmt.Sprintf("backup:%d", i)
		switch i % 5 {
		case 0:
			v := "s" + strconv.Itoa(i)
			cmds = append(cmds, c.B().Set().Key(k).Value(v).Build())
			out[k] = typedValue{typ: "string", value: v}
		case 1:
			cmds = append(cmds, c.B().Hset().Key(k).FieldValue().FieldValue("a", "1").FieldValue("b", strconv.Itoa(i)).Build())
			out[k] = typedValue{typ: "hash", value: "a=1,b=" + strconv.Itoa(i)}
		case 2:
			cmds = append(cmds, c.B().Rpush().Key(k).Element("x", "y", strconv.Itoa(i)).Build())
			out[k] = typedValue{typ: "list", value: "x,y," + strconv.Itoa(i)}
		case 3:
			cmds = append(cmds, c.B().Sadd().Key(k).Member("m1", "m2", strconv.Itoa(i)).Build())
			out[k] = typedValue{typ: "set", value: strings.Join(sortedStrings("m1", "m2", strconv.Itoa(i)), ",")}
		case 4:
			v := "ttl" + strconv.Itoa(i)
			cmds = append(cmds, c.B().Set().Key(k).Value(v).ExSeconds(3600).Build())
			out[k] = typedValue{typ: "string", value: v, ttl: true}
		}
	}
	for i, r := range c.DoMulti(ctx, cmds...) {
		if err := r.Error(); err != nil {
			t.Fatalf("writing key %d: %v", i, err)
		}
	}
	return out
}

func sortedStrings(s ...string) []string {
	slices.Sort(s)
	return s
}

func typedKeySlots(t testing.TB, c valkey.Client, data map[string]typedValue) map[string]int {
	t.Helper()
	keys := make(map[string]string, len(data))
	for k := range data {
		keys[k] = ""
	}
	return keySlots(t, c, keys)
}

// checkRestoredShard loads an RDB file into a standalone valkey-server and
// checks it holds exactly the keys of its slots.
func checkRestoredShard(t testing.TB, cluster valkey.Client, rdb []byte, ranges []vk.SlotRange, data map[string]typedValue, slotOf map[string]int) {
	t.Helper()
	ctx := context.Background()
	owns := func(slot int) bool {
		return slices.ContainsFunc(ranges, func(r vk.SlotRange) bool { return r.Contains(slot) })
	}
	s := startStandaloneWithRDB(t, rdb)
	want := 0
	for k, v := range data {
		if !owns(slotOf[k]) {
			continue
		}
		want++
		typ, err := s.Do(ctx, s.B().Type().Key(k).Build()).ToString()
		if err != nil || typ != v.typ {
			t.Fatalf("restored %s: type %q (%v), want %s", k, typ, err, v.typ)
		}
		var got string
		switch v.typ {
		case "string":
			got, err = s.Do(ctx, s.B().Get().Key(k).Build()).ToString()
		case "hash":
			var h map[string]string
			h, err = s.Do(ctx, s.B().Hgetall().Key(k).Build()).AsStrMap()
			got = "a=" + h["a"] + ",b=" + h["b"]
		case "list":
			var l []string
			l, err = s.Do(ctx, s.B().Lrange().Key(k).Start(0).Stop(-1).Build()).AsStrSlice()
			got = strings.Join(l, ",")
		case "set":
			var m []string
			m, err = s.Do(ctx, s.B().Smembers().Key(k).Build()).AsStrSlice()
			got = strings.Join(sortedStrings(m...), ",")
		}
		if err != nil || got != v.value {
			t.Fatalf("restored %s = %q (%v), want %q", k, got, err, v.value)
		}
		ttl, err := s.Do(ctx, s.B().Ttl().Key(k).Build()).AsInt64()
		if err != nil || (v.ttl && ttl <= 0) || (!v.ttl && ttl != -1) {
			t.Fatalf("restored %s: TTL %d (%v), want one: %v", k, ttl, err, v.ttl)
		}
	}
	if want == 0 {
		t.Fatal("no key written before the backup hashes to this shard")
	}
	// Every key the file holds, the load's included, is of its own slots.
	var restored []string
	var cursor uint64
	for {
		e, err := s.Do(ctx, s.B().Scan().Cursor(cursor).Count(1000).Build()).AsScanEntry()
		if err != nil {
			t.Fatal(err)
		}
		restored = append(restored, e.Elements...)
		if cursor = e.Cursor; cursor == 0 {
			break
		}
	}
	for _, k := range restored {
		slot, err := cluster.Do(ctx, cluster.B().ClusterKeyslot().Key(k).Build()).AsInt64()
		if err != nil {
			t.Fatal(err)
		}
		if !owns(int(slot)) {
			t.Fatalf("restored shard of slots %v holds %s of slot %d", ranges, k, slot)
		}
	}
	t.Logf("restored shard %v: %d keys, %d of them written before the backup", ranges, len(restored), want)
}

// startStandaloneWithRDB runs a standalone valkey-server that loads rdb
// at start, until the test ends.
func startStandaloneWithRDB(t testing.TB, rdb []byte) valkey.Client {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "shard.rdb"), rdb, 0o600); err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	_ = l.Close()
	bin, err := exec.LookPath("valkey-server")
	if err != nil {
		t.Fatal("no valkey-server installed (make valkey)")
	}
	var out bytes.Buffer
	cmd := exec.Command(bin, "--port", strconv.Itoa(port), "--bind", "127.0.0.1", "--dir", dir, "--dbfilename", "shard.rdb",
		"--save", "", "--appendonly", "no")
	cmd.Stdout, cmd.Stderr = &out, &out
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	t.Cleanup(func() {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		<-exited
	})
	var c valkey.Client
	eventually(t, 30*time.Second, "the restored valkey-server loaded", func() error {
		select {
		case <-exited:
			t.Fatalf("valkey-server exited:\n%s", out.String())
		default:
		}
		if c == nil {
			var err error
			if c, err = valkey.NewClient(valkey.ClientOption{InitAddress: []string{net.JoinHostPort("127.0.0.1", strconv.Itoa(port))},
				ForceSingleClient: true, DisableCache: true}); err != nil {
				c = nil
				return err
			}
		}
		return c.Do(context.Background(), c.B().Dbsize().Build()).Error()
	})
	t.Cleanup(c.Close)
	return c
}

func parseRanges(t testing.TB, slots []string) []vk.SlotRange {
	t.Helper()
	var out []vk.SlotRange
	for _, s := range slots {
		a, b, _ := strings.Cut(s, "-")
		start, err1 := strconv.Atoi(a)
		end, err2 := strconv.Atoi(b)
		if err1 != nil || err2 != nil {
			t.Fatalf("slot range %q", s)
		}
		out = append(out, vk.SlotRange{Start: start, End: end})
	}
	return out
}

func createBackupCredentials(t testing.TB, ns, name, id, secret string) {
	t.Helper()
	s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Data: map[string][]byte{"accessKeyID": []byte(id), "secretAccessKey": []byte(secret)}}
	if err := k8sClient.Create(context.Background(), s); err != nil {
		t.Fatal(err)
	}
}

func createBackup(t testing.TB, ns, name, cluster, credentials, endpoint, prefix string) *valkeyv1.ValkeyBackup {
	t.Helper()
	b := &valkeyv1.ValkeyBackup{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: valkeyv1.ValkeyBackupSpec{Cluster: cluster, Destination: valkeyv1.BackupDestination{
			Bucket: backupBucket, Prefix: prefix, Endpoint: endpoint, Insecure: true, CredentialsSecretRef: credentials,
		}},
	}
	if err := k8sClient.Create(context.Background(), b); err != nil {
		t.Fatalf("creating ValkeyBackup %s: %v", name, err)
	}
	t.Cleanup(func() { _ = k8sClient.Delete(context.Background(), b) })
	return b
}

// waitBackupFinal waits for Completed or Failed.
func waitBackupFinal(t testing.TB, key client.ObjectKey) *valkeyv1.ValkeyBackup {
	t.Helper()
	var b valkeyv1.ValkeyBackup
	eventually(t, 5*time.Minute, "backup "+key.String()+" Completed or Failed", func() error {
		if err := k8sClient.Get(context.Background(), key, &b); err != nil {
			return err
		}
		if b.Status.Phase == valkeyv1.BackupCompleted || b.Status.Phase == valkeyv1.BackupFailed {
			return nil
		}
		return fmt.Errorf("phase %q: %s", b.Status.Phase, b.Status.Message)
	})
	return &b
}

func getObject(t testing.TB, mc *minio.Client, object string) []byte {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	o, err := mc.GetObject(ctx, backupBucket, object, minio.GetObjectOptions{})
	if err != nil {
		t.Fatalf("getting %s: %v", object, err)
	}
	defer func() { _ = o.Close() }()
	b, err := io.ReadAll(o)
	if err != nil {
		t.Fatalf("reading %s: %v", object, err)
	}
	return b
}

// On a TLS cluster the snapshot connection is TLS too, verified like every
// other connection of the operator; the file restores the keys.
func TestBackupOfTLSCluster(t *testing.T) {
	t.Parallel()
	store := s3test.Start(t)
	store.MakeBucket(t, backupBucket)
	ca := testcerts.NewCA("backup-ca")
	f := newTLSCluster(t, "backup-tls", ca, 1, 1)
	c := clusterClient(t, f.service(), ca.CertPEM)
	data := writeTypedKeys(t, c, 500)
	createBackupCredentials(t, f.ns, "store-credentials", store.AccessKey, store.SecretKey)
	b := createBackup(t, f.ns, "tls", f.name, "store-credentials", store.Endpoint, "")
	b = waitBackupFinal(t, client.ObjectKeyFromObject(b))
	if b.Status.Phase != valkeyv1.BackupCompleted || len(b.Status.Shards) != 1 {
		t.Fatalf("backup %s with %d shards: %s", b.Status.Phase, len(b.Status.Shards), b.Status.Message)
	}
	s := b.Status.Shards[0]
	rdb := getObject(t, store.Client(t), s.Object)
	if sum := sha256.Sum256(rdb); hex.EncodeToString(sum[:]) != s.SHA256 {
		t.Fatalf("object sha256 %x, status %s", sum, s.SHA256)
	}
	checkRestoredShard(t, c, rdb, parseRanges(t, s.Slots), data, typedKeySlots(t, c, data))
}
