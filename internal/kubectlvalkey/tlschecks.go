package kubectlvalkey

import (
	"bufio"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"

	valkeyv1 "github.com/gomomento/valkey-operator/api/v1alpha1"
	"github.com/gomomento/valkey-operator/internal/render"
	"github.com/gomomento/valkey-operator/internal/tlssecret"
	"github.com/gomomento/valkey-operator/internal/valkey"
)

// handshake dials addr and completes a TLS handshake with cfg.
func (v *verifier) handshake(ctx context.Context, addr string, cfg *tls.Config) (*tls.Conn, error) {
	ctx, cancel := context.WithTimeout(ctx, v.timeout())
	defer cancel()
	raw, err := v.dialer()(ctx, "tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("connecting to %s: %w", addr, err)
	}
	conn := tls.Client(raw, cfg)
	if err := conn.HandshakeContext(ctx); err != nil {
		_ = raw.Close()
		return nil, err
	}
	return conn, nil
}

// clusterTLS is the configuration of a client that trusts the cluster's
// CA, as the operator itself verifies nodes.
func clusterTLS(caPEM []byte, serverName string) (*tls.Config, error) {
	return (&valkey.TLS{CA: caPEM, ServerName: serverName}).ClientConfig()
}

// tlsPing is valkey-cli --tls --cacert ca.crt PING against the Service.
func (v *verifier) tlsPing(ctx context.Context, s *subject) outcome {
	cfg, err := clusterTLS(s.caPEM, s.service)
	if err != nil {
		return outcome{Err: err}
	}
	conn, err := v.handshake(ctx, s.address, cfg)
	if err != nil {
		return outcome{Err: fmt.Errorf("TLS handshake with %s as %q: %w", s.address, s.service, err)}
	}
	defer conn.Close()
	r := bufio.NewReader(conn)
	if v.Password != "" {
		args := []string{"AUTH", v.Password}
		if v.User != "" {
			args = []string{"AUTH", v.User, v.Password}
		}
		reply, err := command(conn, r, v.timeout(), args...)
		if err != nil {
			return outcome{Err: fmt.Errorf("after a verified handshake with %s: %w", s.address, err)}
		}
		if strings.HasPrefix(reply, "-") {
			return outcome{Err: fmt.Errorf("ACL problem, not TLS: the handshake verified, then AUTH was refused with %q; check --user and the password", reply)}
		}
	}
	reply, err := command(conn, r, v.timeout(), "PING")
	switch {
	case err != nil:
		return outcome{Err: fmt.Errorf("after a verified handshake with %s: %w", s.address, err)}
	case reply == "+PONG":
		return outcome{Detail: fmt.Sprintf("PONG over TLS from %s, verified as %s", s.address, s.service)}
	case isACLError(reply) && v.Password == "":
		return outcome{Err: fmt.Errorf("ACL problem, not TLS: the handshake verified, then PING got %q; pass --user and --password-file (or $%s)", reply, EnvPassword)}
	case isACLError(reply):
		return outcome{Err: fmt.Errorf("ACL problem, not TLS: the handshake verified, then PING got %q; the user lacks +ping", reply)}
	default:
		return outcome{Err: fmt.Errorf("PING over a verified TLS connection to %s got %q, want +PONG", s.address, reply)}
	}
}

// plaintextRefused is the same PING without TLS: it must not get an answer.
func (v *verifier) plaintextRefused(ctx context.Context, s *subject) outcome {
	dctx, cancel := context.WithTimeout(ctx, v.timeout())
	defer cancel()
	conn, err := v.dialer()(dctx, "tcp", s.address)
	if err != nil {
		return outcome{Detail: fmt.Sprintf("no plaintext connection to %s: %v", s.address, err)}
	}
	defer conn.Close()
	if err := conn.SetDeadline(time.Now().Add(v.timeout())); err != nil {
		return outcome{Err: err}
	}
	if _, err := conn.Write([]byte("*1\r\n$4\r\nPING\r\n")); err != nil {
		return outcome{Detail: fmt.Sprintf("%s dropped the plaintext connection: %v", s.address, err)}
	}
	buf := make([]byte, 256)
	n, err := conn.Read(buf)
	reply := buf[:n]
	var nerr net.Error
	switch {
	case looksLikeRESP(reply):
		line, _, _ := strings.Cut(string(reply), "\r\n")
		return outcome{Err: fmt.Errorf("%s answered %q in plaintext: the port accepts unencrypted connections", s.address, line)}
	case n > 0:
		return outcome{Detail: fmt.Sprintf("%s answered a plaintext PING with %d bytes of TLS, not PONG", s.address, n)}
	case errors.As(err, &nerr) && nerr.Timeout():
		return outcome{Detail: fmt.Sprintf("%s did not answer a plaintext PING within %s", s.address, v.timeout())}
	default:
		return outcome{Detail: fmt.Sprintf("%s closed the plaintext connection without answering", s.address)}
	}
}

// systemRootsRejected is the TLS PING without --cacert: a client trusting
// only the system roots must refuse the certificate.
func (v *verifier) systemRootsRejected(ctx context.Context, s *subject) outcome {
	cfg := &tls.Config{ServerName: s.service, RootCAs: v.SystemRoots, MinVersion: tls.VersionTLS12}
	return v.mustReject(ctx, s, cfg, "the system trust store")
}

