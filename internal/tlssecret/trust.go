package tlssecret

import (
	"crypto/x509"
	"slices"
	"time"
)

// Trusts reports whether the CA bundle caPEM trusts a served chain (DER,
// leaf first, as in tls.ConnectionState.PeerCertificates). Expiry and
// extended key usage are ignored: the question is only whether a node using
// this bundle would accept the issuer, which is what breaks when a CA is
// rotated without the bundle step.
func Trusts(caPEM []byte, servedChain [][]byte) bool {
	if len(servedChain) == 0 {
		return false
	}
	roots := parseCertificates(caPEM)
	if len(roots) == 0 {
		return false
	}
	leaf, err := x509.ParseCertificate(servedChain[0])
	if err != nil {
		return false
	}
	return verifiesAtSomeTime(leaf, parseDER(servedChain[1:]), roots)
}

// untrustedNodes returns, sorted, the keys of served (node name to served
// chain) whose chain caPEM does not trust.
func untrustedNodes(caPEM []byte, served map[string][][]byte) []string {
	var out []string
	for node, chain := range served {
		if !Trusts(caPEM, chain) {
			out = append(out, node)
		}
	}
	slices.Sort(out)
	return out
}

// verifiesAtSomeTime reports whether leaf chains to one of roots at any
// instant of its validity. Expiry is reported as a warning elsewhere, so it
// must not turn into a trust failure here. A chain is valid at some instant
// exactly when it is valid at the latest notBefore among its certificates,
// so trying every notBefore inside the leaf's window is enough.
func verifiesAtSomeTime(leaf *x509.Certificate, intermediates, roots []*x509.Certificate) bool {
	rootPool := x509.NewCertPool()
	for _, c := range roots {
		rootPool.AddCert(c)
	}
	interPool := x509.NewCertPool()
	for _, c := range intermediates {
		interPool.AddCert(c)
	}

	times := []time.Time{leaf.NotBefore}
	for _, group := range [][]*x509.Certificate{intermediates, roots} {
		for _, c := range group {
			if c.NotBefore.After(leaf.NotBefore) && !c.NotBefore.After(leaf.NotAfter) {
				times = append(times, c.NotBefore)
			}
		}
	}
	slices.SortFunc(times, func(a, b time.Time) int { return a.Compare(b) })
	times = slices.CompactFunc(times, time.Time.Equal)

	for _, t := range times {
		_, err := leaf.Verify(x509.VerifyOptions{
			Roots:         rootPool,
			Intermediates: interPool,
			CurrentTime:   t,
			KeyUsages:     []x509.ExtKeyUsage{x509.ExtKeyUsageAny},
		})
		if err == nil {
			return true
		}
	}
	return false
}
