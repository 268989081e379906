package e2e

import (
	"context"
	"fmt"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	valkeyv1 "github.com/gomomento/valkey-operator/api/v1alpha1"
	"github.com/gomomento/valkey-operator/internal/controller"
	"github.com/gomomento/valkey-operator/internal/render"
	"github.com/gomomento/valkey-operator/internal/testcerts"
	"github.com/gomomento/valkey-operator/internal/tlssecret"
	"github.com/gomomento/valkey-operator/internal/valkey"
)

// served reads the leaf each node presents to a new connection, verified
// against caPEM with the pod's name, as a client would.
func (f *tlsFixture) served(caPEM []byte) (map[string]string, error) {
	out := map[string]string{}
	for _, p := range f.pods() {
		if p.Status.PodIP == "" {
			return nil, fmt.Errorf("pod %s has no address", p.Name)
		}
		chain, err := valkey.ServedCertificate(context.Background(), valkey.Target{
			Address: net.JoinHostPort(p.Status.PodIP, "6379"),
			TLS:     &valkey.TLS{CA: caPEM, ServerName: render.PodFQDN(p.Name, f.name, f.ns, clusterDomain)},
			Dialer:  local.Runtime.DialContext,
		})
		if err != nil {
			return nil, fmt.Errorf("node %s: %w", p.Name, err)
		}
		out[p.Name] = tlssecret.Fingerprint(chain[0].Raw)
	}
	return out, nil
}

// waitServing waits until every node serves the leaf and returns when
// that was first seen.
func (f *tlsFixture) waitServing(caPEM []byte, leaf *testcerts.LeafCert, timeout time.Duration) time.Time {
	f.t.Helper()
	want := tlssecret.Fingerprint(leaf.Cert.Raw)
	var at time.Time
	eventually(f.t, timeout, "every node to serve certificate "+want[:16], func() error {
		got, err := f.served(caPEM)
		if err != nil {
			return err
		}
		for node, fp := range got {
			if fp != want {
				return fmt.Errorf("node %s serves %s", node, fp[:16])
			}
		}
		at = time.Now()
		return nil
	})
	return at
}

func (f *tlsFixture) updateSecret(mutate func(s *corev1.Secret)) {
	f.t.Helper()
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		var s corev1.Secret
		if err := k8sClient.Get(context.Background(), client.ObjectKey{Namespace: f.ns, Name: f.secret}, &s); err != nil {
			return err
		}
		mutate(&s)
		return k8sClient.Update(context.Background(), &s)
	})
	if err != nil {
		f.t.Fatalf("updating Secret %s: %v", f.secret, err)
	}
}

func (f *tlsFixture) rotate(leaf *testcerts.LeafCert, caPEM []byte) {
	f.t.Helper()
	f.updateSecret(func(s *corev1.Secret) {
		s.Data[tlssecret.KeyCert] = leaf.CertPEM
		s.Data[tlssecret.KeyPrivateKey] = leaf.KeyPEM
		s.Data[tlssecret.KeyCA] = caPEM
	})
}

// watchCondition records every distinct value one condition takes, so a
// state that lasts a moment is seen.
func (f *tlsFixture) watchCondition(typ string) func() []metav1.Condition {
	f.t.Helper()
	scheme, err := controller.NewScheme()
	if err != nil {
		f.t.Fatal(err)
	}
	wc, err := client.NewWithWatch(local.ControlPlane.Config, client.Options{Scheme: scheme})
	if err != nil {
		f.t.Fatal(err)
	}
	w, err := wc.Watch(context.Background(), &valkeyv1.ValkeyClusterList{}, client.InNamespace(f.ns))
	if err != nil {
		f.t.Fatal(err)
	}
	var mu sync.Mutex
	var seen []metav1.Condition
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ev := range w.ResultChan() {
			vc, ok := ev.Object.(*valkeyv1.ValkeyCluster)
			if !ok || vc.Name != f.name {
				continue
			}
			if c := meta.FindStatusCondition(vc.Status.Conditions, typ); c != nil {
				mu.Lock()
				if n := len(seen); n == 0 || seen[n-1].Status != c.Status || seen[n-1].Reason != c.Reason || seen[n-1].Message != c.Message {
					seen = append(seen, *c)
				}
				mu.Unlock()
			}
		}
	}()
	return func() []metav1.Condition {
		w.Stop()
		<-done
		mu.Lock()
		defer mu.Unlock()
		return seen
	}
}

