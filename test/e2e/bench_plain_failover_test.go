package e2e

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/valkey-io/valkey-go"

	"github.com/gomomento/valkey-operator/internal/render"
	vk "github.com/gomomento/valkey-operator/internal/valkey"
)

// BenchmarkAvailabilityPlainPrimaryKill is the limit the operator's
// "primary kill" row is read against: six plain valkey-server 8 processes
// on this machine, formed 3x1 by valkey-cli --cluster create with the
// cluster-node-timeout the operator forces, the same probe load, and the
// primary of slot 0 SIGKILLed. Nothing but Valkey's own failure detection
// and election promotes its replica. Run once: use -benchtime 1x.
func BenchmarkAvailabilityPlainPrimaryKill(b *testing.B) {
	dir := b.TempDir()
	argv := []string{"valkey-server", "--cluster-node-timeout", render.ForcedSetting("cluster-node-timeout")}
	var addrs []string
	for range 6 {
		addrs = append(addrs, startServer(b, dir, argv))
	}
	valkeyCLI(b, append(append([]string{"--cluster", "create"}, addrs...), "--cluster-replicas", "1", "--cluster-yes")...)
	// A replica still in its first sync (the primary delays a diskless
	// transfer by 5 s) is never elected: the kill waits for every link.
	eventually(b, time.Minute, "the plain cluster to serve every slot, every replica synced", func() error {
		if err := plainClusterSettled(addrs); err != nil {
			return err
		}
		return plainReplicasSynced(addrs)
	})
	c, err := valkey.NewClient(valkey.ClientOption{InitAddress: addrs[:1], DisableCache: true})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(c.Close)

	runDisruption(b, c, "primary kill, plain valkey-server", "3x1", func(b *testing.B) {
		lost := plainSlotOwner(b, addrs, 0)
		n, err := vk.Dial(context.Background(), vk.Target{Address: lost})
		if err != nil {
			b.Fatal(err)
		}
		info, err := n.Info(context.Background(), "server")
		n.Close()
		if err != nil {
			b.Fatal(err)
		}
		pid, err := strconv.Atoi(info["server"]["process_id"])
		if err != nil {
			b.Fatalf("process_id of %s: %v", lost, err)
		}
		if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
			b.Fatal(err)
		}
		rest := slices.DeleteFunc(slices.Clone(addrs), func(a string) bool { return a == lost })
		eventually(b, time.Minute, "a replica elected for slot 0", func() error {
			for _, a := range rest {
				if owner := plainSlotOwner(b, []string{a}, 0); owner == lost || owner == "" {
					return fmt.Errorf("%s still sees slot 0 at %q: %s", a, owner, plainNodes(a))
				}
			}
			return nil
		})
	})
}

// plainSlotOwner is the address of the primary serving slot as the first of
// addrs that answers sees it, "" when none does.
func plainSlotOwner(b *testing.B, addrs []string, slot int) string {
	b.Helper()
	for _, a := range addrs {
		n, err := vk.Dial(context.Background(), vk.Target{Address: a})
		if err != nil {
			continue
		}
		nodes, err := n.ClusterNodes(context.Background())
		n.Close()
		if err != nil {
			continue
		}
		for _, cn := range nodes {
			if cn.IsPrimary() && !cn.HasFlag(vk.FlagFail) && slices.ContainsFunc(cn.Slots, func(r vk.SlotRange) bool { return r.Start <= slot && slot <= r.End }) {
				return fmt.Sprintf("%s:%d", cn.IP, cn.Port)
			}
		}
		return ""
	}
	return ""
}

// plainNodes is addr's CLUSTER NODES, one line per node, for a message.
func plainNodes(addr string) string {
	n, err := vk.Dial(context.Background(), vk.Target{Address: addr})
	if err != nil {
		return err.Error()
	}
	defer n.Close()
	nodes, err := n.ClusterNodes(context.Background())
	if err != nil {
		return err.Error()
	}
	var out []string
	for _, cn := range nodes {
		out = append(out, fmt.Sprintf("%s:%d %v %v", cn.IP, cn.Port, cn.Flags, cn.Slots))
	}
	return strings.Join(out, "; ")
}

// plainReplicasSynced: every replica among addrs reports its link to its
// primary up.
func plainReplicasSynced(addrs []string) error {
	for _, a := range addrs {
		n, err := vk.Dial(context.Background(), vk.Target{Address: a})
		if err != nil {
			return err
		}
		info, err := n.Info(context.Background(), "replication")
		n.Close()
		if err != nil {
			return err
		}
		r := info["replication"]
		if r["role"] == "slave" && r["master_link_status"] != "up" {
			return fmt.Errorf("replica %s: link to its primary %s", a, r["master_link_status"])
		}
	}
	return nil
}
