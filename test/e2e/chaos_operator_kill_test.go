package e2e

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"slices"
	"strings"
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
	"github.com/gomomento/valkey-operator/internal/render"
	"github.com/gomomento/valkey-operator/internal/s3test"
	"github.com/gomomento/valkey-operator/internal/testcerts"
	"github.com/gomomento/valkey-operator/internal/tlssecret"
	"github.com/gomomento/valkey-operator/internal/topology"
)

// killedStep is one step the operator is SIGKILLed in, on a cluster of its
// own so that every step runs at once and one kill can land in several.
type killedStep struct {
	what string
	ns   string
	// version is the cluster's Valkey: 9.1.2 moves slots with CLUSTER
	// MIGRATESLOTS, 8.0.1 with SETSLOT and MIGRATE.
	version          string
	shards, replicas int
	// begin makes the change the step carries out.
	begin func(t testing.TB, s *killedStep)
	// event and note pick the Event the step's first action records: the
	// operator is killed right after it.
	event, note string
	// The shape the step converges to.
	toShards, toReplicas int
	// done checks what else the step promises once converged.
	done func(t testing.TB, s *killedStep)
	// ca, when set, serves the cluster with TLS: a leaf it signed.
	ca *testcerts.CA
	// started, when set, tells that the step's first action was taken, for
	// a step that records no Event of its own when it starts.
	started func(t testing.TB, s *killedStep) bool

	key      client.ObjectKey
	c        valkey.Client
	before   map[string]string
	load     *clientLoad
	seen     int
	nodes    []string
	password render.Passwords
	tls      *tlsFixture
	next     *testcerts.LeafCert
	// restored is the cluster a restore step fills from s's backup.
	restored client.ObjectKey
	// store and backup are a backup step's bucket and ValkeyBackup.
	store  *s3test.Server
	backup client.ObjectKey
}

// underWay tells whether the step's first action has been taken.
func (s *killedStep) underWay(t testing.TB) bool {
	if s.started != nil {
		return s.started(t, s)
	}
	return countEvents(t, s.key, s.event, s.note) > s.seen
}

// reshapes: the step changes the cluster's shape.
func (s *killedStep) reshapes() bool { return s.toShards != s.shards || s.toReplicas != s.replicas }

// shapeReached: the cluster is converged to the step's target shape.
func shapeReached(t testing.TB, s *killedStep) bool {
	st := getCluster(t, s.key).Status
	return st.State == valkeyv1.StateActive && int(st.Shards) == s.toShards && st.SlotsAssigned == topology.TotalSlots &&
		len(st.Nodes) == s.toShards*(1+s.toReplicas)
}

func resize(shards, replicas int) func(testing.TB, *killedStep) {
	return func(t testing.TB, s *killedStep) {
		updateCluster(t, s.key, func(vc *valkeyv1.ValkeyCluster) {
			vc.Spec.Shards, vc.Spec.ReplicasPerShard = int32(shards), int32(replicas)
		})
	}
}

