package valkey

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gomomento/valkey-operator/internal/testbin"
)

// TestClusterAgainstRealServers forms a cluster the way bootstrap does,
// as the operator user with its production grants, and checks the parsers
// against what valkey-server really prints.
func TestClusterAgainstRealServers(t *testing.T) {
	v9 := testbin.Valkey9Server()
	if v9 == nil {
		t.Fatal("no Valkey 9 in bin/valkey9 (hack/install-valkey9.sh)")
	}
	builds := map[string][]string{"valkey-8": valkeyArgv(t), "valkey-9": v9}
	for name, argv := range builds {
		t.Run(name, func(t *testing.T) { testCluster(t, argv) })
	}
}

func testCluster(t *testing.T, argv []string) {
	servers := make([]*testServer, 3)
	for i := range servers {
		servers[i] = startClusterServer(t, argv)
	}
	ctx := testCtx(t)
	nodes := make([]*Node, 3)
	ids := make([]string, 3)
	for i, s := range servers {
		nodes[i] = dialT(t, s.operatorTarget())
		id, err := nodes[i].ClusterMyID(ctx)
		if err != nil {
			t.Fatal(err)
		}
		ids[i] = id
	}

	t.Run("ping and info", func(t *testing.T) {
		ctx := testCtx(t)
		if err := nodes[0].Ping(ctx); err != nil {
			t.Fatal(err)
		}
		info, err := nodes[0].InfoServer(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if !info.Version.AtLeast(Version{Major: 8}) || info.Mode != "cluster" || info.TCPPort != servers[0].Port {
			t.Fatalf("InfoServer = version %s, mode %q, port %d", info.Version, info.Mode, info.TCPPort)
		}
		repl, err := nodes[0].InfoReplication(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if !repl.IsPrimary() {
			t.Fatalf("fresh node role = %q", repl.Role)
		}
	})

	// Bootstrap: meet, assign slots, attach the replica.
	for _, s := range servers[1:] {
		if err := nodes[0].ClusterMeet(ctx, s.IP, s.Port, s.BusPort); err != nil {
			t.Fatal(err)
		}
	}
	eventually(t, 10*time.Second, "every node knowing 3 nodes", func() error {
		for i, n := range nodes {
			info, err := n.ClusterInfo(ctx)
			if err != nil {
				return err
			}
			if info.KnownNodes != 3 {
				return fmt.Errorf("node %d knows %d nodes", i, info.KnownNodes)
			}
		}
		return nil
	})
	if err := nodes[0].ClusterAddSlotsRange(ctx, SlotRange{Start: 0, End: 8191}); err != nil {
		t.Fatal(err)
	}
	if err := nodes[1].ClusterAddSlotsRange(ctx, SlotRange{Start: 8192, End: 12287}, SlotRange{Start: 12288, End: MaxSlot}); err != nil {
		t.Fatal(err)
	}
	eventually(t, 10*time.Second, "node 2 accepting node 0 as its primary", func() error {
		return nodes[2].ClusterReplicate(ctx, ids[0])
	})
	eventually(t, 15*time.Second, "cluster ok with the replica in sync", func() error {
		for i, n := range nodes {
			info, err := n.ClusterInfo(ctx)
			if err != nil {
				return err
			}
			if !info.OK() || info.SlotsAssigned != SlotCount || info.Size != 2 {
				return fmt.Errorf("node %d: state %s, %d slots, size %d", i, info.State, info.SlotsAssigned, info.Size)
			}
		}
		repl, err := nodes[2].InfoReplication(ctx)
		if err != nil {
			return err
		}
		if !repl.LinkUp() {
			return fmt.Errorf("replica link %q, syncing %v", repl.PrimaryLinkStatus, repl.PrimarySyncInProgress)
		}
		return nil
	})

	t.Run("cluster nodes", func(t *testing.T) {
		ctx := testCtx(t)
		all, err := nodes[0].ClusterNodes(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if len(all) != 3 {
			t.Fatalf("got %d nodes: %+v", len(all), all)
		}
		me, ok := all.Myself()
		if !ok || me.ID != ids[0] || !me.IsPrimary() || me.Port != servers[0].Port || me.BusPort != servers[0].BusPort {
			t.Fatalf("myself = %+v", me)
		}
		if got := formatSlotRanges(me.Slots); got != "0-8191" {
			t.Fatalf("myself slots = %s", got)
		}
		n1, _ := all.ByID(ids[1])
		if got := formatSlotRanges(n1.Slots); got != "8192-16383" || n1.LinkState != linkConnected {
			t.Fatalf("node 1 = %+v", n1)
		}
		replicas := all.replicasOf(ids[0])
		if len(replicas) != 1 || replicas[0].ID != ids[2] {
			t.Fatalf("replicas of node 0 = %+v", replicas)
		}
		if len(missingSlots(all.assignedSlots())) != 0 {
			t.Fatalf("slots missing: %v", missingSlots(all.assignedSlots()))
		}
	})

	t.Run("cluster shards", func(t *testing.T) {
		ctx := testCtx(t)
		shards, err := nodes[0].ClusterShards(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if len(shards) != 2 {
			t.Fatalf("got %d shards: %+v", len(shards), shards)
		}
		for _, sh := range shards {
			p, ok := sh.primary()
			if !ok {
				t.Fatalf("shard without primary: %+v", sh)
			}
			switch p.ID {
			case ids[0]:
				if formatSlotRanges(sh.Slots) != "0-8191" || len(sh.Nodes) != 2 {
					t.Fatalf("shard of node 0 = %+v", sh)
				}
				for _, n := range sh.Nodes {
					if n.ID == ids[2] && (n.Role != shardRoleReplica || n.Port != servers[2].Port || n.IP != "127.0.0.1") {
						t.Fatalf("replica entry = %+v", n)
					}
				}
			case ids[1]:
				if formatSlotRanges(sh.Slots) != "8192-16383" || len(sh.Nodes) != 1 || p.Health != healthOnline {
					t.Fatalf("shard of node 1 = %+v", sh)
				}
			default:
				t.Fatalf("unexpected primary %s", p.ID)
			}
		}
	})

	t.Run("operator grants", func(t *testing.T) {
		ctx := testCtx(t)
		if err := nodes[0].AclLoad(ctx); err != nil {
			t.Fatal(err)
		}
		if err := nodes[0].ConfigSet(ctx, "cluster-node-timeout", "2000", "maxmemory-policy", "noeviction"); err != nil {
			t.Fatal(err)
		}
		if _, err := nodes[0].AclList(ctx); !IsNoPermission(err) {
			t.Fatalf("AclList as the operator: want NOPERM, got %v", err)
		}
		if _, err := nodes[0].ConfigGet(ctx, "maxmemory-policy"); !IsNoPermission(err) {
			t.Fatalf("ConfigGet as the operator: want NOPERM, got %v", err)
		}
		mover := dialT(t, Target{Address: servers[0].Addr(), Username: moverUser, Password: moverPassword})
		rules, err := mover.AclList(ctx)
		if err != nil || !slices.ContainsFunc(rules, func(r string) bool { return strings.Contains(r, operatorUser) }) {
			t.Fatalf("AclList = %q, %v", rules, err)
		}
		got, err := mover.ConfigGet(ctx, "maxmemory-policy")
		if err != nil || got["maxmemory-policy"] != "noeviction" {
			t.Fatalf("ConfigGet = %v, %v", got, err)
		}
	})

	t.Run("wrong password", func(t *testing.T) {
		ctx := testCtx(t)
		target := servers[0].operatorTarget()
		target.Password = "wrong"
		if n, err := Dial(ctx, target); err == nil {
			n.Close()
			t.Fatal("Dial with a wrong password succeeded")
		}
	})

	t.Run("TLS asked of a plaintext server", func(t *testing.T) {
		ctx := testCtx(t)
		target := servers[0].operatorTarget()
		target.TLS = &TLS{CA: newTestPKI(t).ca.CertPEM, ServerName: podFQDN}
		// The server waits for a newline that a ClientHello never sends.
		target.Timeout = time.Second
		if n, err := Dial(ctx, target); err == nil {
			n.Close()
			t.Fatal("Dial with TLS reached a plaintext server")
		}
	})

	info, err := nodes[0].InfoServer(ctx)
	if err != nil {
		t.Fatal(err)
	}
	// On Valkey 9 the calls work, and TestAtomicSlotMigration uses them.
	if !info.Version.AtLeast(atomicSlotMigrationVersion) {
		t.Run("atomic slot migration needs valkey 9", func(t *testing.T) {
			ctx := testCtx(t)
			err := nodes[0].ClusterMigrateSlots(ctx, ids[1], SlotRange{Start: 0, End: 9})
			if !errors.Is(err, errNotSupported) {
				t.Fatalf("ClusterMigrateSlots on 8.x: want errNotSupported, got %v", err)
			}
			if _, err := nodes[0].ClusterGetSlotMigrations(ctx); !errors.Is(err, errNotSupported) {
				t.Fatalf("ClusterGetSlotMigrations on 8.x: want errNotSupported, got %v", err)
			}
		})
	}

	t.Run("classic slot migration", func(t *testing.T) {
		ctx := testCtx(t)
		// MIGRATE needs key access the operator user lacks.
		mover := dialT(t, Target{Address: servers[0].Addr(), Username: moverUser, Password: moverPassword})
		tag, slot := tagInRange(t, mover, SlotRange{Start: 0, End: 8191})
		keys := []string{"{" + tag + "}a", "{" + tag + "}b"}
		for _, k := range keys {
			if err := mover.client.Do(ctx, mover.client.B().Set().Key(k).Value("v").Build()).Error(); err != nil {
				t.Fatal(err)
			}
		}
		if err := nodes[1].ClusterSetSlot(ctx, slot, SlotImporting, ids[0]); err != nil {
			t.Fatal(err)
		}
		if err := nodes[0].ClusterSetSlot(ctx, slot, SlotMigrating, ids[1]); err != nil {
			t.Fatal(err)
		}
		all, err := nodes[0].ClusterNodes(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if me, _ := all.Myself(); me.Migrating[slot] != ids[1] {
			t.Fatalf("myself migrating = %v", me.Migrating)
		}
		// SETSLOT is replicated: the source's replica (node 2) reports the
		// same state on its own myself line, which is why the planner acts
		// on primaries' slot states only.
		eventually(t, 10*time.Second, "the source's replica reporting the slot MIGRATING", func() error {
			all, err := nodes[2].ClusterNodes(ctx)
			if err != nil {
				return err
			}
			if me, _ := all.Myself(); me.Migrating[slot] != ids[1] {
				return fmt.Errorf("replica's myself migrating = %v", me.Migrating)
			}
			return nil
		})
		all, err = nodes[1].ClusterNodes(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if me, _ := all.Myself(); me.Importing[slot] != ids[0] {
			t.Fatalf("myself importing = %v", me.Importing)
		}
		if n, err := nodes[0].ClusterCountKeysInSlot(ctx, slot); err != nil || n != 2 {
			t.Fatalf("CountKeysInSlot on source = %d, %v", n, err)
		}
		got, err := nodes[0].ClusterGetKeysInSlot(ctx, slot, 10)
		slices.Sort(got)
		if err != nil || !slices.Equal(got, keys) {
			t.Fatalf("GetKeysInSlot = %q, %v", got, err)
		}
		err = mover.Migrate(ctx, MigrateArgs{
			Host: servers[1].IP, Port: servers[1].Port, Keys: got,
			Username: moverUser, Password: moverPassword, Timeout: 2 * time.Second,
		})
		if err != nil {
			t.Fatal(err)
		}
		if n, err := nodes[1].ClusterCountKeysInSlot(ctx, slot); err != nil || n != 2 {
			t.Fatalf("CountKeysInSlot on target = %d, %v", n, err)
		}
		for _, i := range []int{1, 0} {
			if err := nodes[i].ClusterSetSlot(ctx, slot, SlotNode, ids[1]); err != nil {
				t.Fatal(err)
			}
		}
		eventually(t, 10*time.Second, "every node seeing the slot on node 1", func() error {
			for i, n := range nodes {
				all, err := n.ClusterNodes(ctx)
				if err != nil {
					return err
				}
				owner, _ := all.ByID(ids[1])
				if !slices.ContainsFunc(owner.Slots, func(r SlotRange) bool { return r.Contains(slot) }) {
					return fmt.Errorf("node %d sees node 1 with %s", i, formatSlotRanges(owner.Slots))
				}
			}
			return nil
		})
		if err := nodes[0].ClusterSetSlot(ctx, slot, SlotStable, ""); err != nil {
			t.Fatal(err)
		}
	})

	t.Run("failover", func(t *testing.T) {
		ctx := testCtx(t)
		if err := nodes[2].ClusterFailover(ctx, FailoverDefault); err != nil {
			t.Fatal(err)
		}
		waitRoles(t, nodes, map[int]string{2: RolePrimary, 0: RoleReplica})
		if err := nodes[0].ClusterFailover(ctx, FailoverTakeover); err != nil {
			t.Fatal(err)
		}
		waitRoles(t, nodes, map[int]string{0: RolePrimary, 2: RoleReplica})
	})

	t.Run("forget", func(t *testing.T) {
		ctx := testCtx(t)
		if err := nodes[1].ClusterForget(ctx, ids[2]); err != nil {
			t.Fatal(err)
		}
		all, err := nodes[1].ClusterNodes(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if _, ok := all.ByID(ids[2]); ok || len(all) != 2 {
			t.Fatalf("node 1 still knows node 2: %+v", all)
		}
	})
}
