package tlsreload

import (
	"crypto/x509"
	"errors"
	"fmt"
	"slices"

	"github.com/gomomento/valkey-operator/internal/tlssecret"
)

// VerifyServed accepts a served chain whose leaf names serverName and
// which caPEM trusts or whose leaf is pinned, whatever the certificates'
// validity dates: an expired certificate is a warning, not a reason to stop
// managing the cluster (it stays Active), and a rotation is how it gets
// fixed, so the reload must reach a node that serves one.
func VerifyServed(chain []*x509.Certificate, serverName string, caPEM []byte, pins []string) (Served, error) {
	if len(chain) == 0 {
		return Served{}, errors.New("node presented no certificate")
	}
	leaf := chain[0]
	if err := leaf.VerifyHostname(serverName); err != nil {
		return Served{}, fmt.Errorf("served certificate: %w", err)
	}
	ders := make([][]byte, len(chain))
	for i, c := range chain {
		ders[i] = c.Raw
	}
	s := Served{
		Fingerprint: tlssecret.Fingerprint(leaf.Raw),
		NotAfter:    leaf.NotAfter,
		Trusted:     tlssecret.Trusts(caPEM, ders),
	}
	if !s.Trusted && !slices.Contains(pins, s.Fingerprint) {
		return Served{}, fmt.Errorf("%w (leaf %s, issuer %q)", errNotTrusted, ShortFingerprint(s.Fingerprint), leaf.Issuer.String())
	}
	return s, nil
}

func ShortFingerprint(fp string) string {
	if len(fp) > 16 {
		return fp[:16]
	}
	return fp
}