// The operator, run as its own process the way its Deployment runs it (as
// `valkey-local operator`, so that TLS reloads find the local runtime's
// files), is killed with SIGKILL in the middle of a step (no deferred cleanup, no
// lease released), and a new process carries on from what the API and
// Valkey hold: the step completes, the shape converges, and every key
// written before and every write acknowledged meanwhile is read back.
// Every step runs on its own small cluster at the same time; the operator
// is killed as soon as one of them records its first action, and again
// for those still to start, so each kill lands in one step or several.
// Not parallel: it stops the operator every other test relies on.
func TestChaosOperatorSIGKILLedMidStep(t *testing.T) {
	bin, kubeconfig := operatorProcessesInstead(t, localOperator)
	const leaseNS = "opkill-operator"
	createNamespace(t, leaseNS)
	op := startOperatorProcess(t, bin, kubeconfig, leaseNS, "first")

	steps := []*killedStep{
		{what: "a classic slot migration", ns: "opkill", version: "8.0.1", shards: 2, replicas: 1,
			begin: resize(3, 1), event: string(topology.KindMigrateSlots), note: topology.MigrationClassic.Command(),
			toShards: 3, toReplicas: 1, done: evenSlots},
		{what: "an atomic slot migration", ns: "opkill-atomic", version: "9.1.2", shards: 1, replicas: 1,
			begin: resize(2, 1), event: string(topology.KindMigrateSlots), note: topology.MigrationAtomic.Command(),
			toShards: 2, toReplicas: 1, done: func(t testing.TB, s *killedStep) {
				evenSlots(t, s)
				if n := countEvents(t, s.key, string(topology.KindMigrateSlots), topology.MigrationClassic.Command()); n != 0 {
					t.Errorf("%s: %d classic slot moves on Valkey 9 after the restart, want only CLUSTER MIGRATESLOTS", s.what, n)
				}
			}},
		{what: "a replica attach", ns: "opkill-attach", version: "8.0.1", shards: 1, replicas: 0,
			begin: resize(1, 1), event: string(topology.KindReplicate), toShards: 1, toReplicas: 1},
		{what: "a forget", ns: "opkill-forget", version: "8.0.1", shards: 1, replicas: 2,
			begin: resize(1, 1), event: string(topology.KindForget), toShards: 1, toReplicas: 1},
		{what: "a roll's failover", ns: "opkill-roll", version: "8.0.1", shards: 1, replicas: 1,
			begin: func(t testing.TB, s *killedStep) {
				ctx := context.Background()
				var cfg valkeyv1.ValkeyConfig
				if err := k8sClient.Get(ctx, client.ObjectKey{Name: menuConfigName(s.ns)}, &cfg); err != nil {
					t.Fatal(err)
				}
				cfg.Spec.Valkey["maxmemory"] = "96mb"
				cfg.Spec.Valkey[restartOnlyKey] = restartOnlyValue
				if err := k8sClient.Update(ctx, &cfg); err != nil {
					t.Fatal(err)
				}
			},
			event: string(topology.KindFailover), note: topology.ReasonRollFailover, toShards: 1, toReplicas: 1,
			// A failover whose Event died with the process shows in the
			// nodes themselves: a node the roll created serves the slots.
			started: func(t testing.TB, s *killedStep) bool {
				return countEvents(t, s.key, s.event, s.note) > s.seen || newNodeServes(s)
			},
			done: func(t testing.TB, s *killedStep) {
				eventually(t, 3*time.Minute, "every node of "+s.what+" replaced", func() error {
					for _, n := range getCluster(t, s.key).Status.Nodes {
						if slices.Contains(s.nodes, n) {
							return errorf("node %s not replaced yet", n)
						}
					}
					return nil
				})
				waitConverged(t, s.key, s.toShards, s.toReplicas, 2*time.Minute)
			}},
		{what: "a credentials rotation", ns: "opkill-cred", version: "8.0.1", shards: 1, replicas: 1,
			begin: func(t testing.TB, s *killedStep) { requestRotation(t, s.key, "opkill") },
			// The switch is written to the auth Secret before its Event is
			// sent, and a process killed in between never sends it: the
			// Secret's current password is the proof the switch was made.
			started: func(t testing.TB, s *killedStep) bool {
				p, _ := authPasswords(t, s.key)
				return p.Operator != s.password.Operator
			},
			toShards: 1, toReplicas: 1,
			done: func(t testing.TB, s *killedStep) { waitRotated(t, s.key, "opkill", s.password) }},
		{what: "a TLS rotation", ns: "opkill-tls", version: "8.0.1", shards: 1, replicas: 1, ca: testcerts.NewCA("opkill-ca"),
			begin: func(t testing.TB, s *killedStep) {
				s.next = testcerts.Leaf(s.ca, s.key.Name, s.ns, clusterDomain)
				s.tls.rotate(s.next, s.ca.CertPEM)
			},
			// The copy the nodes mount holds the new leaf: the nodes are
			// about to see it, and nothing has reloaded it yet.
			started: func(t testing.TB, s *killedStep) bool {
				var copied corev1.Secret
				err := k8sClient.Get(context.Background(), client.ObjectKey{Namespace: s.ns, Name: render.NodeTLSSecretName(s.key.Name)}, &copied)
				return err == nil && bytes.Equal(copied.Data[tlssecret.KeyCert], s.next.CertPEM)
			},
			toShards: 1, toReplicas: 1,
			done: func(t testing.TB, s *killedStep) {
				s.tls.waitServing(s.ca.CertPEM, s.next, 2*time.Minute)
				s.tls.waitCondition(valkeyv1.CondCertificatesServed, metav1.ConditionTrue, valkeyv1.ReasonServingCurrent, "", time.Minute)
				s.tls.waitEvent(corev1.EventTypeNormal, valkeyv1.ReasonRotationComplete, tlssecret.Fingerprint(s.next.Cert.Raw)[:16], time.Minute)
				if got := s.nodes; !slices.Equal(got, getCluster(t, s.key).Status.Nodes) {
					t.Errorf("%s replaced nodes: before %v, after %v", s.what, got, getCluster(t, s.key).Status.Nodes)
				}
			}},
		{what: "a backup", ns: "opkill-backup", version: "8.0.1", shards: 2, replicas: 1,
			begin: beginBackup, toShards: 2, toReplicas: 1,
			// A backup that ran whole between two polls is past Running.
			started: func(t testing.TB, s *killedStep) bool {
				return slices.Contains([]valkeyv1.BackupPhase{valkeyv1.BackupRunning, valkeyv1.BackupCompleted, valkeyv1.BackupFailed}, backupPhase(t, s.backup))
			},
			done: backupWholeOrFailed},
		{what: "a restore", ns: "opkill-restore", version: "8.0.1", shards: 2, replicas: 0,
			begin: beginRestore, toShards: 2, toReplicas: 0,
			// A loader exists: a shard's file is on its way into it.
			started: func(t testing.TB, s *killedStep) bool { return len(restoreLoaders(t, s.restored)) > 0 },
			done: func(t testing.TB, s *killedStep) {
				vc := waitRestored(t, s.restored, 3)
				checkAll(t, clusterClient(t, seedOf(s.restored), nil), s.before)
				eventually(t, time.Minute, "the loaders gone", func() error {
					if n := len(restoreLoaders(t, s.restored)); n > 0 {
						return errorf("%d loaders left", n)
					}
					return nil
				})
				t.Logf("%s: %s", s.what, vc.Status.Restore.Message)
			}},
	}

	start := time.Now()
	for _, s := range steps {
		createNamespace(t, s.ns)
		config := createMenu(t, s.ns)
		if s.version != "8.0.1" {
			config = createACLMenu(t, s.ns, s.version)
		}
		if s.ca == nil {
			s.key = createCluster(t, s.ns, "cache", config, s.shards, s.replicas)
			continue
		}
		s.tls = &tlsFixture{t: t, ns: s.ns, name: "cache", secret: "cache-tls", leaf: testcerts.Leaf(s.ca, "cache", s.ns, clusterDomain)}
		if err := k8sClient.Create(context.Background(), testcerts.Secret(s.tls.secret, s.ns, s.tls.leaf)); err != nil {
			t.Fatal(err)
		}
		s.key = createCluster(t, s.ns, "cache", config, s.shards, s.replicas, withTLS(s.tls.secret))
		s.tls.key = s.key
	}
	for _, s := range steps {
		waitConverged(t, s.key, s.shards, s.replicas, 5*time.Minute)
		var caPEM []byte
		if s.ca != nil {
			caPEM = s.ca.CertPEM
		}
		s.c = clusterClient(t, seedOf(s.key), caPEM)
		s.before = writeKeys(t, s.c, "before", 3000)
		waitReplicated(t, s.c)
		s.nodes = getCluster(t, s.key).Status.Nodes
		s.password, _ = authPasswords(t, s.key)
	}
	t.Logf("%d clusters ready after %s", len(steps), time.Since(start).Round(time.Second))

	start = time.Now()
	for _, s := range steps {
		s.load = startLoad(s.c, "during")
		if s.event != "" {
			s.seen = countEvents(t, s.key, s.event, s.note)
		}
		s.begin(t, s)
	}
	pending := slices.Clone(steps)
	for round := 0; len(pending) > 0; round++ {
		eventually(t, 4*time.Minute, "the first action of "+whatOf(pending), func() error {
			// A process killed right after an action may never have sent
			// its Event: a step that changes the shape and has reached it
			// was carried out between kills, and needs no kill of its own.
			pending = slices.DeleteFunc(pending, func(s *killedStep) bool {
				if !s.reshapes() || !shapeReached(t, s) {
					return false
				}
				t.Logf("%s completed between kills, its first Event not recorded", s.what)
				return true
			})
			if len(pending) == 0 {
				return nil
			}
			for _, s := range pending {
				if s.underWay(t) {
					return nil
				}
			}
			return errorf("no new Event yet")
		})
		if len(pending) == 0 {
			break
		}
		if err := op.cmd.Process.Kill(); err != nil {
			t.Fatalf("SIGKILL to the operator: %v", err)
		}
		_ = op.cmd.Wait()
		// The dead process records nothing more: a step whose Event is
		// there now was under way when it died.
		var hit []string
		pending = slices.DeleteFunc(pending, func(s *killedStep) bool {
			if !s.underWay(t) {
				return false
			}
			vc := getCluster(t, s.key)
			progressing := "no Progressing condition"
			if c := meta.FindStatusCondition(vc.Status.Conditions, valkeyv1.CondProgressing); c != nil {
				progressing = c.Reason + ": " + c.Message
			}
			hit = append(hit, fmt.Sprintf("%s (%s; %s)", s.what, vc.Status.State, progressing))
			return true
		})
		t.Logf("operator SIGKILLed %s after the changes, during %s", time.Since(start).Round(time.Millisecond), strings.Join(hit, "; "))
		op = startOperatorProcess(t, bin, kubeconfig, leaseNS, fmt.Sprintf("after-%d", round))
	}

	for _, s := range steps {
		waitConverged(t, s.key, s.toShards, s.toReplicas, 5*time.Minute)
		if s.done != nil {
			s.done(t, s)
		}
		acked := s.load.finish(t)
		checkAll(t, s.c, s.before)
		checkAll(t, s.c, acked)
		assertNoDataLoss(t, s.key)
		t.Logf("%s: converged, %d keys from before and %d acknowledged writes read back; %d ActionFailed and %d %s Events",
			s.what, len(s.before), len(acked), countEvents(t, s.key, valkeyv1.ReasonActionFailed, ""),
			countEvents(t, s.key, string(topology.KindClearSlotStates), ""), topology.KindClearSlotStates)
	}
	t.Logf("every step converged %s after the changes", time.Since(start).Round(time.Second))
}

