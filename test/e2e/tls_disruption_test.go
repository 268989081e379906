package e2e

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"testing"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"

	valkeyv1 "github.com/gomomento/valkey-operator/api/v1alpha1"
	"github.com/gomomento/valkey-operator/internal/testcerts"
	"github.com/gomomento/valkey-operator/internal/topology"
)

// The disruptive paths on a TLS-only cluster: every connection the
// operator, the nodes and the client make is TLS, verified against the
// cluster's CA with the name of the node it reaches, so a slot move, a
// replacement node or a failover that reached a node by the wrong name or
// in plaintext would show here as a failed request or a stuck cluster.

// Valkey 8 moves slots with MIGRATE, which with tls-cluster the source
// sends over TLS to the target's TLS port: 2 -> 3 -> 2 shards under load,
// no failed request, every acknowledged write back.
func TestTLSClassicShardScaling(t *testing.T) {
	t.Parallel()
	ca := testcerts.NewCA("tls-scale8-ca")
	f := newTLSCluster(t, "tls-scale8", ca, 2, 1)
	c := clusterClient(t, f.service(), ca.CertPEM)
	before := writeKeys(t, c, "before", 1000)

	scaleShardsUnderLoad(t, f.key, c, before, 1, 2, 3, 2)
	assertSlotMoves(t, f.key, "by SETSLOT and MIGRATE", "by CLUSTER MIGRATESLOTS")
	f.waitServing(ca.CertPEM, f.leaf, time.Minute)
}

// Valkey 9 moves slots with CLUSTER MIGRATESLOTS, the source reaching the
// target over TLS as the replication user: the same 2 -> 3 -> 2 under
// load, only atomic moves, no failed request, every write back.
func TestTLSAtomicShardScaling(t *testing.T) {
	t.Parallel()
	const ns = "tls-scale9"
	cfg := createConfig(t, ns, "9.1.2", valkeyv1.ValkeyConfigSpec{Valkey: map[string]string{"maxmemory": "64mb"}})
	ca := testcerts.NewCA("tls-scale9-ca")
	f := newTLSCluster(t, ns, ca, 2, 1, withConfig(cfg))
	c := clusterClient(t, f.service(), ca.CertPEM)
	before := writeKeys(t, c, "before", 1000)

	scaleShardsUnderLoad(t, f.key, c, before, 1, 2, 3, 2)
	assertSlotMoves(t, f.key, "by CLUSTER MIGRATESLOTS", "by SETSLOT and MIGRATE")
	f.waitServing(ca.CertPEM, f.leaf, time.Minute)
}

// assertSlotMoves checks that the cluster's slot moves were all made the
// way the note want names, at least one of them, none the way other does.
func assertSlotMoves(t testing.TB, key client.ObjectKey, want, other string) {
	t.Helper()
	got, wrong := countEvents(t, key, "MigrateSlots", want), countEvents(t, key, "MigrateSlots", other)
	if got == 0 || wrong != 0 {
		t.Fatalf("slot moves: %d %s, %d %s; want only %s", got, want, wrong, other, want)
	}
}

// A ValkeyConfig edit replaces every node of a TLS cluster, one shard at a
// time with one failover each: each replacement mounts the operator's copy
// of the Secret and joins, syncs and takes over over TLS, with no failed
// request and every write back; every new node serves the Secret's leaf.
func TestTLSRollUnderLoad(t *testing.T) {
	t.Parallel()
	const ns, shards, replicas = "tls-roll", 2, 1
	ca := testcerts.NewCA("tls-roll-ca")
	f := newTLSCluster(t, ns, ca, shards, replicas)
	c := clusterClient(t, f.service(), ca.CertPEM)
	before := writeKeys(t, c, "before", 1000)
	oldNodes := slices.Clone(f.cluster().Status.Nodes)
	oldSlots := shardSlots(f.cluster())
	failovers := countEvents(t, f.key, string(topology.KindFailover), "")

	load := startLoad(c, "load")
	start := time.Now()
	var cfg valkeyv1.ValkeyConfig
	if err := k8sClient.Get(context.Background(), client.ObjectKey{Name: menuConfigName(ns)}, &cfg); err != nil {
		t.Fatal(err)
	}
	cfg.Spec.Valkey["maxmemory"] = "96mb"
	cfg.Spec.Valkey[restartOnlyKey] = restartOnlyValue
	if err := k8sClient.Update(context.Background(), &cfg); err != nil {
		t.Fatal(err)
	}
	eventually(t, 6*time.Minute, "every node replaced", func() error {
		vc := f.cluster()
		for _, n := range vc.Status.Nodes {
			if slices.Contains(oldNodes, n) {
				return fmt.Errorf("%s not replaced yet; state %s", n, vc.Status.State)
			}
		}
		return nil
	})
	vc := waitConverged(t, f.key, shards, replicas, 5*time.Minute)
	t.Logf("every node replaced in %s", time.Since(start).Round(time.Second))
	acked := load.finishUndisturbed(t)

	if got := shardSlots(vc); !maps.Equal(got, oldSlots) {
		t.Fatalf("shards' slots changed: %v, were %v", got, oldSlots)
	}
	if n := countEvents(t, f.key, string(topology.KindFailover), "") - failovers; n != shards {
		t.Fatalf("%d Failover Events during the roll, want one per shard (%d)", n, shards)
	}
	checkAll(t, c, before)
	checkAll(t, c, acked)
	f.waitServing(ca.CertPEM, f.leaf, time.Minute)
}

// A primary of a TLS cluster SIGKILLed with quorum held (3 shards): its
// replica wins the election over the TLS cluster bus, the operator forgets
// the dead node and gives the shard a new replica, which syncs over TLS.
// Every key written before and every write acknowledged outside the
// moments around the kill is read back.
func TestTLSPrimaryKilled(t *testing.T) {
	t.Parallel()
	const shards, replicas = 3, 1
	ca := testcerts.NewCA("tls-kill-ca")
	f := newTLSCluster(t, "tls-kill", ca, shards, replicas)
	c := clusterClient(t, f.service(), ca.CertPEM)
	before := writeKeys(t, c, "before", 1000)
	waitReplicated(t, c)

	vc := f.cluster()
	lost, heir := vc.Status.ShardStatuses[0].Primary, vc.Status.ShardStatuses[0].Replicas[0]
	load := startLoad(c, "load")
	start := time.Now()
	fail(t, f.ns, lost, processKilled)
	vc = waitReplaced(t, f.key, lost, shards, replicas)
	t.Logf("%s killed: Active with %d nodes after %s", lost, len(vc.Status.Nodes), time.Since(start).Round(time.Second))
	if got := vc.Status.ShardStatuses[0].Primary; got != heir {
		t.Fatalf("shard 0's primary is %s, want its replica %s", got, heir)
	}
	if n := countEvents(t, f.key, valkeyv1.ReasonPrimaryLostNoReplica, ""); n > 0 {
		t.Fatalf("%d data-loss Events for a shard whose replica held the data", n)
	}
	acked := load.finish(t)
	checkAll(t, c, before)
	checkAckedAroundKill(t, c, load, acked, start)
	f.waitServing(ca.CertPEM, f.leaf, time.Minute)
}