// replicationCounters returns, from the shard's primary, how many times a
// replica has synchronised: a replication link that drops and comes back
// raises one of them.
func (f *tlsFixture) replicationCounters(caPEM []byte) (syncs string, replicaLink string) {
	f.t.Helper()
	ctx := context.Background()
	for _, p := range f.pods() {
		n, err := valkey.Dial(ctx, valkey.Target{
			Address: net.JoinHostPort(p.Status.PodIP, "6379"),
			TLS:     &valkey.TLS{CA: caPEM, ServerName: render.PodFQDN(p.Name, f.name, f.ns, clusterDomain)},
			Dialer:  local.Runtime.DialContext,
		})
		if err != nil {
			f.t.Fatalf("connecting to %s: %v", p.Name, err)
		}
		info, err := n.Info(ctx, "replication", "stats")
		n.Close()
		if err != nil {
			f.t.Fatalf("INFO on %s: %v", p.Name, err)
		}
		switch info["replication"]["role"] {
		case valkey.RolePrimary:
			syncs = info["stats"]["sync_full"] + "/" + info["stats"]["sync_partial_ok"]
		case valkey.RoleReplica:
			replicaLink = info["replication"]["master_link_status"]
		}
	}
	return syncs, replicaLink
}

func (f *tlsFixture) reloads(result string) float64 {
	v, _ := metricValue("valkey_tls_reloads_total", map[string]string{"namespace": f.ns, "cluster": f.name, "result": result})
	return v
}

// The TLS page: updating the Secret in place reaches every node with no
// restart, and established connections are not affected.
func TestTLSLeafRotationInPlace(t *testing.T) {
	t.Parallel()
	ca := testcerts.NewCA("rotation-leaf-ca")
	f := newTLSCluster(t, "tls-rotate-leaf", ca, 1, 1)
	c := clusterClient(t, f.service(), ca.CertPEM)
	data := writeKeys(t, c, "leaf", 200)
	f.waitServing(ca.CertPEM, f.leaf, 10*time.Second)
	before := f.podSnapshot()
	states := f.watchStates()
	load := startLoad(c, "leaf-traffic")

	next := testcerts.Leaf(ca, f.name, f.ns, clusterDomain)
	start := time.Now()
	f.rotate(next, ca.CertPEM)
	at := f.waitServing(ca.CertPEM, next, 2*time.Minute)
	t.Logf("Secret updated to every node serving the new certificate: %s (projection delay %s)",
		at.Sub(start).Round(time.Millisecond), projectionDelay)

	// A new connection is presented the new certificate, and still works.
	checkKeys(t, clusterClient(t, f.service(), ca.CertPEM), data)
	load.finishUndisturbed(t)
	f.assertPodsUntouched(before)
	checkKeys(t, c, data)
	if bad := states(); len(bad) > 0 {
		t.Fatalf("cluster left Active during the rotation: %v", bad)
	}

	f.waitCondition(valkeyv1.CondCertificatesServed, metav1.ConditionTrue, valkeyv1.ReasonServingCurrent,
		fmt.Sprintf("all 2 nodes serve the certificate in Secret %q", f.secret), 10*time.Second)
	f.waitEvent(corev1.EventTypeNormal, valkeyv1.ReasonRotationComplete, tlssecret.Fingerprint(next.Cert.Raw)[:16], 10*time.Second)
	if s := f.cluster().Status.TLS; s == nil || s.NodesServingCurrent != 2 || s.NodesTotal != 2 {
		t.Fatalf("status.tls = %+v, want 2 of 2 nodes serving", s)
	}
	notAfter, ok := metricValue("valkey_cluster_tls_certificate_not_after_seconds", map[string]string{"namespace": f.ns, "cluster": f.name})
	if !ok || int64(notAfter) != next.Cert.NotAfter.Unix() {
		t.Errorf("certificate notAfter metric = %v (%v), want %d", notAfter, ok, next.Cert.NotAfter.Unix())
	}
	if n := f.reloads("success"); n < 2 {
		t.Errorf("reloads metric = %v successes, want at least one per node", n)
	}
}