// newNodeServes: a node that was not among the step's nodes before it
// began holds slots, by its own CLUSTER NODES.
func newNodeServes(s *killedStep) bool {
	var vc valkeyv1.ValkeyCluster
	if err := k8sClient.Get(context.Background(), s.key, &vc); err != nil {
		return false
	}
	for _, name := range vc.Status.Nodes {
		if slices.Contains(s.nodes, name) {
			continue
		}
		n, err := dialPod(s.ns, name)
		if err != nil {
			continue
		}
		nodes, err := n.ClusterNodes(context.Background())
		n.Close()
		if err != nil {
			continue
		}
		if me, ok := nodes.Myself(); ok && len(me.Slots) > 0 {
			return true
		}
	}
	return false
}

// beginRestore backs the step's cluster up and creates a 3-shard cluster
// restoring the backup.
func beginRestore(t testing.TB, s *killedStep) {
	store := s3test.Start(t)
	store.MakeBucket(t, backupBucket)
	createBackupCredentials(t, s.ns, "store-credentials", store.AccessKey, store.SecretKey)
	b := createBackup(t, s.ns, "before", s.key.Name, "store-credentials", store.Endpoint, "")
	if b = waitBackupFinal(t, client.ObjectKeyFromObject(b)); b.Status.Phase != valkeyv1.BackupCompleted {
		t.Fatalf("backup %s: %s", b.Status.Phase, b.Status.Message)
	}
	s.restored = createCluster(t, s.ns, "copy", menuConfigName(s.ns), 3, 0, func(spec *valkeyv1.ValkeyClusterSpec) {
		spec.Restore = &valkeyv1.ClusterRestore{BackupName: b.Name}
	})
}

