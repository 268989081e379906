package controller

import (
	"crypto/tls"

	"sigs.k8s.io/controller-runtime/pkg/metrics/filters"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
)

// MetricsServer configures the operator's /metrics endpoint at addr ("0"
// turns it off). Secure, it serves HTTPS and answers only a caller whose
// bearer token the apiserver authenticates (a TokenReview) and authorizes
// to get the non-resource URL /metrics (a SubjectAccessReview): the metrics
// name every cluster and namespace the operator serves. The certificate is
// tls.crt and tls.key in certDir, or a self-signed one when certDir is
// empty. Not secure, it serves plain HTTP to anyone who can connect.
func MetricsServer(addr string, secure bool, certDir string) metricsserver.Options {
	opts := metricsserver.Options{BindAddress: addr, SecureServing: secure}
	if !secure {
		return opts
	}
	opts.FilterProvider = filters.WithAuthenticationAndAuthorization
	// HTTP/2 adds attack surface (rapid reset, CVE-2023-44487) and
	// nothing a scrape needs.
	opts.TLSOpts = []func(*tls.Config){func(c *tls.Config) { c.NextProtos = []string{"http/1.1"} }}
	if certDir != "" {
		opts.CertDir, opts.CertName, opts.KeyName = certDir, "tls.crt", "tls.key"
	}
	return opts
}
