package tlssecret

import (
	"reflect"
	"testing"
	"time"

	"github.com/gomomento/valkey-operator/internal/testcerts"
)

func TestTrusts(t *testing.T) {
	oldCA := testcerts.NewCA("old-ca")
	newCA := testcerts.NewCA("new-ca")
	inter := newCA.Intermediate("new-intermediate")
	now := time.Now()

	oldLeaf := testcerts.Leaf(oldCA, cluster, namespace, domain)
	newLeaf := testcerts.Leaf(newCA, cluster, namespace, domain)
	interLeaf := testcerts.Leaf(inter, cluster, namespace, domain)
	expiredLeaf := testcerts.Leaf(oldCA, cluster, namespace, domain,
		testcerts.WithValidity(now.AddDate(0, 0, -90), now.AddDate(0, 0, -1)))
	noEKULeaf := testcerts.Leaf(oldCA, cluster, namespace, domain, testcerts.WithExtKeyUsages())

	tests := []struct {
		name  string
		ca    []byte
		chain [][]byte
		want  bool
	}{
		{"same CA", oldCA.CertPEM, oldLeaf.DER(), true},
		{"rotated CA, node not reloaded", newCA.CertPEM, oldLeaf.DER(), false},
		{"bundle trusts old leaf", testcerts.Bundle(oldCA, newCA), oldLeaf.DER(), true},
		{"bundle trusts new leaf", testcerts.Bundle(oldCA, newCA), newLeaf.DER(), true},
		{"served chain with intermediate", newCA.CertPEM, interLeaf.DER(), true},
		{"intermediate not served", newCA.CertPEM, interLeaf.DER()[:1], false},
		{"expiry ignored", oldCA.CertPEM, expiredLeaf.DER(), true},
		{"EKU ignored", oldCA.CertPEM, noEKULeaf.DER(), true},
		{"empty chain", oldCA.CertPEM, nil, false},
		{"garbage leaf", oldCA.CertPEM, [][]byte{[]byte("junk")}, false},
		{"garbage bundle", []byte("junk"), oldLeaf.DER(), false},
		{"empty bundle", nil, oldLeaf.DER(), false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := Trusts(tc.ca, tc.chain); got != tc.want {
				t.Errorf("Trusts = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestUntrustedNodes(t *testing.T) {
	oldCA := testcerts.NewCA("old-ca")
	newCA := testcerts.NewCA("new-ca")
	oldChain := testcerts.Leaf(oldCA, cluster, namespace, domain).DER()
	newChain := testcerts.Leaf(newCA, cluster, namespace, domain).DER()
	served := map[string][][]byte{
		"my-cluster-1-0": oldChain,
		"my-cluster-0-1": newChain,
		"my-cluster-0-0": oldChain,
	}

	if got := untrustedNodes(testcerts.Bundle(oldCA, newCA), served); got != nil {
		t.Errorf("bundle: got %q, want none", got)
	}
	want := []string{"my-cluster-0-0", "my-cluster-1-0"}
	if got := untrustedNodes(newCA.CertPEM, served); !reflect.DeepEqual(got, want) {
		t.Errorf("new CA only: got %q, want %q", got, want)
	}
}
