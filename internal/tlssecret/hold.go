package tlssecret

import (
	"bytes"
	"crypto/x509"
	"slices"
)

// Material is the part of a TLS Secret that decides trust between nodes.
type Material struct {
	// Cert is tls.crt: the leaf, then any intermediates.
	Cert []byte
	// CA is ca.crt.
	CA []byte
}

// CABundleMissing returns, sorted, the fingerprints of leaves the nodes
// serve, or may still serve, that next's ca.crt cannot be shown to trust;
// none means next may replace mounted, the material every node mounts.
// Pushing ca.crt that does not trust them splits the nodes: those that
// reloaded reject those that have not, on the cluster bus and replication.
//
// The rule, from what is recorded:
//   - nothing is mounted yet: nothing to protect;
//   - next's ca.crt keeps every CA of mounted's: trust only grows, whatever
//     the nodes serve (a leaf renewal under the same CA, the bundle step);
//   - otherwise mounted's leaf, which nodes serve once they have reloaded,
//     must chain to next's ca.crt (with mounted's intermediates);
//   - and so must every leaf the nodes were last seen serving (served,
//     the reloader's verified leaves) other than mounted's and next's. Only
//     their fingerprints are recorded, so they cannot be checked: a CA
//     dropped while a node may still serve an older leaf holds, until the
//     reloader has seen every node serve mounted's leaf.
func CABundleMissing(mounted *Material, next Material, served []string) []string {
	if mounted == nil || keepsEveryCA(mounted.CA, next.CA) {
		return nil
	}
	leaf, inters := splitPEM(mounted.Cert)
	if leaf == nil {
		return nil
	}
	current := Fingerprint(leaf)
	var out []string
	if !Trusts(next.CA, append([][]byte{leaf}, inters...)) {
		out = append(out, current)
	}
	nextLeaf := ""
	if l, _ := splitPEM(next.Cert); l != nil {
		nextLeaf = Fingerprint(l)
	}
	for _, fp := range served {
		if fp != current && fp != nextLeaf {
			out = append(out, fp)
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// keepsEveryCA reports whether every certificate in the bundle old is also
// in next, compared by their DER bytes so that re-encoding does not count
// as a change.
func keepsEveryCA(old, next []byte) bool {
	kept := parseCertificates(next)
	for _, c := range parseCertificates(old) {
		if !slices.ContainsFunc(kept, func(k *x509.Certificate) bool { return bytes.Equal(k.Raw, c.Raw) }) {
			return false
		}
	}
	return true
}
