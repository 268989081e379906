package e2e

import (
	"fmt"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	valkeyv1 "github.com/gomomento/valkey-operator/api/v1alpha1"
	"github.com/gomomento/valkey-operator/internal/testcerts"
	"github.com/gomomento/valkey-operator/internal/topology"
)

// A broken TLS Secret holds topology changes, not healing: a primary lost
// while the cluster is Invalid is still replaced by its replica (a takeover,
// since 1 of 2 primaries is no quorum), because every node keeps serving the
// certificate it has mounted, and the shard gets its replica back while the
// Secret is still broken: the replacement mounts the operator's copy of the
// last valid material, which an invalid Secret never overwrites. A change
// the user asks for meanwhile (a third shard) waits for a valid Secret.
func TestTLSInvalidSecretStillHeals(t *testing.T) {
	t.Parallel()
	ca := testcerts.NewCA("heal-ca")
	f := newTLSCluster(t, "tls-heal", ca, 2, 1)
	c := clusterClient(t, f.service(), ca.CertPEM)
	before := writeKeys(t, c, "heal", 500)
	waitReplicated(t, c)
	good := testcerts.Secret(f.secret, f.ns, f.leaf)

	applySecret(t, f.ns, f.secret, nil)
	eventually(t, 30*time.Second, "Invalid", func() error {
		if s := f.cluster().Status.State; s != valkeyv1.StateInvalid {
			return fmt.Errorf("state %s", s)
		}
		return nil
	})

	lost := f.cluster().Status.ShardStatuses[0].Primary
	fail(t, f.ns, lost, processKilled)
	assertEvent(t, f.key, "Failover", topology.ReasonTakeover)
	// Right after the takeover a node that has not heard of it yet may give
	// the client a map without the slots' new owner: every key must be
	// back, and checkAll allows that moment.
	checkAll(t, c, before)
	eventually(t, 3*time.Minute, "the lost primary replaced while the Secret is invalid", func() error {
		vc := f.cluster()
		if vc.Status.State != valkeyv1.StateInvalid {
			return fmt.Errorf("state %s", vc.Status.State)
		}
		if err := shardsWhole(vc, lost); err != nil {
			return err
		}
		if d := meta.FindStatusCondition(vc.Status.Conditions, valkeyv1.CondDegraded); d == nil || d.Status != metav1.ConditionFalse {
			return fmt.Errorf("conditions %v", conditionSummary(vc))
		}
		return nil
	})
	waitReplicated(t, c)
	checkKeys(t, c, before)

	updateCluster(t, f.key, func(vc *valkeyv1.ValkeyCluster) { vc.Spec.Shards = 3 })
	eventually(t, time.Minute, "the new shard held for the Secret", func() error {
		vc := f.cluster()
		p := meta.FindStatusCondition(vc.Status.Conditions, valkeyv1.CondProgressing)
		if vc.Status.State != valkeyv1.StateInvalid || p == nil || p.Reason != valkeyv1.ReasonHeldForTLS {
			return fmt.Errorf("state %s, conditions %v", vc.Status.State, conditionSummary(vc))
		}
		if n := len(vc.Status.Nodes); n != 4 {
			return fmt.Errorf("%d nodes while the shard is held, want 4", n)
		}
		return nil
	})

	applySecret(t, f.ns, f.secret, good)
	eventually(t, 5*time.Minute, "the held shard added once the Secret is valid", func() error {
		vc := f.cluster()
		if vc.Status.State != valkeyv1.StateActive || len(vc.Status.ShardStatuses) != 3 {
			return fmt.Errorf("state %s, shards %+v", vc.Status.State, vc.Status.ShardStatuses)
		}
		if err := shardsWhole(vc, lost); err != nil {
			return err
		}
		if p := meta.FindStatusCondition(vc.Status.Conditions, valkeyv1.CondProgressing); p == nil || p.Status != metav1.ConditionFalse {
			return fmt.Errorf("conditions %v", conditionSummary(vc))
		}
		return nil
	})
	checkKeys(t, c, before)
}

// shardsWhole: every shard has a primary and one replica, none of them lost.
func shardsWhole(vc *valkeyv1.ValkeyCluster, lost string) error {
	for _, sh := range vc.Status.ShardStatuses {
		if sh.Primary == "" || sh.Primary == lost || len(sh.Replicas) != 1 || sh.Replicas[0] == lost {
			return fmt.Errorf("shards %+v", vc.Status.ShardStatuses)
		}
	}
	return nil
}