// beginBackup gives the step's cluster 20 MiB more, so that its shards
// stream for a while, and starts a backup of it.
func beginBackup(t testing.TB, s *killedStep) {
	writeValues(t, s.c, 2000, randomValue(t, 10*1024))
	waitReplicated(t, s.c)
	s.store = s3test.Start(t)
	s.store.MakeBucket(t, backupBucket)
	createBackupCredentials(t, s.ns, "store-credentials", s.store.AccessKey, s.store.SecretKey)
	s.backup = client.ObjectKeyFromObject(createBackup(t, s.ns, "mid", s.key.Name, "store-credentials", s.store.Endpoint, ""))
}

func backupPhase(t testing.TB, key client.ObjectKey) valkeyv1.BackupPhase {
	var b valkeyv1.ValkeyBackup
	if err := k8sClient.Get(context.Background(), key, &b); err != nil {
		t.Fatal(err)
	}
	return b.Status.Phase
}

// backupWholeOrFailed: a backup the operator was killed in the middle of
// is never Completed unless it is whole (its manifest and every shard's
// file, matching their checksums); otherwise it failed, saying why, with
// no manifest.
func backupWholeOrFailed(t testing.TB, s *killedStep) {
	b := waitBackupFinal(t, s.backup)
	mc := s.store.Client(t)
	base := backup.Base("", s.ns, s.key.Name, b.Name)
	_, err := mc.StatObject(context.Background(), backupBucket, backup.ManifestObject(base), minio.StatObjectOptions{})
	switch b.Status.Phase {
	case valkeyv1.BackupCompleted:
		if err != nil {
			t.Fatalf("%s: Completed without its manifest: %v", s.what, err)
		}
		for _, sh := range b.Status.Shards {
			if sum := sha256.Sum256(getObject(t, mc, sh.Object)); hex.EncodeToString(sum[:]) != sh.SHA256 {
				t.Fatalf("%s: Completed with shard %d's file not matching its checksum", s.what, sh.Index)
			}
		}
		t.Logf("%s: Completed whole before the kill could cut it", s.what)
	default:
		if minio.ToErrorResponse(err).Code != "NoSuchKey" {
			t.Fatalf("%s: %s with a manifest (%v)", s.what, b.Status.Phase, err)
		}
		if !strings.Contains(b.Status.Message, "operator restarted") {
			t.Errorf("%s: failed saying %q, want the restart named", s.what, b.Status.Message)
		}
		t.Logf("%s: %s: %s", s.what, b.Status.Phase, b.Status.Message)
	}
}

// restoreLoaders are the restore loader pods of cluster key.
func restoreLoaders(t testing.TB, key client.ObjectKey) []corev1.Pod {
	t.Helper()
	var pods corev1.PodList
	if err := k8sClient.List(context.Background(), &pods, client.InNamespace(key.Namespace),
		client.MatchingLabels{valkeyv1.LabelRestoreOf: key.Name}); err != nil {
		t.Fatal(err)
	}
	return pods.Items
}

func whatOf(steps []*killedStep) string {
	var out []string
	for _, s := range steps {
		out = append(out, s.what)
	}
	return strings.Join(out, ", ")
}

func evenSlots(t testing.TB, s *killedStep) {
	t.Helper()
	assertEvenSlots(t, s.ns, getCluster(t, s.key), s.toShards)
}

// assertNoDataLoss fails if the cluster ever reported losing keys.
func assertNoDataLoss(t testing.TB, key client.ObjectKey) {
	t.Helper()
	if n := countEvents(t, key, valkeyv1.ReasonPrimaryLostNoReplica, ""); n > 0 {
		t.Fatalf("%d data-loss Events", n)
	}
}