// otherCARejected is the TLS PING with a CA that never signed anything.
func (v *verifier) otherCARejected(ctx context.Context, s *subject) outcome {
	pool, err := throwawayCA()
	if err != nil {
		return outcome{Err: err}
	}
	cfg := &tls.Config{ServerName: s.service, RootCAs: pool, MinVersion: tls.VersionTLS12}
	return v.mustReject(ctx, s, cfg, "a freshly generated CA")
}

// mustReject passes only when the handshake fails on certificate
// verification; any other failure proves nothing about verification.
func (v *verifier) mustReject(ctx context.Context, s *subject, cfg *tls.Config, trusting string) outcome {
	conn, err := v.handshake(ctx, s.address, cfg)
	if err == nil {
		conn.Close()
		return outcome{Err: fmt.Errorf("a client trusting only %s accepted the certificate %s serves as %s; clients that skip --cacert are not protected", trusting, s.address, s.service)}
	}
	var verr *tls.CertificateVerificationError
	if errors.As(err, &verr) {
		return outcome{Detail: fmt.Sprintf("trusting only %s, the handshake fails: %v", trusting, verr.Err)}
	}
	return outcome{Err: fmt.Errorf("the handshake failed before certificate verification, which proves nothing: %w", err)}
}

// nodeChecks check each pod's served certificate by its own name.
func (v *verifier) nodeChecks(s *subject) []check {
	if v.Address != "" {
		return []check{{CheckNodes, func(context.Context) outcome {
			return outcome{Detail: "skipped: with --address only the forwarded node is reachable; run from inside the cluster or a routable network to check every node"}
		}}}
	}
	if len(s.pods) == 0 {
		return []check{{CheckNodes, func(context.Context) outcome {
			return outcome{Err: fmt.Errorf("no pods labelled %s=%s", valkeyv1.LabelInstance, v.Cluster)}
		}}}
	}
	checks := make([]check, 0, len(s.pods))
	for i := range s.pods {
		pod := &s.pods[i]
		checks = append(checks, check{CheckNodePrefix + pod.Name, func(ctx context.Context) outcome { return v.node(ctx, s, pod) }})
	}
	return checks
}

// node verifies what one pod serves against the CA with the pod's own
// name, and compares it with the Secret's tls.crt.
func (v *verifier) node(ctx context.Context, s *subject, pod *corev1.Pod) outcome {
	if pod.Status.PodIP == "" {
		return outcome{Err: fmt.Errorf("pod has no IP (phase %s)", pod.Status.Phase)}
	}
	fqdn := render.PodFQDN(pod.Name, v.Cluster, v.Namespace, v.domain())
	addr := net.JoinHostPort(pod.Status.PodIP, strconv.Itoa(int(render.PortValkey)))
	cfg, err := clusterTLS(s.caPEM, fqdn)
	if err != nil {
		return outcome{Err: err}
	}
	conn, err := v.handshake(ctx, addr, cfg)
	if err != nil {
		o := outcome{Err: fmt.Errorf("%s as %s: %w", addr, fqdn, err)}
		// What is served all the same tells a stale or foreign certificate
		// apart from an unreachable node.
		if leaf := v.unverifiedLeaf(ctx, addr, fqdn); leaf != nil {
			o.Notes = append([]string{"served, unverified:"}, describeLeaf(leaf)...)
		}
		return o
	}
	defer conn.Close()
	leaf := conn.ConnectionState().PeerCertificates[0]
	o := outcome{
		Detail: fmt.Sprintf("%s serves a certificate verified as %s", addr, fqdn),
		Notes:  describeLeaf(leaf),
	}
	switch fp := tlssecret.Fingerprint(leaf.Raw); {
	case s.secretLeaf == "":
		o.Notes = append(o.Notes, "not compared with the Secret's tls.crt, which could not be read")
	case fp == s.secretLeaf:
		o.Notes = append(o.Notes, fmt.Sprintf("same as tls.crt in Secret %s", s.secret))
	default:
		o.Warn = fmt.Sprintf("serves a certificate other than tls.crt in Secret %s (sha256 %s): a rotation is in progress; see status.tls.nodesServingCurrent",
			s.secret, s.secretLeaf)
	}
	return o
}

// unverifiedLeaf is the leaf addr serves, read without verification; nil
// when even that handshake fails.
func (v *verifier) unverifiedLeaf(ctx context.Context, addr, serverName string) *x509.Certificate {
	conn, err := v.handshake(ctx, addr, &tls.Config{ServerName: serverName, InsecureSkipVerify: true, MinVersion: tls.VersionTLS12}) //nolint:gosec // only described, never trusted
	if err != nil {
		return nil
	}
	defer conn.Close()
	if certs := conn.ConnectionState().PeerCertificates; len(certs) > 0 {
		return certs[0]
	}
	return nil
}

func describeLeaf(c *x509.Certificate) []string {
	return []string{
		"subject   " + orDash(c.Subject.String()),
		"dnsNames  " + orDash(strings.Join(c.DNSNames, ", ")),
		"issuer    " + orDash(c.Issuer.String()),
		"notAfter  " + c.NotAfter.UTC().Format(time.RFC3339),
		"sha256    " + tlssecret.Fingerprint(c.Raw),
	}
}
