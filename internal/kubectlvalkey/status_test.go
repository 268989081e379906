package kubectlvalkey

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	valkeyv1 "github.com/gomomento/valkey-operator/api/v1alpha1"
)

func TestWriteStatus(t *testing.T) {
	now := time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC)
	notAfter := metav1.NewTime(now.Add(89*24*time.Hour + time.Hour))

	active := tlsCluster()
	active.Status = valkeyv1.ValkeyClusterStatus{
		State:         valkeyv1.StateActive,
		Shards:        2,
		Nodes:         []string{"cache-1a2b3", "cache-4c5d6", "cache-7e8f9", "cache-0a1b2"},
		ReadyNodes:    4,
		SlotsAssigned: 16384,
		Conditions: []metav1.Condition{
			{Type: "Ready", Status: metav1.ConditionTrue, Reason: "ClusterFormed", Message: "all 16384 slots served"},
			{Type: "CertificatesServed", Status: metav1.ConditionTrue, Reason: "ServingCurrent", Message: "all 4 nodes serve\nthe certificate"},
		},
		ShardStatuses: []valkeyv1.ShardStatus{
			{Index: 1, Primary: "cache-7e8f9", Replicas: []string{"cache-0a1b2"}, Slots: "8192-16383", SlotCount: 8192},
			{Index: 0, Primary: "cache-1a2b3", Replicas: []string{"cache-4c5d6"}, Slots: "0-8191", SlotCount: 8192},
		},
		TLS: &valkeyv1.TLSStatus{Fingerprint: "ab12", NotAfter: &notAfter, NodesServingCurrent: 3, NodesTotal: 4},
	}
	node := func(name string, shard int32, role valkeyv1.NodeRole, lc valkeyv1.NodeLifecycle, ip string) valkeyv1.ValkeyNode {
		return valkeyv1.ValkeyNode{
			ObjectMeta: metav1.ObjectMeta{Namespace: testNS, Name: name},
			Spec:       valkeyv1.ValkeyNodeSpec{ClusterName: testCluster, ShardIndex: shard, Lifecycle: lc},
			Status:     valkeyv1.ValkeyNodeStatus{Role: role, PodIP: ip},
		}
	}
	activeNodes := []valkeyv1.ValkeyNode{
		node("cache-7e8f9", 1, valkeyv1.RolePrimary, valkeyv1.LifecycleActive, "10.0.0.3"),
		node("cache-4c5d6", 0, valkeyv1.RoleReplica, "", "10.0.0.2"),
		node("cache-1a2b3", 0, valkeyv1.RolePrimary, valkeyv1.LifecycleActive, "10.0.0.1"),
		node("cache-0a1b2", 1, valkeyv1.RoleReplica, valkeyv1.LifecycleJoining, "10.0.0.4"),
	}

	fresh := tlsCluster()
	fresh.Spec.TLS = nil

	resharding := tlsCluster()
	resharding.Spec.TLS = nil
	resharding.Spec.Shards = 3
	resharding.Status = valkeyv1.ValkeyClusterStatus{
		State: valkeyv1.StateUpdating, Shards: 3, SlotsAssigned: 16384,
		Resharding: &valkeyv1.ReshardingStatus{SlotsToMove: 3000, SlotsTotal: 5461, Progress: "2461/5461 slots",
			Moving: []valkeyv1.SlotMove{
				{Source: "cache-1a2b3", Target: "cache-9z8y7", Slots: "3000-5460", SlotCount: 2461, Method: "atomic"},
				{Source: "cache-7e8f9", Target: "cache-9z8y7", Slots: "13923-16383", SlotCount: 2461, Method: "atomic"},
			}},
	}

	// As the operator writes it before any shard has a primary.
	bootstrapping := tlsCluster()
	bootstrapping.Spec.TLS = nil
	bootstrapping.Spec.Shards = 3
	bootstrapping.Status = valkeyv1.ValkeyClusterStatus{
		State: valkeyv1.StateCreating,
		Nodes: []string{"cache-1a2b3", "cache-4c5d6", "cache-7e8f9"},
		Conditions: []metav1.Condition{
			{Type: "Ready", Status: metav1.ConditionFalse, Reason: "Bootstrapping", Message: "waiting for pods to run: cache-1a2b3"},
			{Type: "Progressing", Status: metav1.ConditionTrue, Reason: "Wait", Message: "waiting for pods to run: cache-1a2b3"},
			{Type: "Degraded", Status: metav1.ConditionFalse, Reason: "Bootstrapping",
				Message: "bootstrap in progress: 0 of 3 shards have a primary serving slots; nothing has failed"},
		},
	}

	cases := []struct {
		name  string
		vc    *valkeyv1.ValkeyCluster
		nodes []valkeyv1.ValkeyNode
		want  string
	}{
		{
			name:  "active TLS cluster",
			vc:    active,
			nodes: activeNodes,
			want: `Cluster:      app/cache
State:        Active
Message:      -
Spec:         shards 1, replicasPerShard 1
Shards:       2
Nodes:        4 ready of 4
Slots:        16384/16384 assigned
TLS Secret:   cache-tls
Certificate:  sha256 ab12
Not after:    2025-08-29T13:00:00Z (in 89d)
Serving:      3/4 nodes serve the current certificate

CONDITION           STATUS  REASON          MESSAGE
Ready               True    ClusterFormed   all 16384 slots served
CertificatesServed  True    ServingCurrent  all 4 nodes serve the certificate

SHARD  PRIMARY      REPLICAS     SLOTS       SLOT COUNT
0      cache-1a2b3  cache-4c5d6  0-8191      8192
1      cache-7e8f9  cache-0a1b2  8192-16383  8192

NODE         SHARD  ROLE     LIFECYCLE  POD IP
cache-1a2b3  0      primary  Active     10.0.0.1
cache-4c5d6  0      replica  Active     10.0.0.2
cache-7e8f9  1      primary  Active     10.0.0.3
cache-0a1b2  1      replica  Joining    10.0.0.4
`,
		},
		{
			name: "a reshard under way shows its progress and moves",
			vc:   resharding,
			want: `Cluster:     app/cache
State:       Updating
Message:     -
Spec:        shards 3, replicasPerShard 1
Shards:      3
Nodes:       0 ready of 0
Slots:       16384/16384 assigned
Resharding:  2461/5461 slots moved, 3000 to go
  moving:    cache-1a2b3 -> cache-9z8y7 slots 3000-5460 (2461, atomic)
  moving:    cache-7e8f9 -> cache-9z8y7 slots 13923-16383 (2461, atomic)

CONDITION  STATUS  REASON  MESSAGE
-          -       -       -

SHARD  PRIMARY  REPLICAS  SLOTS  SLOT COUNT

NODE  SHARD  ROLE  LIFECYCLE  POD IP
`,
		},
		{
			name: "bootstrap before any shard has a primary",
			vc:   bootstrapping,
			want: `Cluster:  app/cache
State:    Creating
Message:  -
Spec:     shards 3, replicasPerShard 1
Shards:   0
Nodes:    0 ready of 3
Slots:    0/16384 assigned

CONDITION    STATUS  REASON         MESSAGE
Ready        False   Bootstrapping  waiting for pods to run: cache-1a2b3
Progressing  True    Wait           waiting for pods to run: cache-1a2b3
Degraded     False   Bootstrapping  bootstrap in progress: 0 of 3 shards have a primary serving slots; nothing has failed

SHARD  PRIMARY  REPLICAS  SLOTS  SLOT COUNT

NODE  SHARD  ROLE  LIFECYCLE  POD IP
`,
		},
		{
			name: "plaintext cluster without status",
			vc:   fresh,
			want: `Cluster:  app/cache
State:    Creating
Message:  -
Spec:     shards 1, replicasPerShard 1
Shards:   0
Nodes:    0 ready of 0
Slots:    0/16384 assigned

CONDITION  STATUS  REASON  MESSAGE
-          -       -       -

SHARD  PRIMARY  REPLICAS  SLOTS  SLOT COUNT

NODE  SHARD  ROLE  LIFECYCLE  POD IP
`,
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var out strings.Builder
			if err := writeStatus(&out, tc.vc, tc.nodes, nil, now); err != nil {
				t.Fatal(err)
			}
			if out.String() != tc.want {
				t.Errorf("got:\n%s\nwant:\n%s", out.String(), tc.want)
			}
		})
	}
}

