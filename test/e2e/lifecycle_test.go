package e2e

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	valkeyv1 "github.com/gomomento/valkey-operator/api/v1alpha1"
	"github.com/gomomento/valkey-operator/internal/playground"
	"github.com/gomomento/valkey-operator/internal/testbin"
	"github.com/gomomento/valkey-operator/internal/testcerts"
)

// A plaintext cluster forms, serves every slot, keeps data, and is removed
// whole when deleted.
func TestPlaintextClusterLifecycle(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	createNamespace(t, "plain")
	cfg := createMenu(t, "plain")
	vc := &valkeyv1.ValkeyCluster{
		ObjectMeta: metav1.ObjectMeta{Namespace: "plain", Name: "cache"},
		Spec:       valkeyv1.ValkeyClusterSpec{ConfigRef: cfg, Shards: 3, ReplicasPerShard: 1},
	}
	if err := k8sClient.Create(ctx, vc); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	got := waitActive(t, client.ObjectKeyFromObject(vc), 3, 1, 3*time.Minute)
	t.Logf("3x1 plaintext cluster Active after %s", time.Since(start).Round(time.Millisecond))

	seed := "cache.plain.svc.cluster.local:6379"
	c := clusterClient(t, seed, nil)
	data := writeKeys(t, c, "plain", 1000)
	checkKeys(t, c, data)

	// Every pod is a real valkey-server with its own address.
	seen := map[string]bool{}
	for _, name := range got.Status.Nodes {
		var pod corev1.Pod
		if err := k8sClient.Get(ctx, client.ObjectKey{Namespace: "plain", Name: name}, &pod); err != nil {
			t.Fatalf("pod of node %s: %v", name, err)
		}
		if pod.Status.PodIP == "" || seen[pod.Status.PodIP] {
			t.Fatalf("pod %s has no or a duplicate address %q", name, pod.Status.PodIP)
		}
		seen[pod.Status.PodIP] = true
	}

	assertPodAnnotationsInPlace(t, client.ObjectKeyFromObject(vc), got.Status.Nodes)

	deleteCluster(t, client.ObjectKeyFromObject(vc))
}

// The TLS page's example cluster, installed from config/samples as the demo
// does, becomes Active TLS-only: clients verify every node against the CA by
// name, plaintext is refused, and the demo's printed command works.
func TestSeedTLSClusterLifecycle(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	root, err := testbin.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	sample, err := playground.Install(ctx, k8sClient, filepath.Join(root, "config", "samples"), t.TempDir(), "cluster.local")
	if err != nil {
		t.Fatalf("installing the samples: %v", err)
	}
	key := client.ObjectKey{Namespace: playground.Namespace, Name: playground.Cluster}
	waitActive(t, key, 3, 1, 3*time.Minute)
	t.Logf("3x1 TLS cluster Active after %s", time.Since(start).Round(time.Millisecond))
	caPEM, err := os.ReadFile(sample.CAFile)
	if err != nil {
		t.Fatal(err)
	}
	ca := struct{ CertPEM []byte }{caPEM}

	service := "my-cluster.my-app.svc.cluster.local"
	c := clusterClient(t, service+":6379", ca.CertPEM)
	data := writeKeys(t, c, "tls", 10000)
	checkKeys(t, c, data)
	assertKeysOnEveryShard(t, c, 3)
	assertHostnamesAnnounced(t, c, "my-cluster.my-app.svc.cluster.local")

	// A client that verifies against another CA cannot even start.
	if _, err := newClusterClient(service+":6379", testcerts.NewCA("another-ca").CertPEM); err == nil {
		t.Fatalf("a client trusting another CA connected")
	}

	// Plaintext is refused on every node: the plaintext port is closed.
	addrs, err := local.Runtime.LookupHost(service)
	if err != nil || len(addrs) != 6 {
		t.Fatalf("service resolves to %v, %v; want 6 pods", addrs, err)
	}
	for _, a := range addrs {
		conn, err := local.Runtime.DialContext(ctx, "tcp", a+":6379")
		if err != nil {
			t.Fatalf("dial %s: %v", a, err)
		}
		_ = conn.SetDeadline(time.Now().Add(3 * time.Second))
		_, _ = conn.Write([]byte("PING\r\n"))
		buf := make([]byte, 16)
		n, _ := conn.Read(buf)
		conn.Close()
		if strings.Contains(string(buf[:n]), "PONG") {
			t.Fatalf("node %s answered a plaintext PING", a)
		}
	}

	if os.Geteuid() == 0 {
		out, err := exec.Command("sh", "-c", sample.Command()).CombinedOutput()
		if err != nil || strings.TrimSpace(string(out)) != "PONG" {
			t.Fatalf("the demo's command %q printed %q, %v; want PONG", sample.Command(), out, err)
		}
		seedCommands(t, service, ca.CertPEM)
	}
}

