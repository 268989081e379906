package controller_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	valkeyv1 "github.com/gomomento/valkey-operator/api/v1alpha1"
	"github.com/gomomento/valkey-operator/internal/testcerts"
)

func menu(t *testing.T, suffix string) string {
	t.Helper()
	ctx := context.Background()
	img := &valkeyv1.ValkeyImage{ObjectMeta: metav1.ObjectMeta{Name: "valkey-" + suffix},
		Spec: valkeyv1.ValkeyImageSpec{Repository: "valkey/valkey", Tag: "8.0.1", Version: "8.0.1"}}
	cfg := &valkeyv1.ValkeyConfig{ObjectMeta: metav1.ObjectMeta{Name: "standard-" + suffix},
		Spec: valkeyv1.ValkeyConfigSpec{ImageRef: img.Name, Valkey: map[string]string{"maxmemory": "64mb"}}}
	for _, o := range []client.Object{img, cfg} {
		if err := k8sClient.Create(ctx, o); err != nil {
			t.Fatalf("creating %s: %v", o.GetName(), err)
		}
	}
	return cfg.Name
}

func getCluster(t *testing.T, ns, name string) *valkeyv1.ValkeyCluster {
	t.Helper()
	var vc valkeyv1.ValkeyCluster
	if err := k8sClient.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, &vc); err != nil {
		t.Fatalf("get cluster: %v", err)
	}
	return &vc
}

// Every TLS validation failure puts the cluster in Invalid with the exact
// message and takes no topology action; fixing the Secret resumes bootstrap
// with no edit to the ValkeyCluster.
func TestTLSValidationDrivesInvalidAndRecovery(t *testing.T) {
	ctx := context.Background()
	ns := namespace(t, "tls-validation")
	cfg := menu(t, "tlsv")
	vc := &valkeyv1.ValkeyCluster{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "my-cluster"},
		Spec: valkeyv1.ValkeyClusterSpec{ConfigRef: cfg, Shards: 1, ReplicasPerShard: 1,
			TLS: &valkeyv1.TLSSpec{SecretRef: "my-cluster-tls"}},
	}
	if err := k8sClient.Create(ctx, vc); err != nil {
		t.Fatal(err)
	}
	expectInvalid := func(t *testing.T, want string) {
		t.Helper()
		eventually(t, 20*time.Second, "state Invalid with "+want, func() error {
			got := getCluster(t, ns, vc.Name)
			if got.Status.State != valkeyv1.StateInvalid || got.Status.Message != want {
				return fmt.Errorf("state %q message %q", got.Status.State, got.Status.Message)
			}
			c := apimeta.FindStatusCondition(got.Status.Conditions, valkeyv1.CondTLSValid)
			if c == nil || c.Status != metav1.ConditionFalse || c.Message != want {
				return fmt.Errorf("TLSValid condition %+v", c)
			}
			return nil
		})
		var nodes valkeyv1.ValkeyNodeList
		if err := k8sClient.List(ctx, &nodes, client.InNamespace(ns)); err != nil {
			t.Fatal(err)
		}
		if len(nodes.Items) != 0 {
			t.Fatalf("a topology action happened while Invalid: %d ValkeyNodes exist", len(nodes.Items))
		}
	}

	expectInvalid(t, `TLS Secret "my-cluster-tls" not found in namespace "tls-validation"`)

	ca := testcerts.NewCA("valkey-ca")
	good := testcerts.Secret("my-cluster-tls", ns, testcerts.Leaf(ca, vc.Name, ns, "cluster.local"))

	empty := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "my-cluster-tls"}, Type: corev1.SecretTypeOpaque}
	if err := k8sClient.Create(ctx, empty); err != nil {
		t.Fatal(err)
	}
	expectInvalid(t, `TLS Secret "my-cluster-tls" has no data`)

	steps := []struct {
		mutate func(d map[string][]byte)
		want   string
	}{
		{func(d map[string][]byte) { delete(d, "ca.crt") }, `TLS Secret "my-cluster-tls" missing required key "ca.crt"`},
		{func(d map[string][]byte) { d["tls.crt"] = []byte("garbage") }, `TLS Secret "my-cluster-tls": tls.crt is not valid PEM`},
		{func(d map[string][]byte) {
			d["tls.crt"] = []byte("-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n")
		}, `TLS Secret "my-cluster-tls": tls.crt is not a valid X.509 certificate`},
		{func(d map[string][]byte) {
			wrong := testcerts.Leaf(ca, vc.Name, ns, "cluster.local", testcerts.WithDNSNames("my-cluster.my-app.svc.cluster.local"))
			d["tls.crt"], d["tls.key"] = wrong.CertPEM, wrong.KeyPEM
		}, `TLS cert in Secret "my-cluster-tls" missing SAN "my-cluster.tls-validation.svc.cluster.local"`},
	}
	for _, s := range steps {
		var sec corev1.Secret
		if err := k8sClient.Get(ctx, client.ObjectKeyFromObject(empty), &sec); err != nil {
			t.Fatal(err)
		}
		sec.Data = map[string][]byte{}
		for k, v := range good.Data {
			sec.Data[k] = v
		}
		s.mutate(sec.Data)
		if err := k8sClient.Update(ctx, &sec); err != nil {
			t.Fatal(err)
		}
		expectInvalid(t, s.want)
	}

	// The fix: the Secret becomes valid; the cluster leaves Invalid by itself
	// and bootstrap starts creating nodes.
	var sec corev1.Secret
	if err := k8sClient.Get(ctx, client.ObjectKeyFromObject(empty), &sec); err != nil {
		t.Fatal(err)
	}
	sec.Data = good.Data
	if err := k8sClient.Update(ctx, &sec); err != nil {
		t.Fatal(err)
	}
	eventually(t, 20*time.Second, "bootstrap to resume", func() error {
		got := getCluster(t, ns, vc.Name)
		if got.Status.State != valkeyv1.StateCreating || got.Status.Message != "" {
			return fmt.Errorf("state %q message %q", got.Status.State, got.Status.Message)
		}
		var nodes valkeyv1.ValkeyNodeList
		if err := k8sClient.List(ctx, &nodes, client.InNamespace(ns)); err != nil {
			return err
		}
		if len(nodes.Items) == 0 {
			return fmt.Errorf("no ValkeyNode yet")
		}
		return nil
	})

	// The pods mount the operator's copy, equal to the user's Secret.
	var copySecret corev1.Secret
	eventually(t, 10*time.Second, "node TLS copy", func() error {
		return k8sClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: "my-cluster-node-tls"}, &copySecret)
	})
	for _, k := range []string{"tls.crt", "tls.key", "ca.crt"} {
		if string(copySecret.Data[k]) != string(good.Data[k]) {
			t.Errorf("node TLS copy key %s differs from the user's Secret", k)
		}
	}
}

