package e2e

import (
	"fmt"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"

	valkeyv1 "github.com/gomomento/valkey-operator/api/v1alpha1"
	"github.com/gomomento/valkey-operator/internal/testcerts"
	"github.com/gomomento/valkey-operator/internal/topology"
)

// A broken TLS Secret holds topology changes, not healing: a primary lost
// while the cluster is Invalid is still replaced by its replica (a takeover,
// since 1 of 2 primaries is no quorum), because every node keeps serving the
// certificate it has mounted. Adding the replacement replica waits for a
// valid Secret, and follows once it is restored.
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
	checkKeys(t, c, before)
	eventually(t, time.Minute, "the replacement replica held for the Secret", func() error {
		vc := f.cluster()
		p := meta.FindStatusCondition(vc.Status.Conditions, valkeyv1.CondProgressing)
		if vc.Status.State != valkeyv1.StateInvalid || p == nil || p.Reason != valkeyv1.ReasonHeldForTLS {
			return fmt.Errorf("state %s, conditions %v", vc.Status.State, conditionSummary(vc))
		}
		return nil
	})

	applySecret(t, f.ns, f.secret, good)
	eventually(t, 3*time.Minute, "the lost primary replaced", func() error {
		vc := f.cluster()
		if vc.Status.State != valkeyv1.StateActive {
			return fmt.Errorf("state %s", vc.Status.State)
		}
		for _, sh := range vc.Status.ShardStatuses {
			if sh.Primary == lost || len(sh.Replicas) != 1 || sh.Replicas[0] == lost {
				return fmt.Errorf("shards %+v", vc.Status.ShardStatuses)
			}
		}
		if p := meta.FindStatusCondition(vc.Status.Conditions, valkeyv1.CondProgressing); p == nil || p.Status != "False" {
			return fmt.Errorf("conditions %v", conditionSummary(vc))
		}
		return nil
	})
	checkKeys(t, c, before)
}
