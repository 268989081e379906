package dnsname

import (
	"crypto/x509"
	"slices"
	"testing"
)

func TestNames(t *testing.T) {
	for _, tt := range []struct {
		name                       string
		pod, cluster, ns, domain   string
		service, podName, wildcard string
	}{
		{"default domain", "c-1a2b3", "c", "ns", "",
			"c.ns.svc.cluster.local", "c-1a2b3.c.ns.svc.cluster.local", "*.c.ns.svc.cluster.local"},
		{"configured domain", "web-00000", "web", "prod", "example.internal",
			"web.prod.svc.example.internal", "web-00000.web.prod.svc.example.internal", "*.web.prod.svc.example.internal"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got := Service(tt.cluster, tt.ns, tt.domain); got != tt.service {
				t.Errorf("Service = %q, want %q", got, tt.service)
			}
			if got := Pod(tt.pod, tt.cluster, tt.ns, tt.domain); got != tt.podName {
				t.Errorf("Pod = %q, want %q", got, tt.podName)
			}
			if got := podWildcard(tt.cluster, tt.ns, tt.domain); got != tt.wildcard {
				t.Errorf("podWildcard = %q, want %q", got, tt.wildcard)
			}
			if got := SANs(tt.cluster, tt.ns, tt.domain); !slices.Equal(got, []string{tt.service, tt.wildcard}) {
				t.Errorf("SANs = %q, want %q", got, []string{tt.service, tt.wildcard})
			}
		})
	}
}

// A certificate carrying SANs is valid for every pod's name and for the
// Service, which is what a node's peers and clients check.
func TestSANsCoverPodsAndService(t *testing.T) {
	cert := &x509.Certificate{DNSNames: SANs("c", "ns", "")}
	for _, host := range []string{Pod("c-1a2b3", "c", "ns", ""), Pod("c-ffff0", "c", "ns", ""), Service("c", "ns", "")} {
		if err := cert.VerifyHostname(host); err != nil {
			t.Errorf("%s: %v", host, err)
		}
	}
	if err := cert.VerifyHostname(Pod("c-1a2b3", "other", "ns", "")); err == nil {
		t.Error("another cluster's pod name is covered")
	}
}