// No password is ever written to a ConfigMap.
func TestNoPasswordInConfigMaps(t *testing.T) {
	ctx := context.Background()
	ns := namespace(t, "no-passwords")
	cfg := menu(t, "nopw")
	vc := &valkeyv1.ValkeyCluster{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "plain"},
		Spec:       valkeyv1.ValkeyClusterSpec{ConfigRef: cfg, Shards: 2, ReplicasPerShard: 0},
	}
	if err := k8sClient.Create(ctx, vc); err != nil {
		t.Fatal(err)
	}
	var auth corev1.Secret
	eventually(t, 20*time.Second, "operator auth Secret", func() error {
		return k8sClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: "plain-operator-auth"}, &auth)
	})
	eventually(t, 20*time.Second, "a node ConfigMap", func() error {
		var cms corev1.ConfigMapList
		if err := k8sClient.List(ctx, &cms, client.InNamespace(ns), client.MatchingLabels{valkeyv1.LabelInstance: "plain"}); err != nil {
			return err
		}
		if len(cms.Items) == 0 {
			return fmt.Errorf("no ConfigMap yet")
		}
		for _, cm := range cms.Items {
			for k, v := range cm.Data {
				for _, pw := range []string{"operator-password", "repl-password"} {
					if strings.Contains(v, string(auth.Data[pw])) {
						t.Fatalf("ConfigMap %s key %s contains the %s", cm.Name, k, pw)
					}
				}
				if !strings.Contains(v, "include /etc/valkey/auth/primaryauth.conf") {
					t.Fatalf("ConfigMap %s key %s does not include the primaryauth file", cm.Name, k)
				}
			}
		}
		return nil
	})
	eventually(t, 20*time.Second, "Creating with the default user reported open", func() error {
		got := getCluster(t, ns, vc.Name)
		if got.Status.State != valkeyv1.StateCreating {
			return fmt.Errorf("state %q, want Creating while pods cannot run", got.Status.State)
		}
		c := apimeta.FindStatusCondition(got.Status.Conditions, valkeyv1.CondDefaultUserOpen)
		if c == nil || c.Status != metav1.ConditionTrue {
			return fmt.Errorf("DefaultUserOpen condition = %+v, want True with no bindings", c)
		}
		return nil
	})
}

// gaugeValue reads one series from the operator's metrics registry.
func gaugeValue(t *testing.T, name string, labels map[string]string) (float64, bool) {
	t.Helper()
	families, err := metrics.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
	series:
		for _, m := range f.GetMetric() {
			got := map[string]string{}
			for _, l := range m.GetLabel() {
				got[l.GetName()] = l.GetValue()
			}
			for k, v := range labels {
				if got[k] != v {
					continue series
				}
			}
			return m.GetGauge().GetValue(), true
		}
	}
	return 0, false
}

// The state of every cluster is a metric.
func TestClusterStateMetric(t *testing.T) {
	ctx := context.Background()
	ns := namespace(t, "metrics")
	vc := &valkeyv1.ValkeyCluster{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "measured"},
		Spec:       valkeyv1.ValkeyClusterSpec{ConfigRef: "missing-config", Shards: 1, ReplicasPerShard: 0},
	}
	if err := k8sClient.Create(ctx, vc); err != nil {
		t.Fatal(err)
	}
	// The gauge is set as the reconcile ends, just before its status is
	// written; both are polled.
	eventually(t, 20*time.Second, "state metric and ReferencesResolved", func() error {
		v, ok := gaugeValue(t, "valkey_cluster_state", map[string]string{"namespace": ns, "cluster": "measured", "state": "Creating"})
		if !ok || v != 1 {
			return fmt.Errorf("valkey_cluster_state{state=Creating} = %v (present %v)", v, ok)
		}
		// A missing config is a condition with the documented message, not a log line only.
		got := getCluster(t, ns, vc.Name)
		c := apimeta.FindStatusCondition(got.Status.Conditions, valkeyv1.CondReferencesResolved)
		if c == nil || c.Status != metav1.ConditionFalse || c.Message != `ValkeyConfig "missing-config" not found` {
			return fmt.Errorf("ReferencesResolved = %+v", c)
		}
		return nil
	})
}