// The TLS page's CA rotation: old and new CA bundled while the new leaf
// spreads, then the new CA alone. No restart, no failed request, the
// cluster stays Active and the replication link is never re-established.
func TestTLSCARotationWithBundle(t *testing.T) {
	t.Parallel()
	oldCA, newCA := testcerts.NewCA("rotation-old-ca"), testcerts.NewCA("rotation-new-ca")
	f := newTLSCluster(t, "tls-rotate-ca", oldCA, 1, 1)
	both := testcerts.Bundle(oldCA, newCA)
	// Clients trust both CAs for the length of the rotation, as they must.
	c := clusterClient(t, f.service(), both)
	data := writeKeys(t, c, "ca", 200)
	syncsBefore, link := f.replicationCounters(oldCA.CertPEM)
	if link != "up" {
		t.Fatalf("replica link %q before the rotation", link)
	}
	before := f.podSnapshot()
	states := f.watchStates()
	load := startLoad(c, "ca-traffic")

	// Step 1: both CAs, the new leaf.
	next := testcerts.Leaf(newCA, f.name, f.ns, clusterDomain)
	start := time.Now()
	f.rotate(next, both)
	at := f.waitServing(both, next, 2*time.Minute)
	t.Logf("step 1 (bundle and new leaf) on every node after %s", at.Sub(start).Round(time.Millisecond))
	// Step 2: wait until the operator confirms every node.
	f.waitCondition(valkeyv1.CondCertificatesServed, metav1.ConditionTrue, valkeyv1.ReasonServingCurrent, "", time.Minute)

	// Step 3: the new CA alone. No handshake shows a node's CA bundle, so
	// that the nodes load it is seen in the reload count.
	reloaded := f.reloads("success")
	start = time.Now()
	f.rotate(next, newCA.CertPEM)
	eventually(t, time.Minute, "every node to reload the new CA bundle", func() error {
		if n := f.reloads("success"); n < reloaded+2 {
			return fmt.Errorf("%v reloads since step 3", n-reloaded)
		}
		c := meta.FindStatusCondition(f.cluster().Status.Conditions, valkeyv1.CondCertificatesServed)
		if c == nil || c.Status != metav1.ConditionTrue {
			return fmt.Errorf("CertificatesServed %v", c)
		}
		return nil
	})
	t.Logf("step 3 (new CA only) loaded by every node after %s", time.Since(start).Round(time.Millisecond))
	f.waitServing(newCA.CertPEM, next, 10*time.Second)

	load.finishUndisturbed(t)
	f.assertPodsUntouched(before)
	checkKeys(t, c, data)
	checkKeys(t, clusterClient(t, f.service(), newCA.CertPEM), data)
	if bad := states(); len(bad) > 0 {
		t.Fatalf("cluster left Active during the rotation: %v", bad)
	}
	syncsAfter, link := f.replicationCounters(newCA.CertPEM)
	if link != "up" || syncsAfter != syncsBefore {
		t.Fatalf("replication: link %q, full/partial syncs %s before and %s after; want the link up and never re-established",
			link, syncsBefore, syncsAfter)
	}
}

