package realnode

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"time"
)

// KubeletClient is a client certificate the kube-apiserver presents to
// kubelets (for logs, exec, port-forward), with the CA that signed it: a
// node started with Options.KubeletClientCA trusts it. The user is
// "kube-apiserver-kubelet-client" in system:masters, so the kubelet's
// webhook authorization allows it everything.
type KubeletClient struct {
	CAFile, CertFile, KeyFile string
}

// NewKubeletClient writes a CA and a client certificate signed by it into
// dir.
func NewKubeletClient(dir string) (*KubeletClient, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("kubelet client certificate: %w", err)
	}
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("kubelet client CA key: %w", err)
	}
	now := time.Now()
	caTmpl := &x509.Certificate{
		SerialNumber:          serial(),
		Subject:               pkix.Name{CommonName: "realnode-kubelet-client-ca"},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.Add(10 * 365 * 24 * time.Hour),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		return nil, fmt.Errorf("kubelet client CA: %w", err)
	}
	caCert, err := x509.ParseCertificate(caDER)
	if err != nil {
		return nil, err
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("kubelet client key: %w", err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: serial(),
		Subject:      pkix.Name{CommonName: "kube-apiserver-kubelet-client", Organization: []string{"system:masters"}},
		NotBefore:    now.Add(-time.Hour),
		NotAfter:     now.Add(10 * 365 * 24 * time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, caCert, &key.PublicKey, caKey)
	if err != nil {
		return nil, fmt.Errorf("kubelet client certificate: %w", err)
	}
	kc := &KubeletClient{
		CAFile:   filepath.Join(dir, "kubelet-client-ca.crt"),
		CertFile: filepath.Join(dir, "kubelet-client.crt"),
		KeyFile:  filepath.Join(dir, "kubelet-client.key"),
	}
	if err := writeCert(kc.CAFile, caDER); err != nil {
		return nil, err
	}
	if err := writeCert(kc.CertFile, der); err != nil {
		return nil, err
	}
	if err := writeKey(kc.KeyFile, key); err != nil {
		return nil, err
	}
	return kc, nil
}

// APIServerArgs are the kube-apiserver flags that make it reach kubelets
// at their InternalIP with this certificate.
func (kc *KubeletClient) APIServerArgs() []string {
	return []string{
		"--kubelet-client-certificate=" + kc.CertFile,
		"--kubelet-client-key=" + kc.KeyFile,
		"--kubelet-preferred-address-types=InternalIP",
	}
}

// selfSignedServing writes a self-signed serving certificate for the
// kubelet, valid for name and ip.
func selfSignedServing(certFile, keyFile, name string, ip net.IP) error {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return fmt.Errorf("kubelet serving key: %w", err)
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber:          serial(),
		Subject:               pkix.Name{CommonName: name},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.Add(365 * 24 * time.Hour),
		KeyUsage:              x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		BasicConstraintsValid: true,
		IsCA:                  true,
		DNSNames:              []string{name, "localhost"},
		IPAddresses:           []net.IP{ip, net.IPv4(127, 0, 0, 1)},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return fmt.Errorf("kubelet serving certificate: %w", err)
	}
	if err := writeCert(certFile, der); err != nil {
		return err
	}
	return writeKey(keyFile, key)
}

func serial() *big.Int {
	n, _ := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 120))
	return n
}

func writeCert(path string, der []byte) error {
	if err := os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o644); err != nil {
		return fmt.Errorf("writing certificate: %w", err)
	}
	return nil
}

func writeKey(path string, key *ecdsa.PrivateKey) error {
	der, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return err
	}
	if err := os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: der}), 0o600); err != nil {
		return fmt.Errorf("writing key: %w", err)
	}
	return nil
}
