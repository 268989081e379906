// Package tlssecret decides whether a TLS Secret can serve a ValkeyCluster,
// and describes the certificate in it for status and warnings.
//
// Validation is a fixed chain of small checks run in order; the first
// failure wins and its reason and message go to status unchanged. Warnings
// are computed separately and never make a Secret invalid. Nothing here does
// I/O, so the reconciler, the reload controller and tests share one answer.
package tlssecret

import (
	"crypto/x509"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/gomomento/valkey-operator/internal/dnsname"
)

// Keys a cluster's TLS Secret must hold.
const (
	KeyCert       = corev1.TLSCertKey       // "tls.crt"
	KeyPrivateKey = corev1.TLSPrivateKeyKey // "tls.key"
	KeyCA         = "ca.crt"
)

// requiredKeys in the order check 3 looks for them.
var requiredKeys = []string{KeyCert, KeyPrivateKey, KeyCA}

// DefaultClusterDomain is used when Input.ClusterDomain is empty.
const DefaultClusterDomain = dnsname.DefaultClusterDomain

// Input is everything validation looks at.
type Input struct {
	ClusterName   string
	Namespace     string
	ClusterDomain string // DefaultClusterDomain when empty
	SecretName    string
	Secret        *corev1.Secret // nil when the Secret was not found
}

// Failure is the first failed check: Reason for conditions and Events,
// Message for status.message.
type Failure struct {
	Reason  string
	Message string
}

func (f *Failure) Error() string { return f.Message }

// requiredSANs returns the Service name and the wildcard for the pods'
// announced names, in the order check 6 reports them.
func requiredSANs(cluster, namespace, domain string) []string {
	return dnsname.SANs(cluster, namespace, domain)
}

// check inspects one property, assuming every earlier check passed.
type check func(*subject) *Failure

// chain is the validation order. The first six are the documented checks;
// the last three reject material a node could not load or use, which would
// otherwise surface only as failed handshakes on running nodes.
//
// The Secret type is deliberately not checked: the documented operator does
// not check it, and an Opaque Secret with the right keys works the same once
// mounted, so rejecting it would break clusters the documented operator
// accepts.
var chain = []check{
	checkExists,
	checkHasData,
	checkKeys,
	checkCertPEM,
	checkCertX509,
	checkSANs,
	checkKeyMatches,
	checkCAPEM,
	checkSignedByCA,
}

// subject carries what earlier checks parsed to later ones.
type subject struct {
	in    Input
	first []byte   // the first PEM block of tls.crt, whatever its type
	rest  [][]byte // later CERTIFICATE blocks of tls.crt: the intermediates
	leaf  *x509.Certificate
	cas   []*x509.Certificate
}

// Validate runs the checks in order and returns the first failure, or nil
// when the Secret is usable. The result is a *Failure rather than an error so
// that a nil result cannot become a non-nil error interface by assignment.
func Validate(in Input) *Failure {
	s := &subject{in: in}
	for _, c := range chain {
		if f := c(s); f != nil {
			return f
		}
	}
	return nil
}

func (s *subject) fail(reason, message string) *Failure {
	return &Failure{Reason: reason, Message: message}
}

func checkExists(s *subject) *Failure {
	if s.in.Secret == nil {
		return s.fail(ReasonSecretNotFound, SecretNotFoundMessage(s.in.SecretName, s.in.Namespace))
	}
	return nil
}

func checkHasData(s *subject) *Failure {
	if len(s.in.Secret.Data) == 0 {
		return s.fail(ReasonSecretEmpty, SecretEmptyMessage(s.in.SecretName))
	}
	return nil
}

// An empty value counts as missing: the node would read an empty file, and
// naming the key is more useful than a parse error. cert-manager writes an
// empty ca.crt for issuers that have no CA to offer, such as ACME.
func checkKeys(s *subject) *Failure {
	for _, k := range requiredKeys {
		if len(s.in.Secret.Data[k]) == 0 {
			return s.fail(ReasonMissingKey, MissingKeyMessage(s.in.SecretName, k))
		}
	}
	return nil
}

func checkCertPEM(s *subject) *Failure {
	first, rest := splitPEM(s.in.Secret.Data[KeyCert])
	if first == nil {
		return s.fail(ReasonCertNotPEM, CertNotPEMMessage(s.in.SecretName))
	}
	s.first, s.rest = first, rest
	return nil
}

// The first block must be the leaf, because that is the one a node
// presents; a key or parameters block first is not a certificate file.
func checkCertX509(s *subject) *Failure {
	leaf, err := x509.ParseCertificate(s.first)
	if err != nil {
		return s.fail(ReasonCertNotX509, CertNotX509Message(s.in.SecretName))
	}
	s.leaf = leaf
	return nil
}

// DNS names compare case-insensitively, as in TLS hostname verification.
// Only presence is checked; extra SANs are fine.
func checkSANs(s *subject) *Failure {
	for _, want := range requiredSANs(s.in.ClusterName, s.in.Namespace, s.in.ClusterDomain) {
		if !containsFold(s.leaf.DNSNames, want) {
			return s.fail(ReasonMissingSAN, MissingSANMessage(s.in.SecretName, want))
		}
	}
	return nil
}

func checkKeyMatches(s *subject) *Failure {
	if !keyMatches(s.leaf, s.in.Secret.Data[KeyPrivateKey]) {
		return s.fail(ReasonKeyMismatch, KeyMismatchMessage(s.in.SecretName))
	}
	return nil
}

func checkCAPEM(s *subject) *Failure {
	cas := parseCertificates(s.in.Secret.Data[KeyCA])
	if len(cas) == 0 {
		return s.fail(ReasonCANotPEM, CANotPEMMessage(s.in.SecretName))
	}
	s.cas = cas
	return nil
}

func checkSignedByCA(s *subject) *Failure {
	if !verifiesAtSomeTime(s.leaf, parseDER(s.rest), s.cas) {
		return s.fail(ReasonCertNotSignedByCA, CertNotSignedByCAMessage(s.in.SecretName))
	}
	return nil
}

func containsFold(list []string, want string) bool {
	for _, v := range list {
		if strings.EqualFold(v, want) {
			return true
		}
	}
	return false
}
