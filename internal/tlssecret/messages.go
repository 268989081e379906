package tlssecret

import (
	"fmt"
	"strings"
	"time"
)

// Reasons for a failed check. Each one sets the cluster Invalid.
const (
	ReasonSecretNotFound    = "SecretNotFound"
	ReasonSecretEmpty       = "SecretEmpty"
	ReasonMissingKey        = "MissingKey"
	ReasonCertNotPEM        = "CertNotPEM"
	ReasonCertNotX509       = "CertNotX509"
	ReasonMissingSAN        = "MissingSAN"
	ReasonKeyMismatch       = "KeyMismatch"
	ReasonCANotPEM          = "CANotPEM"
	ReasonCertNotSignedByCA = "CertNotSignedByCA"
)

// Reasons for warnings. None of them makes the cluster Invalid.
const (
	ReasonMissingServerAuth       = "MissingServerAuthUsage"
	ReasonMissingClientAuth       = "MissingClientAuthUsage"
	ReasonCertificateExpiringSoon = "CertificateExpiringSoon"
	ReasonCertificateExpired      = "CertificateExpired"
	ReasonCertificateNotYetValid  = "CertificateNotYetValid"
	ReasonServedCertNotTrusted    = "ServedCertNotTrusted"
)

// The first six templates are the documented status.message strings and
// must not change by a single byte: users match on them.

// SecretNotFoundMessage is check 1.
func SecretNotFoundMessage(secret, namespace string) string {
	return fmt.Sprintf("TLS Secret %q not found in namespace %q", secret, namespace)
}

// SecretEmptyMessage is check 2.
func SecretEmptyMessage(secret string) string {
	return fmt.Sprintf("TLS Secret %q has no data", secret)
}

// MissingKeyMessage is check 3.
func MissingKeyMessage(secret, key string) string {
	return fmt.Sprintf("TLS Secret %q missing required key %q", secret, key)
}

// CertNotPEMMessage is check 4.
func CertNotPEMMessage(secret string) string {
	return fmt.Sprintf("TLS Secret %q: tls.crt is not valid PEM", secret)
}

// CertNotX509Message is check 5.
func CertNotX509Message(secret string) string {
	return fmt.Sprintf("TLS Secret %q: tls.crt is not a valid X.509 certificate", secret)
}

// MissingSANMessage is check 6.
func MissingSANMessage(secret, name string) string {
	return fmt.Sprintf("TLS cert in Secret %q missing SAN %q", secret, name)
}

// KeyMismatchMessage is check 7.
func KeyMismatchMessage(secret string) string {
	return fmt.Sprintf("TLS Secret %q: tls.key does not match tls.crt", secret)
}

// CANotPEMMessage is check 8.
func CANotPEMMessage(secret string) string {
	return fmt.Sprintf("TLS Secret %q: ca.crt is not valid PEM", secret)
}

// CertNotSignedByCAMessage is check 9.
func CertNotSignedByCAMessage(secret string) string {
	return fmt.Sprintf("TLS Secret %q: tls.crt is not signed by a CA in ca.crt", secret)
}

// MissingServerAuthMessage warns that peers and clients will refuse the
// certificate a node serves.
func MissingServerAuthMessage(secret string) string {
	return fmt.Sprintf("TLS cert in Secret %q lacks extended key usage %q: "+
		"peers and clients reject the certificate nodes serve, so the cluster bus, replication and client connections will fail",
		secret, UsageServerAuth)
}

// MissingClientAuthMessage warns that nodes cannot present the certificate
// when they connect to their peers.
func MissingClientAuthMessage(secret string) string {
	return fmt.Sprintf("TLS cert in Secret %q lacks extended key usage %q: "+
		"nodes cannot authenticate to peers, so the cluster bus and replication will fail",
		secret, UsageClientAuth)
}

// ExpiringSoonMessage warns of a leaf within expiryWarning of its notAfter.
func ExpiringSoonMessage(secret string, notAfter time.Time) string {
	return fmt.Sprintf("TLS cert in Secret %q expires at %s, within 30 days",
		secret, notAfter.UTC().Format(time.RFC3339))
}

// ExpiredMessage warns of a leaf past its notAfter.
func ExpiredMessage(secret string, notAfter time.Time) string {
	return fmt.Sprintf("TLS cert in Secret %q expired at %s",
		secret, notAfter.UTC().Format(time.RFC3339))
}

// notYetValidMessage warns of a leaf before its notBefore.
func notYetValidMessage(secret string, notBefore time.Time) string {
	return fmt.Sprintf("TLS cert in Secret %q is not valid before %s",
		secret, notBefore.UTC().Format(time.RFC3339))
}

// ServedCertNotTrustedMessage reports nodes whose served certificate the
// Secret's ca.crt does not trust, which is what a CA rotation that skipped
// the bundle step looks like from outside.
func ServedCertNotTrustedMessage(secret string, nodes []string) string {
	return fmt.Sprintf("ca.crt in TLS Secret %q does not trust the certificate served by %s; "+
		"keep the old and the new CA together in ca.crt until every node serves a certificate from the new CA",
		secret, strings.Join(nodes, ", "))
}

// CABundleRequiredMessage explains a held copy: ca.crt in the Secret does
// not trust leaves (SHA-256 fingerprints) that nodes serve or may still
// serve, so pushing it would split the nodes between two CAs.
func CABundleRequiredMessage(secret string, leaves []string) string {
	short := make([]string, len(leaves))
	for i, fp := range leaves {
		short[i] = fp
		if len(fp) > 16 {
			short[i] = fp[:16]
		}
	}
	return fmt.Sprintf("ca.crt in TLS Secret %q does not trust the certificate the nodes serve now (SHA-256 %s); "+
		"the nodes keep their current certificate and CA until it does: the bundle step of the CA rotation was skipped, "+
		"ca.crt must bundle the old CA with the new one until every node serves the new leaf, and only then hold the new CA alone",
		secret, strings.Join(short, ", "))
}
