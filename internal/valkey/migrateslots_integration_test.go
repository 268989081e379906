package valkey

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/gomomento/valkey-operator/internal/testbin"
)

// TestAtomicSlotMigration needs Valkey 9 in bin/valkey9
// (hack/install-valkey9.sh); Valkey 8 has no CLUSTER MIGRATESLOTS.
func TestAtomicSlotMigration(t *testing.T) {
	argv := testbin.Valkey9Server()
	if argv == nil {
		t.Fatal("no Valkey 9 in bin/valkey9 (hack/install-valkey9.sh)")
	}
	servers := []*testServer{startClusterServer(t, argv), startClusterServer(t, argv)}
	ctx := testCtx(t)
	nodes := make([]*Node, len(servers))
	ids := make([]string, len(servers))
	for i, s := range servers {
		nodes[i] = dialT(t, s.operatorTarget())
		id, err := nodes[i].ClusterMyID(ctx)
		if err != nil {
			t.Fatal(err)
		}
		ids[i] = id
	}
	info, err := nodes[0].InfoServer(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if !info.Version.AtLeast(atomicSlotMigrationVersion) {
		t.Fatalf("bin/valkey9 runs %s", info.Version)
	}
	if err := nodes[0].ClusterMeet(ctx, servers[1].IP, servers[1].Port, servers[1].BusPort); err != nil {
		t.Fatal(err)
	}
	if err := nodes[0].ClusterAddSlotsRange(ctx, SlotRange{Start: 0, End: 8191}); err != nil {
		t.Fatal(err)
	}
	if err := nodes[1].ClusterAddSlotsRange(ctx, SlotRange{Start: 8192, End: MaxSlot}); err != nil {
		t.Fatal(err)
	}
	eventually(t, 15*time.Second, "both nodes seeing a healthy cluster", func() error {
		for i, n := range nodes {
			ci, err := n.ClusterInfo(ctx)
			if err != nil {
				return err
			}
			if !ci.OK() || ci.KnownNodes != 2 {
				return fmt.Errorf("node %d: state %s, %d known", i, ci.State, ci.KnownNodes)
			}
		}
		return nil
	})

	moved := []SlotRange{{Start: 0, End: 99}, {Start: 200, End: 299}}
	writer := dialT(t, Target{Address: servers[0].Addr(), Username: moverUser, Password: moverPassword})
	tag, slot := tagInRange(t, writer, moved[0])
	for _, k := range []string{"{" + tag + "}a", "{" + tag + "}b"} {
		if err := writer.client.Do(ctx, writer.client.B().Set().Key(k).Value("v").Build()).Error(); err != nil {
			t.Fatal(err)
		}
	}
	if err := nodes[0].ClusterMigrateSlots(ctx, ids[1], moved...); err != nil {
		t.Fatal(err)
	}
	eventually(t, 15*time.Second, "the migration job finishing", func() error {
		jobs, err := nodes[0].ClusterGetSlotMigrations(ctx)
		if err != nil {
			return err
		}
		if len(jobs) != 1 {
			return fmt.Errorf("%d jobs", len(jobs))
		}
		j := jobs[0]
		if !j.Finished() {
			return fmt.Errorf("job in state %s", j.State)
		}
		if j.State != SlotMigrationSuccess || j.Operation != "EXPORT" || j.TargetNode != ids[1] ||
			formatSlotRanges(j.SlotRanges) != "0-99,200-299" {
			t.Fatalf("job = %+v", j)
		}
		return nil
	})
	all, err := nodes[0].ClusterNodes(ctx)
	if err != nil {
		t.Fatal(err)
	}
	owner, _ := all.ByID(ids[1])
	if !slices.Equal(owner.Slots, []SlotRange{{Start: 0, End: 99}, {Start: 200, End: 299}, {Start: 8192, End: MaxSlot}}) {
		t.Fatalf("node 1 serves %s", formatSlotRanges(owner.Slots))
	}
	if n, err := nodes[1].ClusterCountKeysInSlot(ctx, slot); err != nil || n != 2 {
		t.Fatalf("keys in slot %d on the target = %d, %v", slot, n, err)
	}
	// Idempotent: nothing is running any more.
	if err := nodes[0].ClusterCancelSlotMigrations(ctx); err != nil {
		t.Fatal(err)
	}
}
