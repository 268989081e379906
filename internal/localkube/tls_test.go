package localkube

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/gomomento/valkey-operator/internal/localkube/localkubetest"
)

// testCA issues a CA and a server certificate for dnsNames.
func testCA(t *testing.T, dnsNames ...string) (caPEM, certPEM, keyPEM []byte) {
	t.Helper()
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	caTmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "localkube test CA"},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(24 * time.Hour),
		IsCA:                  true,
		BasicConstraintsValid: true,
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	ca, _ := x509.ParseCertificate(caDER)
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(2),
		Subject:      pkix.Name{CommonName: dnsNames[0]},
		DNSNames:     dnsNames,
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(24 * time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER}),
		pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER})
}

// TestTLSPodThroughResolver runs a TLS-only node the way the operator will:
// config file from a ConfigMap naming container paths, TLS material from a
// Secret, data on an emptyDir, per-pod DNS name through a headless Service.
func TestTLSPodThroughResolver(t *testing.T) {
	t.Parallel()
	ns := newNamespace(t)
	const svcName = "my-cluster"
	fqdn := "my-cluster-0." + svcName + "." + ns + ".svc.cluster.local"
	caPEM, certPEM, keyPEM := testCA(t, "*."+svcName+"."+ns+".svc.cluster.local", svcName+"."+ns+".svc.cluster.local")

	if _, err := testCS.CoreV1().Secrets(ns).Create(testCtx, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "tls", Namespace: ns},
		Type:       corev1.SecretTypeTLS,
		Data:       map[string][]byte{"tls.crt": certPEM, "tls.key": keyPEM, "ca.crt": caPEM},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	conf := strings.Join([]string{
		"port 0",
		"tls-port 6379",
		"tls-cert-file /etc/valkey/tls/tls.crt",
		"tls-key-file /etc/valkey/tls/tls.key",
		"tls-ca-cert-file /etc/valkey/tls/ca.crt",
		"tls-auth-clients no",
		"dir /var/lib/valkey",
		`save ""`,
		"",
	}, "\n")
	if _, err := testCS.CoreV1().ConfigMaps(ns).Create(testCtx, &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: "my-cluster-0-config", Namespace: ns},
		Data:       map[string]string{"valkey.conf": conf},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := testCS.CoreV1().Services(ns).Create(testCtx, &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: svcName, Namespace: ns},
		Spec: corev1.ServiceSpec{
			ClusterIP: corev1.ClusterIPNone,
			Selector:  map[string]string{"app.kubernetes.io/instance": svcName},
			Ports:     []corev1.ServicePort{{Name: "valkey", Port: 6379}, {Name: "valkey-bus", Port: 16379}},
		},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	pod := valkeyPod(ns, "my-cluster-0")
	pod.Labels = map[string]string{"app.kubernetes.io/instance": svcName}
	pod.Spec.Hostname = "my-cluster-0"
	pod.Spec.Subdomain = svcName
	c := &pod.Spec.Containers[0]
	c.Args = []string{"/etc/valkey/valkey.conf", "--bind", "$(POD_IP)", "--cluster-announce-ip", "$(POD_IP)"}
	c.VolumeMounts = []corev1.VolumeMount{
		{Name: "config", MountPath: "/etc/valkey/valkey.conf", SubPath: "valkey.conf", ReadOnly: true},
		{Name: "tls", MountPath: "/etc/valkey/tls", ReadOnly: true},
		{Name: "data", MountPath: "/var/lib/valkey"},
	}
	c.LivenessProbe = &corev1.Probe{
		ProbeHandler:  corev1.ProbeHandler{TCPSocket: &corev1.TCPSocketAction{Port: intstr.FromInt32(6379)}},
		PeriodSeconds: 1,
	}
	pod.Spec.Volumes = []corev1.Volume{
		{Name: "config", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: "my-cluster-0-config"}}}},
		{Name: "tls", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "tls"}}},
		{Name: "data", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
	}
	createPod(t, pod)
	p := waitPod(t, ns, "my-cluster-0", "ready", isReady)

	var addrs []string
	eventually(t, 10*time.Second, func() (bool, string) {
		var err error
		addrs, err = testRT.LookupHost(fqdn)
		return err == nil, "lookup " + fqdn + ": " + errString(err)
	})
	if len(addrs) != 1 || addrs[0] != p.Status.PodIP {
		t.Fatalf("%s resolved to %v, want [%s]", fqdn, addrs, p.Status.PodIP)
	}
	if svcAddrs, err := testRT.LookupHost(svcName + "." + ns + ".svc.cluster.local."); err != nil || len(svcAddrs) != 1 || svcAddrs[0] != p.Status.PodIP {
		t.Errorf("service name resolved to %v, %v", svcAddrs, err)
	}
	if _, err := testRT.LookupHost("nobody." + svcName + "." + ns + ".svc.cluster.local"); err == nil {
		t.Error("an unknown pod name resolved")
	}

	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(caPEM)
	ctx, cancel := context.WithTimeout(testCtx, 10*time.Second)
	defer cancel()
	// Ready means started (there is no readiness probe), not listening yet.
	var raw net.Conn
	eventually(t, 10*time.Second, func() (bool, string) {
		var err error
		raw, err = testRT.DialContext(ctx, "tcp", net.JoinHostPort(fqdn, "6379"))
		return err == nil, errString(err)
	})
	conn := tls.Client(raw, &tls.Config{ServerName: fqdn, RootCAs: roots, MinVersion: tls.VersionTLS12})
	defer conn.Close()
	if err := conn.HandshakeContext(ctx); err != nil {
		t.Fatalf("TLS handshake with %s: %v", fqdn, err)
	}
	if err := ping(conn); err != nil {
		t.Fatal(err)
	}
	// The container paths in the config file point into the pod's own
	// directories.
	dataDir, _ := testRT.HostPath(ns, "my-cluster-0", "/var/lib/valkey")
	if dir, err := readBulkArray(conn, "CONFIG GET dir"); err != nil || dir != dataDir {
		t.Errorf("CONFIG GET dir = %q, %v; want %q", dir, err, dataDir)
	}
	tlsDir, _ := testRT.HostPath(ns, "my-cluster-0", "/etc/valkey/tls")
	if f, err := readBulkArray(conn, "CONFIG GET tls-cert-file"); err != nil || f != tlsDir+"/tls.crt" {
		t.Errorf("CONFIG GET tls-cert-file = %q, %v; want under %s", f, err, tlsDir)
	}
	// Plaintext must not work on a TLS-only node.
	if plain, err := net.DialTimeout("tcp", net.JoinHostPort(p.Status.PodIP, "6379"), 2*time.Second); err == nil {
		if ping(plain) == nil {
			t.Error("a plaintext PING was answered")
		}
		plain.Close()
	}

	t.Run("etc-hosts", func(t *testing.T) {
		testEtcHosts(t, fqdn, caPEM)
	})

	conn.Close()
	deletePod(t, ns, "my-cluster-0")
	waitGone(t, ns, "my-cluster-0")
	eventually(t, 10*time.Second, func() (bool, string) {
		_, err := testRT.LookupHost(fqdn)
		return err != nil, "name of a deleted pod still resolves"
	})
	localkubetest.AssertNoLeakedProcesses(t, testRT.PodDirPrefix(ns))
}