func TestStatusReadsOnlyTheClustersNodes(t *testing.T) {
	vc := tlsCluster()
	vc.Status.State = valkeyv1.StateActive
	mine := &valkeyv1.ValkeyNode{ObjectMeta: metav1.ObjectMeta{Namespace: testNS, Name: "cache-1a2b3"},
		Spec: valkeyv1.ValkeyNodeSpec{ClusterName: testCluster}}
	theirs := &valkeyv1.ValkeyNode{ObjectMeta: metav1.ObjectMeta{Namespace: testNS, Name: "other-9f8e7"},
		Spec: valkeyv1.ValkeyNodeSpec{ClusterName: "other"}}
	c := fakeClient(t, vc, mine, theirs)

	var out strings.Builder
	if err := status(context.Background(), c, testNS, testCluster, &out); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "cache-1a2b3") || strings.Contains(out.String(), "other-9f8e7") {
		t.Errorf("nodes listed wrongly:\n%s", out.String())
	}
	if err := status(context.Background(), c, testNS, "missing", &out); err == nil || !strings.Contains(err.Error(), "not found") {
		t.Errorf("missing cluster: err = %v", err)
	}
}

// The operator's failovers of this cluster, newest first, say which path
// each took; other clusters' and other reasons' Events are left out.
func TestStatusListsRecentFailovers(t *testing.T) {
	vc := tlsCluster()
	vc.Status.State = valkeyv1.StateActive
	at := time.Date(2026, 12, 5, 7, 0, 0, 0, time.UTC)
	event := func(name, cluster, reason, note string, ago time.Duration) *corev1.Event {
		return &corev1.Event{
			ObjectMeta:     metav1.ObjectMeta{Namespace: testNS, Name: name},
			InvolvedObject: corev1.ObjectReference{Kind: "ValkeyCluster", Name: cluster, Namespace: testNS},
			Reason:         reason, Message: note, EventTime: metav1.NewMicroTime(at.Add(-ago)),
		}
	}
	c := fakeClient(t, vc,
		event("e1", testCluster, "Failover", "no quorum — issued TAKEOVER on replica: cache-b replaces cache-a", time.Hour),
		event("e2", testCluster, "Failover", "primary's process exited — issued FAILOVER FORCE on the most caught-up replica: cache-d replaces cache-c", time.Minute),
		event("e3", "other", "Failover", "other cluster's failover", time.Second),
		event("e4", testCluster, "Meet", "not a failover", time.Second),
	)
	var out strings.Builder
	if err := status(context.Background(), c, testNS, testCluster, &out); err != nil {
		t.Fatal(err)
	}
	got := out.String()
	force, takeover := strings.Index(got, "FAILOVER FORCE"), strings.Index(got, "TAKEOVER on replica")
	if force < 0 || takeover < 0 || force > takeover {
		t.Errorf("want both failovers, newest first:\n%s", got)
	}
	if strings.Contains(got, "other cluster") || strings.Contains(got, "not a failover") {
		t.Errorf("unrelated Events listed:\n%s", got)
	}
}
