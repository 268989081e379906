package e2e

import (
	"context"
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/valkey-io/valkey-go"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	valkeyv1 "github.com/gomomento/valkey-operator/api/v1alpha1"
	"github.com/gomomento/valkey-operator/internal/render"
	ivk "github.com/gomomento/valkey-operator/internal/valkey"
)

// The operator's and the replication user's passwords rotate on request
// with no moment when a node refuses the one in use: every node accepts
// the new passwords before anyone uses them, and the old ones until every
// node replicates with the new one. Afterwards the old passwords are
// refused everywhere, a replica whose link breaks comes back with the new
// one, a replacement replica syncs with it, and no acknowledged write of
// the load running throughout is lost.
func TestOperatorCredentialsRotate(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	key := newPlainCluster(t, "cred-rotate", "cache", 1, 1)
	c := clusterClient(t, seedOf(key), nil)
	before := writeKeys(t, c, "before", 500)
	waitReplicated(t, c)
	old, _ := authPasswords(t, key)
	load := startLoad(c, "load")

	requestRotation(t, key, "first")
	assertEvent(t, key, valkeyv1.ReasonCredentialsRotationStarted, render.OperatorUser)
	assertEvent(t, key, valkeyv1.ReasonCredentialsSwitched, "")
	waitRotated(t, key, "first", old)
	assertEvent(t, key, valkeyv1.ReasonCredentialsRotated, "")

	// The replica that never restarted reconnects with the new password.
	vc := getCluster(t, key)
	primary, replica := vc.Status.ShardStatuses[0].Primary, vc.Status.ShardStatuses[0].Replicas[0]
	pods := clusterPods(t, key)
	p := nodeAs(t, pods[primary])
	if err := p.Do(ctx, p.B().ClientKill().TypeReplica().Build()).Error(); err != nil {
		t.Fatalf("CLIENT KILL TYPE replica on %s: %v", primary, err)
	}
	r := nodeAs(t, pods[replica])
	eventually(t, time.Minute, replica+" linked to its primary again", func() error {
		text, err := r.Do(ctx, r.B().Info().Section("replication").Build()).ToString()
		if err != nil {
			return err
		}
		info, err := ivk.ParseReplicationInfo(text)
		if err != nil {
			return err
		}
		if !info.LinkUp() {
			return fmt.Errorf("link %s", info.PrimaryLinkStatus)
		}
		return nil
	})

	// A replacement replica syncs with the password its pod mounts.
	fail(t, key.Namespace, replica, podDeleted)
	waitReplaced(t, key, replica, 1, 1)

	acked := load.finishUndisturbed(t)
	checkAll(t, c, before)
	checkAll(t, c, acked)
}

// authPasswords reads the cluster's auth Secret and the passwords in it.
func authPasswords(t testing.TB, key client.ObjectKey) (render.Passwords, *corev1.Secret) {
	t.Helper()
	var s corev1.Secret
	if err := k8sClient.Get(context.Background(), client.ObjectKey{Namespace: key.Namespace, Name: render.OperatorAuthSecretName(key.Name)}, &s); err != nil {
		t.Fatal(err)
	}
	p, err := render.PasswordsFromSecret(&s)
	if err != nil {
		t.Fatal(err)
	}
	return p, &s
}

// requestRotation asks for a rotation of the cluster's credentials.
func requestRotation(t testing.TB, key client.ObjectKey, request string) {
	t.Helper()
	updateCluster(t, key, func(vc *valkeyv1.ValkeyCluster) {
		if vc.Annotations == nil {
			vc.Annotations = map[string]string{}
		}
		vc.Annotations[valkeyv1.AnnotationRotateCredentials] = request
	})
}

// waitRotated waits for the rotation asked for as request to be served and
// checks what the rotation page promises: new operator and replication
// passwords, the exporter's kept, primaryauth.conf naming the new one, and
// on every node the new passwords accepted and the old ones refused.
func waitRotated(t testing.TB, key client.ObjectKey, request string, old render.Passwords) {
	t.Helper()
	eventually(t, 2*time.Minute, "the rotation complete", func() error {
		p, s := authPasswords(t, key)
		if got := s.Annotations[valkeyv1.AnnotationCredentialsRotated]; got != request {
			return fmt.Errorf("rotated %q; next set %v, previous set %v", got, p.NextOperator != "", p.PreviousOperator != "")
		}
		return nil
	})
	cur, s := authPasswords(t, key)
	if cur.Operator == old.Operator || cur.Replication == old.Replication || cur.NextOperator != "" || cur.PreviousOperator != "" {
		t.Fatalf("after the rotation: operator changed %v, replication changed %v, next left %v, previous left %v",
			cur.Operator != old.Operator, cur.Replication != old.Replication, cur.NextOperator != "", cur.PreviousOperator != "")
	}
	if cur.Exporter != old.Exporter {
		t.Errorf("the exporter's password changed; it is not rotated")
	}
	if string(s.Data[render.KeyPrimaryAuth]) != render.PrimaryAuthConf(cur.Replication) {
		t.Errorf("%s does not carry the new replication password", render.KeyPrimaryAuth)
	}

	// The ACL reloader may still be loading the final file on a node, so
	// this is polled.
	eventually(t, time.Minute, "old passwords refused, new accepted on every node", func() error {
		for name, pod := range clusterPods(t, key) {
			addr := net.JoinHostPort(pod.Status.PodIP, fmt.Sprint(render.PortValkey))
			for _, u := range []struct{ user, now, before string }{
				{render.OperatorUser, cur.Operator, old.Operator},
				{render.ReplicationUser, cur.Replication, old.Replication},
			} {
				if err := pingAs(addr, u.user, u.now); err != nil {
					return fmt.Errorf("%s as %s with the new password: %w", name, u.user, err)
				}
				if err := pingAs(addr, u.user, u.before); err == nil || !strings.Contains(err.Error(), "WRONGPASS") {
					return fmt.Errorf("%s as %s with the old password: %v, want WRONGPASS", name, u.user, err)
				}
			}
		}
		return nil
	})
}

// pingAs authenticates to one node as user and sends PING.
func pingAs(addr, user, password string) error {
	n, err := nodeClient(addr, user, password)
	if err != nil {
		return err
	}
	defer n.Close()
	return n.Do(context.Background(), n.B().Ping().Build()).Error()
}

// nodeAs is a client of one pod as the default user, open in a cluster
// without ACL bindings.
func nodeAs(t testing.TB, pod *corev1.Pod) valkey.Client {
	t.Helper()
	n, err := nodeClient(net.JoinHostPort(pod.Status.PodIP, fmt.Sprint(render.PortValkey)), "", "")
	if err != nil {
		t.Fatalf("connecting to %s: %v", pod.Name, err)
	}
	t.Cleanup(n.Close)
	return n
}
