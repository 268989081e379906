package realnode

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"math/big"
	"net"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/valkey-io/valkey-go"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	valkeyv1 "github.com/gomomento/valkey-operator/api/v1alpha1"
	"github.com/gomomento/valkey-operator/internal/controller"
	"github.com/gomomento/valkey-operator/internal/dnsname"
	"github.com/gomomento/valkey-operator/internal/testcerts"
	vk "github.com/gomomento/valkey-operator/internal/valkey"
)

// clusterDomain is the domain the operator names Services and pods under,
// which the node's kubelet has too.
var clusterDomain = controller.DefaultOptions().ClusterDomain

// tlsCluster is a TLS cluster on the real node and the client pod the
// tests run the TLS page's commands from.
type tlsCluster struct {
	t      testing.TB
	key    client.ObjectKey
	secret string
	ca     *testcerts.CA
	leaf   *testcerts.LeafCert
	// client is the client pod's name.
	client string
}

// newTLSCluster creates, in a namespace enforcing the restricted Pod
// Security Standard, the Secret of the TLS page (a leaf signed by a new CA
// with exactly the two SANs the page lists), a cluster of the given shape
// serving it, waits until it is Active with every pod healthy and every
// node serving the Secret's certificate, and starts a client pod.
func newTLSCluster(t testing.TB, ns, name string, shards, replicas int) *tlsCluster {
	t.Helper()
	ctx := context.Background()
	createRestrictedNamespace(t, ns)
	f := &tlsCluster{t: t, key: client.ObjectKey{Namespace: ns, Name: name}, secret: name + "-tls", ca: testcerts.NewCA(ns + "-valkey-ca")}
	f.leaf = testcerts.Leaf(f.ca, name, ns, clusterDomain)
	want := []string{name + "." + ns + ".svc.cluster.local", "*." + name + "." + ns + ".svc.cluster.local"}
	if !slices.Equal(f.leaf.Cert.DNSNames, want) {
		t.Fatalf("leaf SANs %q, the TLS page requires exactly %q", f.leaf.Cert.DNSNames, want)
	}
	if err := k8sClient.Create(ctx, testcerts.Secret(f.secret, ns, f.leaf)); err != nil {
		t.Fatal(err)
	}
	vc := &valkeyv1.ValkeyCluster{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: valkeyv1.ValkeyClusterSpec{ConfigRef: createMenu(t, ns, false), Shards: int32(shards), ReplicasPerShard: int32(replicas),
			TLS: &valkeyv1.TLSSpec{SecretRef: f.secret}}}
	if err := k8sClient.Create(ctx, vc); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			logState(t, f.key)
		}
		_ = k8sClient.Delete(context.Background(), vc)
		_ = k8sClient.Delete(context.Background(), &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: f.client}})
		waitPodsGone(t, ns)
	})
	t0 := time.Now()
	waitConvergedVia(t, f.key, shards, replicas, 5*time.Minute, f.dial)
	t.Logf("%dx%d TLS cluster created → Active in %v", shards, replicas, time.Since(t0).Round(100*time.Millisecond))
	waitPodsHealthy(t, f.key, shards*(1+replicas), 30*time.Second)
	waitHealthyConditions(t, f.key, time.Minute)
	f.waitCertificatesServed(time.Minute)
	f.client = f.startClientPod("client")
	return f
}

