// Package testcerts issues throwaway certificates and TLS Secrets for tests.
//
// Everything here is for tests only: keys are generated fresh on every call,
// nothing is persisted, and failures panic because a test cannot continue
// without its fixtures anyway.
//
// A typical fixture:
//
//	ca := testcerts.NewCA("test-ca")
//	leaf := testcerts.Leaf(ca, "my-cluster", "my-app", "cluster.local")
//	secret := testcerts.Secret("my-cluster-tls", "my-app", leaf)
package testcerts

import (
	"bytes"
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gomomento/valkey-operator/internal/dnsname"
)

// Secret keys, as in a kubernetes.io/tls Secret written by cert-manager.
const (
	keyCert = corev1.TLSCertKey       // "tls.crt"
	keyKey  = corev1.TLSPrivateKeyKey // "tls.key"
	keyCA   = "ca.crt"
)

// Backdating absorbs clock skew between the test and whatever checks the
// certificate, so a fresh certificate is valid at once.
const backdate = time.Hour

// CA is a certificate authority that can sign leaves and intermediates.
type CA struct {
	Cert    *x509.Certificate
	Key     crypto.Signer
	CertPEM []byte
	KeyPEM  []byte

	// parent is nil for a self-signed root.
	parent *CA
}

// CAOption adjusts a CA before it is signed.
type CAOption func(*x509.Certificate)

// CAValidity sets the CA's validity window, e.g. to build an expired CA.
func CAValidity(notBefore, notAfter time.Time) CAOption {
	return func(t *x509.Certificate) {
		t.NotBefore, t.NotAfter = notBefore, notAfter
	}
}

// NewCA returns a self-signed ECDSA P-256 root CA, valid from a year ago
// for ten years, so that backdated leaves still fall inside its window.
func NewCA(commonName string, opts ...CAOption) *CA {
	return newCA(commonName, nil, opts)
}

// Intermediate returns a CA signed by ca. Leaves it signs carry it in their
// chain, the way tls.crt carries intermediates.
func (ca *CA) Intermediate(commonName string, opts ...CAOption) *CA {
	return newCA(commonName, ca, opts)
}

// root returns the self-signed CA at the top of ca's chain.
func (ca *CA) root() *CA {
	for ca.parent != nil {
		ca = ca.parent
	}
	return ca
}

func newCA(commonName string, parent *CA, opts []CAOption) *CA {
	key := must(ecdsa.GenerateKey(elliptic.P256(), rand.Reader))
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber:          serial(),
		Subject:               pkix.Name{CommonName: commonName},
		NotBefore:             now.AddDate(-1, 0, 0),
		NotAfter:              now.AddDate(9, 0, 0),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	for _, o := range opts {
		o(tmpl)
	}
	signerCert, signerKey := tmpl, crypto.Signer(key)
	if parent != nil {
		signerCert, signerKey = parent.Cert, parent.Key
	}
	der := must(x509.CreateCertificate(rand.Reader, tmpl, signerCert, key.Public(), signerKey))
	return &CA{
		Cert:    must(x509.ParseCertificate(der)),
		Key:     key,
		CertPEM: pemBlock("CERTIFICATE", der),
		KeyPEM:  pemBlock("EC PRIVATE KEY", must(x509.MarshalECPrivateKey(key))),
		parent:  parent,
	}
}

// Bundle concatenates the CAs' certificates into one PEM bundle, as in a
// ca.crt that holds the old and the new CA during a CA rotation.
func Bundle(cas ...*CA) []byte {
	var b bytes.Buffer
	for _, ca := range cas {
		b.Write(ca.CertPEM)
	}
	return b.Bytes()
}

// KeyType selects the leaf's key algorithm.
type KeyType int

const (
	ECDSAP256 KeyType = iota
	RSA2048
	Ed25519
)

// KeyEncoding selects the PEM encoding of the leaf's private key.
type KeyEncoding int

const (
	// Native is PKCS#1 for RSA, SEC1 for ECDSA and PKCS#8 for Ed25519,
	// which has no other encoding.
	Native KeyEncoding = iota
	PKCS8
)

// LeafCert is an issued leaf. CertPEM is what goes into tls.crt: the leaf
// followed by any intermediates between it and the root.
type LeafCert struct {
	Cert    *x509.Certificate
	Key     crypto.Signer
	CertPEM []byte
	KeyPEM  []byte
	CA      *CA
}

// DER returns the served chain (leaf first) as a TLS handshake carries it.
func (l *LeafCert) DER() [][]byte {
	chain := [][]byte{l.Cert.Raw}
	for ca := l.CA; ca.parent != nil; ca = ca.parent {
		chain = append(chain, ca.Cert.Raw)
	}
	return chain
}

type leafConfig struct {
	tmpl     *x509.Certificate
	keyType  KeyType
	encoding KeyEncoding
}

// LeafOption adjusts a leaf before it is signed.
type LeafOption func(*leafConfig)

