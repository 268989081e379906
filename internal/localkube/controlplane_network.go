package localkube

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
	"strconv"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/envtest"
)

// PodNetwork serves the control plane to pods on real nodes
// (internal/realnode), as a cluster does: kube-apiserver listens on an
// address pods reach, the `kubernetes` Service in "default" points at it,
// its serving certificate names that Service, and the controller-manager
// runs the Endpoints and EndpointSlice controllers that kube-proxy and
// cluster DNS read. A pod's in-cluster configuration (the Service's
// ClusterIP, its projected ServiceAccount token, the kube-root-ca.crt
// ConfigMap) then reaches and trusts the apiserver.
type PodNetwork struct {
	// Address is the IP kube-apiserver binds and advertises: the endpoint
	// of the `kubernetes` Service. Pods must reach it, so not loopback:
	// this machine's address, such as a real node's InternalIP.
	Address string
	// ServiceCIDR is the Services' IP range; its first address is the
	// `kubernetes` Service's ClusterIP. Default 10.0.0.0/24 (envtest's).
	ServiceCIDR string
	// ClusterDomain is the DNS suffix of the Service names the serving
	// certificate holds. Default cluster.local.
	ClusterDomain string
}

const (
	defaultServiceCIDR   = "10.0.0.0/24"
	defaultClusterDomain = "cluster.local"
	// The names envtest gives these files in its certificate directory;
	// when apiserver.crt exists it writes none of them.
	servingCertFile = "apiserver.crt"
	servingKeyFile  = "apiserver.key"
	servingCAFile   = "apiserver-ca.crt"
	saSignerCert    = "sa-signer.crt"
	saSignerKey     = "sa-signer.key"
)

func (pn *PodNetwork) complete() error {
	ip := net.ParseIP(pn.Address)
	if ip == nil || ip.IsLoopback() || ip.IsUnspecified() {
		return fmt.Errorf("pod network: address %q is not an IP address pods can reach", pn.Address)
	}
	if pn.ServiceCIDR == "" {
		pn.ServiceCIDR = defaultServiceCIDR
	}
	if _, _, err := net.ParseCIDR(pn.ServiceCIDR); err != nil {
		return fmt.Errorf("pod network: service CIDR: %w", err)
	}
	if pn.ClusterDomain == "" {
		pn.ClusterDomain = defaultClusterDomain
	}
	return nil
}

// KubernetesServiceIP is the ClusterIP of the `kubernetes` Service: the
// first address of ServiceCIDR.
func (pn *PodNetwork) KubernetesServiceIP() net.IP {
	_, ipn, err := net.ParseCIDR(pn.ServiceCIDR)
	if err != nil {
		return nil
	}
	ip := make(net.IP, len(ipn.IP))
	copy(ip, ipn.IP)
	for i := len(ip) - 1; i >= 0; i-- {
		ip[i]++
		if ip[i] != 0 {
			break
		}
	}
	return ip
}

// configure makes api listen on Address, on a free port, with a serving
// certificate for the names a pod dials it by, and advertise Address.
// The certificates are written before envtest starts the apiserver, so
// it keeps them (and a restart finds them).
func (pn *PodNetwork) configure(api *envtest.APIServer) error {
	port, err := freePortOn(pn.Address)
	if err != nil {
		return fmt.Errorf("pod network: a port on %s: %w", pn.Address, err)
	}
	api.SecureServing.ListenAddr.Address = pn.Address
	api.SecureServing.ListenAddr.Port = strconv.Itoa(port)
	caPEM, err := pn.writeCerts(api.CertDir)
	if err != nil {
		return fmt.Errorf("pod network: apiserver certificates: %w", err)
	}
	api.SecureServing.CA = caPEM
	args := api.Configure()
	args.Set("advertise-address", pn.Address)
	args.Set("service-cluster-ip-range", pn.ServiceCIDR)
	return nil
}

// controllerManagerArgs run every controller but the legacy token one
// (bound tokens come from the TokenRequest API), the Endpoints and
// EndpointSlice ones included since pod IPs are real, and publish the
// serving CA as kube-root-ca.crt in every namespace.
func (pn *PodNetwork) controllerManagerArgs(certDir string) []string {
	return []string{
		"--controllers=*,-serviceaccount-token-controller",
		"--root-ca-file=" + filepath.Join(certDir, servingCAFile),
		"--service-cluster-ip-range=" + pn.ServiceCIDR,
	}
}

// servingNames are what a client dials the apiserver by: loopback (the
// tests), Address, and the `kubernetes` Service by ClusterIP and name.
func (pn *PodNetwork) servingNames() ([]string, []net.IP) {
	dns := []string{"localhost", "kubernetes", "kubernetes.default", "kubernetes.default.svc", "kubernetes.default.svc." + pn.ClusterDomain}
	ips := []net.IP{net.IPv4(127, 0, 0, 1), net.ParseIP(pn.Address), pn.KubernetesServiceIP()}
	return dns, ips
}

// writeCerts writes a CA, the apiserver's serving certificate signed by
// it, and the ServiceAccount token signing key pair into certDir, and
// returns the CA in PEM.
func (pn *PodNetwork) writeCerts(certDir string) ([]byte, error) {
	if err := os.MkdirAll(certDir, 0o700); err != nil {
		return nil, err
	}
	now := time.Now()
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	caTmpl := &x509.Certificate{
		SerialNumber:          randomSerial(),
		Subject:               pkix.Name{CommonName: "localkube-apiserver-ca"},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.Add(10 * 365 * 24 * time.Hour),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		return nil, err
	}
	caCert, err := x509.ParseCertificate(caDER)
	if err != nil {
		return nil, err
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	dns, ips := pn.servingNames()
	tmpl := &x509.Certificate{
		SerialNumber: randomSerial(),
		Subject:      pkix.Name{CommonName: "kube-apiserver"},
		NotBefore:    now.Add(-time.Hour),
		NotAfter:     now.Add(365 * 24 * time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		DNSNames:     dns,
		IPAddresses:  ips,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, caCert, &key.PublicKey, caKey)
	if err != nil {
		return nil, err
	}
	saKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	saPub, err := x509.MarshalPKIXPublicKey(&saKey.PublicKey)
	if err != nil {
		return nil, err
	}
	keyPEM, err := ecKeyPEM(key)
	if err != nil {
		return nil, err
	}
	saKeyPEM, err := ecKeyPEM(saKey)
	if err != nil {
		return nil, err
	}
	caPEM := pemBlock("CERTIFICATE", caDER)
	for _, f := range []struct {
		name string
		data []byte
		mode os.FileMode
	}{
		{servingCAFile, caPEM, 0o644},
		{servingCertFile, pemBlock("CERTIFICATE", der), 0o644},
		{servingKeyFile, keyPEM, 0o600},
		{saSignerCert, pemBlock("PUBLIC KEY", saPub), 0o644},
		{saSignerKey, saKeyPEM, 0o600},
	} {
		if err := os.WriteFile(filepath.Join(certDir, f.name), f.data, f.mode); err != nil {
			return nil, err
		}
	}
	return caPEM, nil
}

func ecKeyPEM(k *ecdsa.PrivateKey) ([]byte, error) {
	der, err := x509.MarshalECPrivateKey(k)
	if err != nil {
		return nil, err
	}
	return pemBlock("EC PRIVATE KEY", der), nil
}

func pemBlock(typ string, der []byte) []byte {
	return pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der})
}

func randomSerial() *big.Int {
	n, _ := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 120))
	return n
}

func freePortOn(ip string) (int, error) {
	l, err := net.Listen("tcp", net.JoinHostPort(ip, "0"))
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}