// dial connects to a node at its pod IP over TLS, verifying the pod's own
// name as the operator does.
func (f *tlsCluster) dial(name string) (*vk.Node, error) {
	var pod corev1.Pod
	if err := k8sClient.Get(context.Background(), client.ObjectKey{Namespace: f.key.Namespace, Name: name}, &pod); err != nil {
		return nil, err
	}
	if pod.Status.PodIP == "" {
		return nil, fmt.Errorf("pod %s has no address", name)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	return vk.Dial(ctx, vk.Target{Address: net.JoinHostPort(pod.Status.PodIP, "6379"),
		TLS: &vk.TLS{CA: f.ca.CertPEM, ServerName: dnsname.Pod(name, f.key.Name, f.key.Namespace, clusterDomain)}})
}

// service is the Service's DNS name, as the TLS page spells it.
func (f *tlsCluster) service() string {
	return dnsname.Service(f.key.Name, f.key.Namespace, clusterDomain)
}

// podNames are the names the nodes announce and their certificate's
// wildcard covers, by pod.
func (f *tlsCluster) podNames() map[string]string {
	out := map[string]string{}
	for _, p := range clusterPods(f.t, f.key) {
		out[p.Name] = dnsname.Pod(p.Name, f.key.Name, f.key.Namespace, clusterDomain)
	}
	return out
}

func (f *tlsCluster) waitCertificatesServed(timeout time.Duration) {
	f.t.Helper()
	eventually(f.t, timeout, "CertificatesServed True", func() error {
		c := meta.FindStatusCondition(getCluster(f.t, f.key).Status.Conditions, valkeyv1.CondCertificatesServed)
		if c == nil || c.Status != metav1.ConditionTrue || c.Reason != valkeyv1.ReasonServingCurrent {
			return fmt.Errorf("CertificatesServed %+v", c)
		}
		return nil
	})
}

// clientDir is where the client pod has the CA as ca.crt, its working
// directory, so the page's --cacert ca.crt works as written.
const clientDir = "/certs"

// startClientPod starts a pod of the client image that meets the
// restricted standard, with only ca.crt of the cluster's Secret, and waits
// until it runs.
func (f *tlsCluster) startClientPod(name string) string {
	f.t.Helper()
	image, pull := clientImage()
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: f.key.Namespace, Name: name},
		Spec: corev1.PodSpec{
			SecurityContext: &corev1.PodSecurityContext{
				RunAsNonRoot:   ptr.To(true),
				SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
			},
			Containers: []corev1.Container{{
				Name:            "client",
				Image:           image,
				ImagePullPolicy: pull,
				WorkingDir:      clientDir,
				SecurityContext: &corev1.SecurityContext{
					AllowPrivilegeEscalation: ptr.To(false),
					ReadOnlyRootFilesystem:   ptr.To(true),
					Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
				},
				VolumeMounts: []corev1.VolumeMount{{Name: "ca", MountPath: clientDir, ReadOnly: true}},
			}},
			Volumes: []corev1.Volume{{Name: "ca", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{
				SecretName: f.secret, Items: []corev1.KeyToPath{{Key: "ca.crt", Path: "ca.crt"}}}}}},
			// sleep, as PID 1, ignores SIGTERM.
			TerminationGracePeriodSeconds: ptr.To[int64](1),
		},
	}
	if err := k8sClient.Create(context.Background(), pod); err != nil {
		f.t.Fatalf("creating client pod %s: %v", name, err)
	}
	eventually(f.t, 2*time.Minute, "client pod "+name+" running", func() error {
		var p corev1.Pod
		if err := k8sClient.Get(context.Background(), client.ObjectKeyFromObject(pod), &p); err != nil {
			return err
		}
		if p.Status.Phase != corev1.PodRunning {
			return fmt.Errorf("client pod %s", p.Status.Phase)
		}
		return nil
	})
	return name
}

// run runs a shell command line in the client pod.
func (f *tlsCluster) run(cmdline string) execResult {
	f.t.Helper()
	return podExec(f.t, f.key.Namespace, f.client, "client", "sh", "-c", cmdline)
}

// servedCert is what the TLS page's openssl check shows of the certificate
// a node serves.
type servedCert struct {
	serial   *big.Int
	notAfter string
	subject  string
}

// opensslTime is how openssl x509 -enddate prints a time.
func opensslTime(t time.Time) string { return t.UTC().Format("Jan _2 15:04:05 2006 GMT") }

// parseX509Out reads openssl x509 -noout -serial -enddate -subject.
func parseX509Out(out string) (servedCert, error) {
	var c servedCert
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		k, v, ok := strings.Cut(line, "=")
		if !ok {
			continue
		}
		switch k {
		case "serial":
			n, ok := new(big.Int).SetString(v, 16)
			if !ok {
				return c, fmt.Errorf("serial %q", v)
			}
			c.serial = n
		case "notAfter":
			c.notAfter = v
		case "subject":
			c.subject = strings.TrimSpace(v)
		}
	}
	if c.notAfter == "" {
		return c, fmt.Errorf("no notAfter in %q", out)
	}
	return c, nil
}

