package tlssecret

import (
	"crypto/sha256"
	"crypto/x509"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// Extended key usage names, as cert-manager spells them in spec.usages.
const (
	UsageAny             = "any"
	UsageServerAuth      = "server auth"
	UsageClientAuth      = "client auth"
	UsageCodeSigning     = "code signing"
	UsageEmailProtection = "email protection"
	UsageTimestamping    = "timestamping"
	UsageOCSPSigning     = "ocsp signing"
	UsageIPSECEndSystem  = "ipsec end system"
	UsageIPSECTunnel     = "ipsec tunnel"
	UsageIPSECUser       = "ipsec user"
	UsageMicrosoftSGC    = "microsoft sgc"
	UsageNetscapeSGC     = "netscape sgc"
)

var usageNames = map[x509.ExtKeyUsage]string{
	x509.ExtKeyUsageAny:                        UsageAny,
	x509.ExtKeyUsageServerAuth:                 UsageServerAuth,
	x509.ExtKeyUsageClientAuth:                 UsageClientAuth,
	x509.ExtKeyUsageCodeSigning:                UsageCodeSigning,
	x509.ExtKeyUsageEmailProtection:            UsageEmailProtection,
	x509.ExtKeyUsageTimeStamping:               UsageTimestamping,
	x509.ExtKeyUsageOCSPSigning:                UsageOCSPSigning,
	x509.ExtKeyUsageIPSECEndSystem:             UsageIPSECEndSystem,
	x509.ExtKeyUsageIPSECTunnel:                UsageIPSECTunnel,
	x509.ExtKeyUsageIPSECUser:                  UsageIPSECUser,
	x509.ExtKeyUsageMicrosoftServerGatedCrypto: UsageMicrosoftSGC,
	x509.ExtKeyUsageNetscapeServerGatedCrypto:  UsageNetscapeSGC,
}

// expiryWarning is how close to notAfter a leaf must be to warn.
const expiryWarning = 30 * 24 * time.Hour

// CertInfo describes one certificate.
type CertInfo struct {
	Subject     string
	Issuer      string
	DNSNames    []string
	IPAddresses []string
	NotBefore   time.Time
	NotAfter    time.Time
	// Fingerprint is Fingerprint of the DER, comparable with what a node
	// serves in a handshake.
	Fingerprint string
	// ExtKeyUsages names each usage (see the Usage constants); unknown ones
	// appear as dotted OIDs. Empty means the certificate has no extended key
	// usage extension, which x509 treats as valid for any usage.
	ExtKeyUsages []string
	IsCA         bool
}

// Info describes the material in a TLS Secret.
type Info struct {
	SecretName string
	Leaf       CertInfo
	// Intermediates are the certificates after the leaf in tls.crt.
	Intermediates []CertInfo
	// CAs are the certificates in ca.crt that parse, in file order.
	CAs []CertInfo
}

// errNoCertificate is returned by Inspect when tls.crt holds no leaf.
var errNoCertificate = errors.New("tls.crt holds no X.509 certificate")

// Inspect describes the Secret's certificates. It needs only a parseable
// leaf, so it also works on a Secret that fails later checks; run Validate
// first when validity matters.
func Inspect(secretName string, secret *corev1.Secret) (*Info, error) {
	if secret == nil {
		return nil, errNoCertificate
	}
	first, rest := splitPEM(secret.Data[KeyCert])
	if first == nil {
		return nil, errNoCertificate
	}
	leaf, err := x509.ParseCertificate(first)
	if err != nil {
		return nil, errNoCertificate
	}
	info := &Info{SecretName: secretName, Leaf: describe(leaf)}
	for _, c := range parseDER(rest) {
		info.Intermediates = append(info.Intermediates, describe(c))
	}
	for _, c := range parseCertificates(secret.Data[KeyCA]) {
		info.CAs = append(info.CAs, describe(c))
	}
	return info, nil
}

// Fingerprint is the lowercase hex SHA-256 of a certificate's DER.
func Fingerprint(der []byte) string {
	sum := sha256.Sum256(der)
	return hex.EncodeToString(sum[:])
}

func describe(c *x509.Certificate) CertInfo {
	ci := CertInfo{
		Subject:     c.Subject.String(),
		Issuer:      c.Issuer.String(),
		DNSNames:    c.DNSNames,
		NotBefore:   c.NotBefore,
		NotAfter:    c.NotAfter,
		Fingerprint: Fingerprint(c.Raw),
		IsCA:        c.IsCA,
	}
	for _, ip := range c.IPAddresses {
		ci.IPAddresses = append(ci.IPAddresses, ip.String())
	}
	for _, u := range c.ExtKeyUsage {
		name, ok := usageNames[u]
		if !ok {
			// Usages cert-manager cannot request, such as Microsoft code
			// signing; shown rather than dropped.
			name = fmt.Sprintf("x509.ExtKeyUsage(%d)", u)
		}
		ci.ExtKeyUsages = append(ci.ExtKeyUsages, name)
	}
	for _, oid := range c.UnknownExtKeyUsage {
		ci.ExtKeyUsages = append(ci.ExtKeyUsages, oid.String())
	}
	return ci
}

// Warning is a problem that leaves the Secret valid but will hurt traffic.
type Warning struct {
	Reason  string
	Message string
}

// Warnings lists what is wrong with a valid Secret's leaf at now.
//
// Both usages matter because every node is a TLS server to clients and
// peers and a TLS client to its peers (tls-cluster, tls-replication). A
// leaf without an extended key usage extension is fine: x509 reads that as
// "any usage", and Go and OpenSSL both accept it in either role. Only an
// extension that lists usages without the needed one restricts the key.
//
// An expired leaf yields CertificateExpired only, not also
// CertificateExpiringSoon; whoever sets the CertificateExpiringSoon
// condition should treat both reasons as true.
func Warnings(info *Info, now time.Time) []Warning {
	if info == nil {
		return nil
	}
	var out []Warning
	leaf := info.Leaf
	if eku := leaf.ExtKeyUsages; len(eku) > 0 && !slices.Contains(eku, UsageAny) {
		if !slices.Contains(eku, UsageServerAuth) {
			out = append(out, Warning{ReasonMissingServerAuth, MissingServerAuthMessage(info.SecretName)})
		}
		if !slices.Contains(eku, UsageClientAuth) {
			out = append(out, Warning{ReasonMissingClientAuth, MissingClientAuthMessage(info.SecretName)})
		}
	}
	switch {
	case now.After(leaf.NotAfter):
		out = append(out, Warning{ReasonCertificateExpired, ExpiredMessage(info.SecretName, leaf.NotAfter)})
	case now.Before(leaf.NotBefore):
		out = append(out, Warning{ReasonCertificateNotYetValid, notYetValidMessage(info.SecretName, leaf.NotBefore)})
	}
	if !now.After(leaf.NotAfter) && leaf.NotAfter.Sub(now) <= expiryWarning {
		out = append(out, Warning{ReasonCertificateExpiringSoon, ExpiringSoonMessage(info.SecretName, leaf.NotAfter)})
	}
	return out
}
