package e2e

import (
	"context"
	"fmt"
	"net"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	valkeyv1 "github.com/gomomento/valkey-operator/api/v1alpha1"
	"github.com/gomomento/valkey-operator/internal/valkey"
)

// Bootstrap shapes converge with every slot assigned, exact node counts and
// every replica's link up.
func TestBootstrapShapes(t *testing.T) {
	t.Parallel()
	shapes := []struct{ shards, replicas int }{{1, 0}, {4, 2}}
	for _, s := range shapes {
		t.Run(fmt.Sprintf("%dx%d", s.shards, s.replicas), func(t *testing.T) {
			ctx := context.Background()
			ns := fmt.Sprintf("shape-%dx%d", s.shards, s.replicas)
			createNamespace(t, ns)
			cfg := createMenu(t, ns)
			vc := &valkeyv1.ValkeyCluster{
				ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "shape"},
				Spec:       valkeyv1.ValkeyClusterSpec{ConfigRef: cfg, Shards: int32(s.shards), ReplicasPerShard: int32(s.replicas)},
			}
			if err := k8sClient.Create(ctx, vc); err != nil {
				t.Fatal(err)
			}
			start := time.Now()
			got := waitActive(t, client.ObjectKeyFromObject(vc), s.shards, s.replicas, 4*time.Minute)
			t.Logf("%dx%d Active after %s", s.shards, s.replicas, time.Since(start).Round(time.Millisecond))
			assertReplicaLinksUp(t, ns, got)
			deleteCluster(t, client.ObjectKeyFromObject(vc))
		})
	}
}

// assertReplicaLinksUp asks every node itself: replicas report their link
// to the primary up and the primaries own all slots between them.
func assertReplicaLinksUp(t testing.TB, ns string, vc *valkeyv1.ValkeyCluster) {
	t.Helper()
	ctx := context.Background()
	replicas := 0
	eventually(t, time.Minute, "every replica link up", func() error {
		replicas = 0
		for _, name := range vc.Status.Nodes {
			var pod corev1.Pod
			if err := k8sClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, &pod); err != nil {
				return err
			}
			n, err := valkey.Dial(ctx, valkey.Target{Address: net.JoinHostPort(pod.Status.PodIP, "6379"), Dialer: local.Runtime.DialContext})
			if err != nil {
				return err
			}
			repl, err := n.InfoReplication(ctx)
			n.Close()
			if err != nil {
				return err
			}
			if repl.Role == valkey.RoleReplica {
				replicas++
				if repl.PrimaryLinkStatus != "up" {
					return fmt.Errorf("replica %s link %q", name, repl.PrimaryLinkStatus)
				}
			}
		}
		return nil
	})
	want := 0
	for _, sh := range vc.Status.ShardStatuses {
		want += len(sh.Replicas)
	}
	if replicas != want {
		t.Fatalf("%d nodes report being a replica, status lists %d", replicas, want)
	}
}
