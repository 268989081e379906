package tlssecret

import (
	"reflect"
	"testing"

	"github.com/gomomento/valkey-operator/internal/testcerts"
)

func TestCABundleMissing(t *testing.T) {
	oldCA, newCA, otherCA := testcerts.NewCA("old-ca"), testcerts.NewCA("new-ca"), testcerts.NewCA("other-ca")
	inter := oldCA.Intermediate("old-intermediate")
	oldLeaf := testcerts.Leaf(oldCA, cluster, namespace, domain)
	renewed := testcerts.Leaf(oldCA, cluster, namespace, domain)
	newLeaf := testcerts.Leaf(newCA, cluster, namespace, domain)
	interLeaf := testcerts.Leaf(inter, cluster, namespace, domain)
	fp := func(l *testcerts.LeafCert) string { return Fingerprint(l.Cert.Raw) }
	m := func(l *testcerts.LeafCert, ca []byte) Material { return Material{Cert: l.CertPEM, CA: ca} }
	ptr := func(x Material) *Material { return &x }

	tests := []struct {
		name    string
		mounted *Material
		next    Material
		served  []string
		want    []string
	}{
		{name: "nothing mounted yet", next: m(newLeaf, newCA.CertPEM)},
		{name: "leaf renewal under the same CA",
			mounted: ptr(m(oldLeaf, oldCA.CertPEM)), next: m(renewed, oldCA.CertPEM), served: []string{fp(oldLeaf)}},
		{name: "leaf renewal while a node may still serve an older leaf",
			mounted: ptr(m(renewed, oldCA.CertPEM)), next: m(testcerts.Leaf(oldCA, cluster, namespace, domain), oldCA.CertPEM),
			served: []string{fp(oldLeaf), fp(renewed)}},
		{name: "the bundle step",
			mounted: ptr(m(oldLeaf, oldCA.CertPEM)), next: m(newLeaf, testcerts.Bundle(oldCA, newCA)), served: []string{fp(oldLeaf)}},
		{name: "the bundle in the other order",
			mounted: ptr(m(newLeaf, testcerts.Bundle(oldCA, newCA))), next: m(newLeaf, testcerts.Bundle(newCA, oldCA)),
			served: []string{fp(oldLeaf)}},
		{name: "bundle step skipped",
			mounted: ptr(m(oldLeaf, oldCA.CertPEM)), next: m(newLeaf, newCA.CertPEM), served: []string{fp(oldLeaf)},
			want: []string{fp(oldLeaf)}},
		{name: "bundle step skipped, nothing recorded yet",
			mounted: ptr(m(oldLeaf, oldCA.CertPEM)), next: m(newLeaf, newCA.CertPEM),
			want: []string{fp(oldLeaf)}},
		{name: "a held Secret fixed with the bundle",
			mounted: ptr(m(oldLeaf, oldCA.CertPEM)), next: m(newLeaf, testcerts.Bundle(newCA, oldCA)), served: []string{fp(oldLeaf)}},
		{name: "final step once every node serves the new leaf",
			mounted: ptr(m(newLeaf, testcerts.Bundle(oldCA, newCA))), next: m(newLeaf, newCA.CertPEM), served: []string{fp(newLeaf)}},
		{name: "final step while a node still serves the old leaf",
			mounted: ptr(m(newLeaf, testcerts.Bundle(oldCA, newCA))), next: m(newLeaf, newCA.CertPEM),
			served: []string{fp(oldLeaf), fp(newLeaf)}, want: []string{fp(oldLeaf)}},
		{name: "final step before the reloader saw any node serve the new leaf",
			mounted: ptr(m(newLeaf, testcerts.Bundle(oldCA, newCA))), next: m(newLeaf, newCA.CertPEM),
			served: []string{fp(oldLeaf)}, want: []string{fp(oldLeaf)}},
		{name: "final step with a newer leaf than the one mounted",
			mounted: ptr(m(newLeaf, testcerts.Bundle(oldCA, newCA))), next: m(testcerts.Leaf(newCA, cluster, namespace, domain), newCA.CertPEM),
			served: []string{fp(newLeaf)}},
		{name: "dropping a CA that signed nothing served",
			mounted: ptr(m(oldLeaf, testcerts.Bundle(oldCA, otherCA))), next: m(renewed, oldCA.CertPEM), served: []string{fp(oldLeaf)}},
		{name: "the mounted leaf chains through its intermediate",
			mounted: ptr(m(interLeaf, testcerts.Bundle(oldCA, otherCA))), next: m(renewed, oldCA.CertPEM), served: []string{fp(interLeaf)}},
		{name: "straight to an unrelated CA mid rotation names every leaf",
			mounted: ptr(m(newLeaf, testcerts.Bundle(oldCA, newCA))), next: m(testcerts.Leaf(otherCA, cluster, namespace, domain), otherCA.CertPEM),
			served: []string{fp(oldLeaf), fp(newLeaf)}, want: sorted(fp(oldLeaf), fp(newLeaf))},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := CABundleMissing(tc.mounted, tc.next, tc.served); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("CABundleMissing = %v, want %v", got, tc.want)
			}
		})
	}
}

func sorted(a, b string) []string {
	if a > b {
		a, b = b, a
	}
	return []string{a, b}
}
