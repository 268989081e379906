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
	vk "github.com/gomomento/valkey-operator/internal/valkey"
)

// A node lost in the middle of a classic slot move, at either end, must not
// strand the keys already moved: the move resumes with the replica that took
// over the lost end, and every key stays readable. The top slots of every
// primary (the ones a scale-out moves first) are filled, so a batch takes
// long enough to be caught in flight.
func TestClassicMigrationSurvivesALostEnd(t *testing.T) {
	t.Parallel()
	key := newPlainCluster(t, "migloss", "cache", 2, 1)
	c := clusterClient(t, seedOf(key), nil)
	before := writeKeys(t, c, "before", 2000)

	for i, step := range []struct {
		to  int
		end string
	}{{3, "target"}, {4, "source"}} {
		t.Run(fmt.Sprintf("%s lost while scaling to %d shards", step.end, step.to), func(t *testing.T) {
			heavy := fillTopSlots(t, c, key, fmt.Sprintf("heavy%d", i), 64, 60)
			resumed := countEvents(t, key, "MigrateSlots", "resuming")
			primaries := dialPrimaries(t, key)
			load := startLoad(c, fmt.Sprintf("migloss-%d", i))
			updateCluster(t, key, func(vc *valkeyv1.ValkeyCluster) { vc.Spec.Shards = int32(step.to) })

			source, target := catchSlotInFlight(t, primaries, 3*time.Minute)
			victim := source
			if step.end == "target" {
				victim = target
			}
			victimName := nodeNameByID(t, key, victim)
			t.Logf("caught a slot moving from %s to %s; deleting the %s's pod %s", source[:8], target[:8], step.end, victimName)
			fail(t, key.Namespace, victimName, podDeleted)

			vc := waitConverged(t, key, step.to, 1, 5*time.Minute)
			acked := load.finish(t)
			assertEvenSlots(t, key.Namespace, vc, step.to)
			checkAll(t, c, before)
			checkAll(t, c, heavy)
			checkAll(t, c, acked)
			assertNoSlotInFlight(t, key)
			n := countEvents(t, key, "MigrateSlots", "resuming") - resumed
			t.Logf("interrupted moves resumed after losing %s: %d", victimName, n)
		})
	}
}

// fillTopSlots writes perSlot keys of 1 KiB into the top n slots of every
// primary, through hash tags.
func fillTopSlots(t testing.TB, c valkey.Client, key client.ObjectKey, prefix string, n, perSlot int) map[string]string {
	t.Helper()
	want := map[int]bool{}
	for _, sh := range getCluster(t, key).Status.ShardStatuses {
		ranges, err := vk.ParseSlotRanges(sh.Slots)
		if err != nil {
			t.Fatal(err)
		}
		top := 0
		for i := len(ranges) - 1; i >= 0 && top < n; i-- {
			for s := ranges[i].End; s >= ranges[i].Start && top < n; s-- {
				want[s] = true
				top++
			}
		}
	}
	tags := map[int]string{}
	for i := 0; len(tags) < len(want); i++ {
		tag := fmt.Sprintf("%s-%d", prefix, i)
		if s := vk.KeySlot(tag); want[s] && tags[s] == "" {
			tags[s] = tag
		}
	}
	value := strings.Repeat("v", 1024)
	out := map[string]string{}
	var cmds valkey.Commands
	for _, tag := range tags {
		for j := range perSlot {
			k := fmt.Sprintf("{%s}:%d", tag, j)
			out[k] = value
			cmds = append(cmds, c.B().Set().Key(k).Value(value).Build())
		}
	}
	for _, r := range c.DoMulti(context.Background(), cmds...) {
		if err := r.Error(); err != nil {
			t.Fatalf("filling slots: %v", err)
		}
	}
	return out
}

// dialPrimaries connects to every current primary.
func dialPrimaries(t testing.TB, key client.ObjectKey) []*vk.Node {
	t.Helper()
	var out []*vk.Node
	for _, sh := range getCluster(t, key).Status.ShardStatuses {
		n, err := dialPod(key.Namespace, sh.Primary)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { n.Close() })
		out = append(out, n)
	}
	return out
}

// catchSlotInFlight polls the primaries until one reports a slot MIGRATING
// and returns the IDs of its two ends.
func catchSlotInFlight(t testing.TB, primaries []*vk.Node, timeout time.Duration) (source, target string) {
	t.Helper()
	ctx := context.Background()
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		for _, n := range primaries {
			nodes, err := n.ClusterNodes(ctx)
			if err != nil {
				continue
			}
			me, _ := nodes.Myself()
			for _, to := range me.Migrating {
				return me.ID, to
			}
		}
		time.Sleep(time.Millisecond)
	}
	t.Fatalf("no slot seen moving within %s", timeout)
	return "", ""
}

func nodeNameByID(t testing.TB, key client.ObjectKey, id string) string {
	t.Helper()
	var list valkeyv1.ValkeyNodeList
	if err := k8sClient.List(context.Background(), &list, client.InNamespace(key.Namespace)); err != nil {
		t.Fatal(err)
	}
	for _, n := range list.Items {
		if n.Status.NodeID == id {
			return n.Name
		}
	}
	t.Fatalf("no ValkeyNode has node ID %s", id)
	return ""
}

// assertNoSlotInFlight fails when any node still reports a slot MIGRATING or
// IMPORTING: a move left half done.
func assertNoSlotInFlight(t testing.TB, key client.ObjectKey) {
	t.Helper()
	for _, name := range getCluster(t, key).Status.Nodes {
		me := podMyself(t, key.Namespace, name)
		if len(me.Migrating) > 0 || len(me.Importing) > 0 {
			t.Fatalf("node %s: slots migrating %v, importing %v", name, me.Migrating, me.Importing)
		}
	}
}