// Expiry is warn-only: the cluster stays Active, the condition and a
// Warning say so, and clients relying on the expired certificate fail.
func TestTLSCertificateExpiry(t *testing.T) {
	t.Parallel()
	ca := testcerts.NewCA("expiry-ca")
	f := newTLSCluster(t, "tls-expiry", ca, 1, 1)
	c := clusterClient(t, f.service(), ca.CertPEM)
	data := writeKeys(t, c, "expiry", 100)
	before := f.podSnapshot()
	states := f.watchStates()

	now := time.Now()
	expired := testcerts.Leaf(ca, f.name, f.ns, clusterDomain, testcerts.WithValidity(now.AddDate(0, 0, -30), now.Add(-time.Hour)))
	f.rotate(expired, ca.CertPEM)
	msg := tlssecret.ExpiredMessage(f.secret, expired.Cert.NotAfter)
	f.waitCondition(valkeyv1.CondCertificateExpiringSoon, metav1.ConditionTrue, tlssecret.ReasonCertificateExpiringSoon, msg, 30*time.Second)
	f.waitEvent(corev1.EventTypeWarning, tlssecret.ReasonCertificateExpired, msg, 10*time.Second)
	// The nodes serve it, so a client that verifies the certificate fails.
	eventually(t, time.Minute, "nodes to serve the expired certificate", func() error {
		_, err := f.served(ca.CertPEM)
		if err == nil || !strings.Contains(err.Error(), "expired") {
			return fmt.Errorf("served certificate check: %v", err)
		}
		return nil
	})
	if vc := f.cluster(); vc.Status.State != valkeyv1.StateActive {
		t.Fatalf("state %s (%s) with an expired certificate, want Active", vc.Status.State, vc.Status.Message)
	}
	// ... and it is still managed normally: the operator reaches every node.
	eventually(t, 30*time.Second, "the operator to manage the cluster with an expired certificate", func() error {
		vc := f.cluster()
		ready := apimeta.FindStatusCondition(vc.Status.Conditions, valkeyv1.CondReady)
		degraded := apimeta.FindStatusCondition(vc.Status.Conditions, valkeyv1.CondDegraded)
		progressing := apimeta.FindStatusCondition(vc.Status.Conditions, valkeyv1.CondProgressing)
		if ready == nil || ready.Status != metav1.ConditionTrue || degraded == nil || degraded.Status != metav1.ConditionFalse ||
			progressing == nil || progressing.Reason == valkeyv1.ReasonUnreachable {
			return fmt.Errorf("conditions %v", conditionSummary(vc))
		}
		return nil
	})

	soon := testcerts.Leaf(ca, f.name, f.ns, clusterDomain, testcerts.WithValidity(now.Add(-time.Hour), now.AddDate(0, 0, 10)))
	f.rotate(soon, ca.CertPEM)
	f.waitCondition(valkeyv1.CondCertificateExpiringSoon, metav1.ConditionTrue, tlssecret.ReasonCertificateExpiringSoon,
		tlssecret.ExpiringSoonMessage(f.secret, soon.Cert.NotAfter), 30*time.Second)
	// The operator reaches nodes serving an expired certificate to reload
	// them: a rotation is how expiry gets fixed.
	f.waitServing(ca.CertPEM, soon, 2*time.Minute)

	fresh := testcerts.Leaf(ca, f.name, f.ns, clusterDomain)
	f.rotate(fresh, ca.CertPEM)
	f.waitCondition(valkeyv1.CondCertificateExpiringSoon, metav1.ConditionFalse, valkeyv1.ReasonNotExpiring, "", 30*time.Second)
	f.waitServing(ca.CertPEM, fresh, 2*time.Minute)
	if bad := states(); len(bad) > 0 {
		t.Fatalf("cluster left Active: %v", bad)
	}
	f.assertPodsUntouched(before)
	checkKeys(t, clusterClient(t, f.service(), ca.CertPEM), data)
}