// servedByEveryNode asks each node, by its own name from the client pod,
// which certificate it serves, verified against ca.crt with that name.
func (f *tlsCluster) servedByEveryNode() (map[string]servedCert, error) {
	names := f.podNames()
	var script strings.Builder
	for pod, host := range names {
		fmt.Fprintf(&script, "echo pod=%s; openssl s_client -connect %s:6379 -servername %s -verify_hostname %s -CAfile ca.crt -verify_return_error </dev/null 2>/dev/null | openssl x509 -noout -serial -enddate || echo failed=1; ",
			pod, host, host, host)
	}
	r := f.run(script.String())
	out := map[string]servedCert{}
	for _, block := range strings.Split(r.stdout, "pod=")[1:] {
		pod, rest, _ := strings.Cut(block, "\n")
		if strings.Contains(rest, "failed=1") {
			return nil, fmt.Errorf("node %s: no verified certificate (%s)", pod, r)
		}
		c, err := parseX509Out(rest)
		if err != nil {
			return nil, fmt.Errorf("node %s: %w", pod, err)
		}
		out[pod] = c
	}
	if len(out) != len(names) {
		return nil, fmt.Errorf("%d of %d nodes answered: %s", len(out), len(names), r)
	}
	return out, nil
}

// waitServing waits until every node serves leaf and returns how long
// that took.
func (f *tlsCluster) waitServing(leaf *testcerts.LeafCert, timeout time.Duration) time.Duration {
	f.t.Helper()
	start := time.Now()
	eventually(f.t, timeout, fmt.Sprintf("every node serving serial %X", leaf.Cert.SerialNumber), func() error {
		served, err := f.servedByEveryNode()
		if err != nil {
			return err
		}
		for pod, c := range served {
			if c.serial.Cmp(leaf.Cert.SerialNumber) != 0 || c.notAfter != opensslTime(leaf.Cert.NotAfter) {
				return fmt.Errorf("node %s serves serial %X until %s", pod, c.serial, c.notAfter)
			}
		}
		return nil
	})
	return time.Since(start)
}

// clusterClient is a cluster-aware client of the test process, over TLS,
// that follows the names the nodes announce: this machine's resolver does
// not know the cluster's names, so they are looked up at the cluster's
// DNS, as a pod's resolver does, and verified against the certificate.
func (f *tlsCluster) clusterClient() valkey.Client {
	f.t.Helper()
	resolver := clusterResolver(f.t)
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(f.ca.CertPEM)
	names := f.podNames()
	var seed string
	for _, host := range names {
		seed = net.JoinHostPort(host, "6379")
		break
	}
	c, err := valkey.NewClient(valkey.ClientOption{
		InitAddress:  []string{seed},
		DisableCache: true,
		// valkey-go takes the nodes' TLS ports from the topology only when
		// told the connections are TLS; DialCtxFn does the handshake.
		TLSConfig: &tls.Config{MinVersion: tls.VersionTLS12},
		DialCtxFn: func(ctx context.Context, dst string, d *net.Dialer, _ *tls.Config) (net.Conn, error) {
			host, port, err := net.SplitHostPort(dst)
			if err != nil {
				return nil, err
			}
			addrs, err := resolver.LookupHost(ctx, host)
			if err != nil {
				return nil, err
			}
			conn, err := d.DialContext(ctx, "tcp", net.JoinHostPort(addrs[0], port))
			if err != nil {
				return nil, err
			}
			tc := tls.Client(conn, &tls.Config{RootCAs: pool, ServerName: host, MinVersion: tls.VersionTLS12})
			if err := tc.HandshakeContext(ctx); err != nil {
				conn.Close()
				return nil, err
			}
			return tc, nil
		},
	})
	if err != nil {
		f.t.Fatalf("connecting a cluster client to %s: %v", seed, err)
	}
	f.t.Cleanup(c.Close)
	return c
}