// testEtcHosts runs the seed's valkey-cli command verbatim against the real
// /etc/hosts, restoring the file afterwards.
func testEtcHosts(t *testing.T, fqdn string, caPEM []byte) {
	if os.Geteuid() != 0 {
		t.Skip("writing /etc/hosts needs root")
	}
	const hostsPath = "/etc/hosts"
	before, err := os.ReadFile(hostsPath)
	if err != nil {
		t.Fatal(err)
	}
	h, err := testRT.startHostsWriter(hostsPath)
	if err != nil {
		t.Fatal(err)
	}
	stopped := false
	defer func() {
		if !stopped {
			_ = h.stop()
		}
	}()
	eventually(t, 10*time.Second, func() (bool, string) {
		b, _ := os.ReadFile(hostsPath)
		return bytes.Contains(b, []byte(fqdn)), "/etc/hosts has no line for " + fqdn
	})
	ca := t.TempDir() + "/ca.crt"
	if err := os.WriteFile(ca, caPEM, 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command("valkey-cli", "-h", fqdn, "--tls", "--cacert", ca, "-p", "6379", "PING").CombinedOutput()
	if err != nil || strings.TrimSpace(string(out)) != "PONG" {
		t.Errorf("valkey-cli -h %s --tls PING: %q, %v", fqdn, out, err)
	}
	stopped = true
	if err := h.stop(); err != nil {
		t.Fatal(err)
	}
	// Other runtimes on this machine may keep blocks of their own; ours
	// must be gone and everything else as it was.
	after, _ := os.ReadFile(hostsPath)
	if bytes.Contains(after, []byte(testRT.BaseDir())) || bytes.Contains(after, []byte(fqdn)) {
		t.Errorf("block not removed from /etc/hosts:\n%s", after)
	}
	if !bytes.Contains(before, []byte(hostsBegin)) && !bytes.Equal(before, after) {
		t.Errorf("/etc/hosts not restored:\n%s", after)
	}
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// readBulkArray sends cmd and returns the second element of a two-element
// array reply (CONFIG GET's value).
func readBulkArray(conn net.Conn, cmd string) (string, error) {
	_ = conn.SetDeadline(time.Now().Add(5 * time.Second))
	if _, err := conn.Write([]byte(cmd + "\r\n")); err != nil {
		return "", err
	}
	buf := make([]byte, 4096)
	n, err := conn.Read(buf)
	if err != nil {
		return "", err
	}
	lines := strings.Split(string(buf[:n]), "\r\n")
	if len(lines) < 5 || lines[0] != "*2" {
		return "", &net.AddrError{Err: "unexpected reply " + string(buf[:n])}
	}
	return lines[4], nil
}