// WithDNSNames replaces the required SANs. With no names the certificate
// has no DNS SANs at all.
func WithDNSNames(names ...string) LeafOption {
	return func(c *leafConfig) { c.tmpl.DNSNames = names }
}

// WithExtKeyUsages replaces the default server auth and client auth usages.
// With no usages the certificate has no extended key usage extension, which
// Go treats as valid for any usage.
func WithExtKeyUsages(usages ...x509.ExtKeyUsage) LeafOption {
	return func(c *leafConfig) { c.tmpl.ExtKeyUsage = usages }
}

// WithValidity sets the leaf's validity window, e.g. to build an expired or
// soon-expiring certificate.
func WithValidity(notBefore, notAfter time.Time) LeafOption {
	return func(c *leafConfig) {
		c.tmpl.NotBefore, c.tmpl.NotAfter = notBefore, notAfter
	}
}

// WithKeyType selects the leaf's key algorithm; the default is ECDSA P-256.
func WithKeyType(t KeyType) LeafOption {
	return func(c *leafConfig) { c.keyType = t }
}

// WithKeyEncoding selects how tls.key is encoded.
func WithKeyEncoding(e KeyEncoding) LeafOption {
	return func(c *leafConfig) { c.encoding = e }
}

// SANs returns the two DNS names a cluster's certificate must carry:
// the Service name and the wildcard covering each pod's announced name.
func SANs(cluster, namespace, domain string) []string {
	return dnsname.SANs(cluster, namespace, domain)
}

// Leaf issues a certificate for a ValkeyCluster, signed by ca, carrying the
// required SANs and both server auth and client auth, valid for 90 days.
func Leaf(ca *CA, cluster, namespace, domain string, opts ...LeafOption) *LeafCert {
	now := time.Now()
	cfg := &leafConfig{tmpl: &x509.Certificate{
		SerialNumber: serial(),
		Subject:      pkix.Name{CommonName: cluster + "." + namespace},
		DNSNames:     SANs(cluster, namespace, domain),
		NotBefore:    now.Add(-backdate),
		NotAfter:     now.AddDate(0, 0, 90),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
	}}
	for _, o := range opts {
		o(cfg)
	}

	key, keyPEM := newKey(cfg.keyType, cfg.encoding)
	if _, ok := key.(*rsa.PrivateKey); ok {
		// RSA key exchange in TLS 1.2 needs it; harmless otherwise.
		cfg.tmpl.KeyUsage |= x509.KeyUsageKeyEncipherment
	}
	der := must(x509.CreateCertificate(rand.Reader, cfg.tmpl, ca.Cert, key.Public(), ca.Key))

	certPEM := pemBlock("CERTIFICATE", der)
	for c := ca; c.parent != nil; c = c.parent {
		certPEM = append(certPEM, c.CertPEM...)
	}
	return &LeafCert{
		Cert:    must(x509.ParseCertificate(der)),
		Key:     key,
		CertPEM: certPEM,
		KeyPEM:  keyPEM,
		CA:      ca,
	}
}

func newKey(t KeyType, enc KeyEncoding) (crypto.Signer, []byte) {
	var key crypto.Signer
	var native []byte
	var nativeType string
	switch t {
	case ECDSAP256:
		k := must(ecdsa.GenerateKey(elliptic.P256(), rand.Reader))
		key, native, nativeType = k, must(x509.MarshalECPrivateKey(k)), "EC PRIVATE KEY"
	case RSA2048:
		k := must(rsa.GenerateKey(rand.Reader, 2048))
		key, native, nativeType = k, x509.MarshalPKCS1PrivateKey(k), "RSA PRIVATE KEY"
	case Ed25519:
		_, k := must2(ed25519.GenerateKey(rand.Reader))
		key = k
		enc = PKCS8
	default:
		panic(fmt.Sprintf("testcerts: unknown key type %d", t))
	}
	if enc == PKCS8 {
		return key, pemBlock("PRIVATE KEY", must(x509.MarshalPKCS8PrivateKey(key)))
	}
	return key, pemBlock(nativeType, native)
}

// Secret builds a kubernetes.io/tls Secret holding leaf. ca.crt is the
// concatenation of caBundle, or the root of leaf's chain when none is given.
func Secret(name, namespace string, leaf *LeafCert, caBundle ...[]byte) *corev1.Secret {
	ca := bytes.Join(caBundle, nil)
	if len(caBundle) == 0 {
		ca = leaf.CA.root().CertPEM
	}
	return &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace},
		Type:       corev1.SecretTypeTLS,
		Data: map[string][]byte{
			keyCert: leaf.CertPEM,
			keyKey:  leaf.KeyPEM,
			keyCA:   ca,
		},
	}
}

func pemBlock(typ string, der []byte) []byte {
	return pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der})
}

func serial() *big.Int {
	return must(rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127)))
}

func must[T any](v T, err error) T {
	if err != nil {
		panic("testcerts: " + err.Error())
	}
	return v
}

func must2[A, B any](a A, b B, err error) (A, B) {
	if err != nil {
		panic("testcerts: " + err.Error())
	}
	return a, b
}
