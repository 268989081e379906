package backup

import (
	"context"
	"fmt"
	"sync"

	valkeyv1 "github.com/gomomento/valkey-operator/api/v1alpha1"
	"github.com/gomomento/valkey-operator/internal/backup"
	"github.com/gomomento/valkey-operator/internal/controller/nodeconn"
)

// backupView is one node as a backup sees it.
type backupView struct {
	member    backup.Member
	id        string
	primaryID string
	shard     backup.Shard
	offset    int64
	err       error
}

// observeForBackup asks one node its role, slots, replication link and,
// on a primary, its replication offset.
func observeForBackup(ctx context.Context, conn *nodeconn.Connector, name, ip string) backupView {
	v := backupView{member: backup.Member{Name: name, IP: ip}}
	n, err := conn.Dial(ctx, name, ip)
	if err != nil {
		v.err = err
		return v
	}
	defer n.Close()
	nodes, err := n.ClusterNodes(ctx)
	if err != nil {
		v.err = fmt.Errorf("node %s: %w", name, err)
		return v
	}
	me, ok := nodes.Myself()
	if !ok {
		v.err = fmt.Errorf("node %s: CLUSTER NODES has no myself line", name)
		return v
	}
	v.id, v.primaryID = me.ID, me.PrimaryID
	repl, err := n.InfoReplication(ctx)
	if err != nil {
		v.err = fmt.Errorf("node %s: %w", name, err)
		return v
	}
	if me.IsPrimary() {
		v.member.Primary = true
		v.shard.Slots = me.Slots
		v.offset = repl.ReplicationOffset
		return v
	}
	v.member.InSync = repl.LinkUp()
	return v
}

// backupShards asks every running node of the cluster, concurrently, for
// its own role, slots and replication link, and groups the nodes into
// shards by the primary they serve or follow. A node that does not answer
// is left out: a shard keeps its other nodes. Each primary's replication
// offset is read here, after the backup was asked for.
func (r *backupReconciler) backupShards(ctx context.Context, vc *valkeyv1.ValkeyCluster, conn *nodeconn.Connector) ([]backup.Shard, error) {
	pods, err := nodeconn.RunningPods(ctx, r.Client, vc)
	if err != nil {
		return nil, err
	}
	views := make([]backupView, len(pods))
	var wg sync.WaitGroup
	for i, pod := range pods {
		wg.Go(func() { views[i] = observeForBackup(ctx, conn, pod.Name, pod.Status.PodIP) })
	}
	wg.Wait()
	byPrimary := map[string]*backup.Shard{}
	for _, v := range views {
		if v.err == nil && v.member.Primary && len(v.shard.Slots) > 0 {
			s := v.shard
			s.Members = []backup.Member{v.member}
			s.PrimaryOffset = v.offset
			byPrimary[v.id] = &s
		}
	}
	for _, v := range views {
		if v.err == nil && !v.member.Primary {
			if s, ok := byPrimary[v.primaryID]; ok {
				s.Members = append(s.Members, v.member)
			}
		}
	}
	var out []backup.Shard
	for _, s := range byPrimary {
		out = append(out, *s)
	}
	shards, err := backup.Shards(out)
	if err != nil {
		for _, v := range views {
			if v.err != nil {
				return nil, fmt.Errorf("%w (and %w)", err, v.err)
			}
		}
		return nil, err
	}
	return shards, nil
}
