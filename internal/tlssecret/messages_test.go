package tlssecret

import (
	"testing"
	"time"
)

// The documented templates, spelled out so a change to a constructor fails
// here rather than in a user's alert rule.
func TestMessagesByteExact(t *testing.T) {
	notAfter := time.Date(2030, 1, 2, 3, 4, 5, 0, time.FixedZone("X", 3600))
	for _, tc := range []struct{ got, want string }{
		{SecretNotFoundMessage("s", "ns"), `TLS Secret "s" not found in namespace "ns"`},
		{SecretEmptyMessage("s"), `TLS Secret "s" has no data`},
		{MissingKeyMessage("s", "ca.crt"), `TLS Secret "s" missing required key "ca.crt"`},
		{CertNotPEMMessage("s"), `TLS Secret "s": tls.crt is not valid PEM`},
		{CertNotX509Message("s"), `TLS Secret "s": tls.crt is not a valid X.509 certificate`},
		{MissingSANMessage("s", "*.c.ns.svc.cluster.local"), `TLS cert in Secret "s" missing SAN "*.c.ns.svc.cluster.local"`},
		{KeyMismatchMessage("s"), `TLS Secret "s": tls.key does not match tls.crt`},
		{CANotPEMMessage("s"), `TLS Secret "s": ca.crt is not valid PEM`},
		{CertNotSignedByCAMessage("s"), `TLS Secret "s": tls.crt is not signed by a CA in ca.crt`},
		{MissingClientAuthMessage("s"), `TLS cert in Secret "s" lacks extended key usage "client auth": nodes cannot authenticate to peers, so the cluster bus and replication will fail`},
		{MissingServerAuthMessage("s"), `TLS cert in Secret "s" lacks extended key usage "server auth": peers and clients reject the certificate nodes serve, so the cluster bus, replication and client connections will fail`},
		{ExpiringSoonMessage("s", notAfter), `TLS cert in Secret "s" expires at 2030-01-02T02:04:05Z, within 30 days`},
		{ExpiredMessage("s", notAfter), `TLS cert in Secret "s" expired at 2030-01-02T02:04:05Z`},
		{notYetValidMessage("s", notAfter), `TLS cert in Secret "s" is not valid before 2030-01-02T02:04:05Z`},
		{ServedCertNotTrustedMessage("s", []string{"c-0-0", "c-1-0"}), `ca.crt in TLS Secret "s" does not trust the certificate served by c-0-0, c-1-0; keep the old and the new CA together in ca.crt until every node serves a certificate from the new CA`},
	} {
		if tc.got != tc.want {
			t.Errorf("got  %s\nwant %s", tc.got, tc.want)
		}
	}
}
