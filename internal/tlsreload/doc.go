// Package tlsreload decides what the TLS reload controller does and
// reports: which material a Secret or a node's files hold, whether a
// served chain is trusted or pinned, what one node needs next, what a pass
// over a cluster means for the CertificatesServed condition, its Events
// and when to look again, and which served leaves stay pinned. It talks
// to neither Kubernetes nor Valkey, so every rule has a table test;
// internal/controller dials the nodes and acts on what it decides.
package tlsreload
