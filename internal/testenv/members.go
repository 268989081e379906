package testenv

import (
	"context"
	"fmt"

	"sigs.k8s.io/controller-runtime/pkg/client"

	valkeyv1 "github.com/gomomento/valkey-operator/api/v1alpha1"
	"github.com/gomomento/valkey-operator/internal/valkey"
)

// MembersConverged checks a cluster the status calls converged against
// what is there and what its members say themselves: one ValkeyNode per
// member, each Active, and, asked through dial, shards primaries that hold
// slots and shards*replicas replicas whose link to their primary is up.
// Status alone is not the proof: it is what the operator believes.
func MembersConverged(ctx context.Context, c client.Reader, key client.ObjectKey, members []string, shards, replicas int,
	dial func(name string) (*valkey.Node, error)) error {
	var nodes valkeyv1.ValkeyNodeList
	if err := c.List(ctx, &nodes, client.InNamespace(key.Namespace), client.MatchingLabels{valkeyv1.LabelInstance: key.Name}); err != nil {
		return err
	}
	if len(nodes.Items) != len(members) {
		return fmt.Errorf("%d ValkeyNodes", len(nodes.Items))
	}
	for _, n := range nodes.Items {
		if n.Spec.Lifecycle != valkeyv1.LifecycleActive {
			return fmt.Errorf("node %s is %s", n.Name, n.Spec.Lifecycle)
		}
	}
	primaries, linked := 0, 0
	for _, name := range members {
		n, err := dial(name)
		if err != nil {
			return err
		}
		repl, err := n.InfoReplication(ctx)
		if err != nil {
			n.Close()
			return err
		}
		cn, err := n.ClusterNodes(ctx)
		n.Close()
		if err != nil {
			return err
		}
		me, _ := cn.Myself()
		switch {
		case repl.Role == valkey.RoleReplica && repl.PrimaryLinkStatus == "up":
			linked++
		case repl.Role == valkey.RolePrimary && me.SlotCount() > 0:
			primaries++
		default:
			return fmt.Errorf("node %s: role %s, link %q, %d slots", name, repl.Role, repl.PrimaryLinkStatus, me.SlotCount())
		}
	}
	if primaries != shards || linked != shards*replicas {
		return fmt.Errorf("%d primaries with slots, %d linked replicas", primaries, linked)
	}
	return nil
}