// TestTLSWalkthrough follows the TLS page as a product team would, in a
// namespace enforcing the restricted Pod Security Standard: the
// kubernetes.io/tls Secret with the two SANs, the page's ValkeyCluster
// (my-cluster in my-app, 3 shards of 1 replica), Active; then, from a
// client pod, the page's valkey-cli PING against the Service's name
// (PONG), both failure directions (plaintext refused, no CA refused), the
// page's openssl check of the served certificate, hostname verification
// that holds for the right name and fails for a wrong one, and every
// node's own name verified.
func TestTLSWalkthrough(t *testing.T) {
	f := newTLSCluster(t, "my-app", "my-cluster", 3, 1)
	svc := f.service()
	if svc != "my-cluster.my-app.svc.cluster.local" {
		t.Fatalf("Service name %q, the page says my-cluster.my-app.svc.cluster.local", svc)
	}

	r := f.run("valkey-cli -h my-cluster.my-app.svc.cluster.local --tls --cacert ca.crt -p 6379 PING")
	if r.code != 0 || strings.TrimSpace(r.stdout) != "PONG" {
		t.Errorf("the page's PING: %s, want PONG", r)
	}
	// 1. Plaintext is refused: the plaintext listener is closed.
	r = f.run("valkey-cli -h my-cluster.my-app.svc.cluster.local -p 6379 PING")
	if r.code == 0 || strings.Contains(r.stdout, "PONG") {
		t.Errorf("PING without --tls: %s, want an error", r)
	}
	// 2. Verification is against the right CA: the system trust store,
	// which is what a client given no --cacert uses, does not do.
	r = f.run("valkey-cli -h my-cluster.my-app.svc.cluster.local --tls -p 6379 PING")
	if r.code == 0 || strings.Contains(r.stdout, "PONG") || !strings.Contains(r.stdout+r.stderr, "certificate verify failed") {
		t.Errorf("PING with --tls and no --cacert: %s, want a certificate verification error", r)
	}

	// The page's check of the certificate the nodes serve.
	r = f.run(`openssl s_client -connect my-cluster.my-app.svc.cluster.local:6379 \
  -servername my-cluster.my-app.svc.cluster.local -CAfile ca.crt </dev/null 2>/dev/null \
  | openssl x509 -noout -enddate -subject`)
	c, err := parseX509Out(r.stdout)
	if err != nil || r.code != 0 {
		t.Fatalf("the page's openssl check: %s (%v)", r, err)
	}
	if c.notAfter != opensslTime(f.leaf.Cert.NotAfter) || c.subject != "CN = my-cluster.my-app" {
		t.Errorf("served notAfter=%s subject=%s, the Secret's leaf has notAfter=%s subject=CN = %s",
			c.notAfter, c.subject, opensslTime(f.leaf.Cert.NotAfter), f.leaf.Cert.Subject.CommonName)
	}
	// Hostname verification: the Service's name verifies, another name in
	// the namespace does not.
	verify := func(name string) execResult {
		return f.run(fmt.Sprintf("openssl s_client -connect %s:6379 -servername %s -verify_hostname %s -CAfile ca.crt -verify_return_error </dev/null 2>&1", svc, svc, name))
	}
	if r := verify(svc); r.code != 0 || !strings.Contains(r.stdout, "Verification: OK") || !strings.Contains(r.stdout, "Verified peername: "+svc) {
		t.Errorf("verifying %s: %s", svc, r)
	}
	wrong := "other-cluster.my-app.svc.cluster.local"
	if r := verify(wrong); r.code == 0 || !strings.Contains(r.stdout, "hostname mismatch") {
		t.Errorf("verifying %s against my-cluster's certificate: %s, want a hostname mismatch", wrong, r)
	}

	// Each node, by the name it announces, serves the Secret's leaf
	// verified with that name.
	served, err := f.servedByEveryNode()
	if err != nil {
		t.Fatal(err)
	}
	for pod, c := range served {
		if c.serial.Cmp(f.leaf.Cert.SerialNumber) != 0 {
			t.Errorf("node %s serves serial %X, the Secret's leaf is %X", pod, c.serial, f.leaf.Cert.SerialNumber)
		}
	}
	// A cluster-mode client from the pod follows redirects to the names
	// the nodes announce: every shard takes a write through the Service.
	for _, k := range []string{"a", "b", "c", "d", "e", "f"} {
		r := f.run(fmt.Sprintf("valkey-cli -c -h %s --tls --cacert ca.crt -p 6379 SET %s v-%s && valkey-cli -c -h %s --tls --cacert ca.crt -p 6379 GET %s", svc, k, k, svc, k))
		if r.code != 0 || r.stdout != "OK\nv-"+k+"\n" {
			t.Errorf("SET and GET %s through the Service with -c: %s", k, r)
		}
	}
}