// seedCommands runs the TLS page's verification commands verbatim.
func seedCommands(t testing.TB, service string, caPEM []byte) {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "ca.crt"), caPEM, 0o644); err != nil {
		t.Fatal(err)
	}
	other := testcerts.NewCA("another-ca")
	if err := os.WriteFile(filepath.Join(dir, "other.crt"), other.CertPEM, 0o644); err != nil {
		t.Fatal(err)
	}
	run := func(args ...string) (string, error) {
		ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
		defer cancel()
		cmd := exec.CommandContext(ctx, "valkey-cli", args...)
		cmd.Dir = dir
		out, err := cmd.CombinedOutput()
		return strings.TrimSpace(string(out)), err
	}
	if out, err := run("-h", service, "--tls", "--cacert", "ca.crt", "-p", "6379", "PING"); err != nil || out != "PONG" {
		t.Fatalf("valkey-cli --tls --cacert ca.crt PING = %q, %v; want PONG", out, err)
	}
	if out, _ := run("-h", service, "-p", "6379", "PING"); out == "PONG" {
		t.Fatalf("plaintext PING succeeded")
	}
	if out, _ := run("-h", service, "--tls", "-p", "6379", "PING"); out == "PONG" {
		t.Fatalf("TLS PING without --cacert succeeded: verification is off")
	}
	if out, _ := run("-h", service, "--tls", "--cacert", "other.crt", "-p", "6379", "PING"); out == "PONG" {
		t.Fatalf("TLS PING against a different CA succeeded")
	}
}

// podAnnotations edits reach running pods in place and additively: same
// pods, and an annotation another controller set is kept.
func assertPodAnnotationsInPlace(t testing.TB, key client.ObjectKey, nodes []string) {
	t.Helper()
	ctx := context.Background()
	uids := map[string]string{}
	for _, name := range nodes {
		var pod corev1.Pod
		if err := k8sClient.Get(ctx, client.ObjectKey{Namespace: key.Namespace, Name: name}, &pod); err != nil {
			t.Fatal(err)
		}
		uids[name] = string(pod.UID)
	}
	var first corev1.Pod
	if err := k8sClient.Get(ctx, client.ObjectKey{Namespace: key.Namespace, Name: nodes[0]}, &first); err != nil {
		t.Fatal(err)
	}
	patch := client.MergeFrom(first.DeepCopy())
	if first.Annotations == nil {
		first.Annotations = map[string]string{}
	}
	first.Annotations["other-controller/owned"] = "yes"
	if err := k8sClient.Patch(ctx, &first, patch); err != nil {
		t.Fatal(err)
	}
	vc := getCluster(t, key)
	vc.Spec.PodAnnotations = map[string]string{"example.com/team": "cache"}
	if err := k8sClient.Update(ctx, vc); err != nil {
		t.Fatal(err)
	}
	eventually(t, time.Minute, "podAnnotations on every running pod", func() error {
		for _, name := range nodes {
			var pod corev1.Pod
			if err := k8sClient.Get(ctx, client.ObjectKey{Namespace: key.Namespace, Name: name}, &pod); err != nil {
				return err
			}
			if string(pod.UID) != uids[name] {
				t.Fatalf("pod %s was replaced for an annotation change", name)
			}
			if pod.Annotations["example.com/team"] != "cache" {
				return errorf("pod %s annotations %v", name, pod.Annotations)
			}
			if name == nodes[0] && pod.Annotations["other-controller/owned"] != "yes" {
				t.Fatalf("another controller's annotation was removed from %s", name)
			}
		}
		return nil
	})
}
