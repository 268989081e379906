package valkey

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"time"
)

// defaultTimeout bounds dialing (TCP connect plus TLS handshake plus AUTH)
// and each command when Target.Timeout is zero.
const defaultTimeout = 5 * time.Second

// Target says how to reach and authenticate to one node.
type Target struct {
	// Address is "host:port", normally the pod IP and 6379.
	Address string
	// TLS, when set, makes every connection TLS, verified against TLS.CA
	// with TLS.ServerName. There is no plaintext fallback.
	TLS *TLS
	// Username and Password are sent with HELLO ... AUTH; an empty Username
	// with a Password authenticates as the default user.
	Username string
	Password string
	// Dialer opens the TCP connection; nil uses net.Dialer. TLS is layered
	// on top of whatever it returns.
	Dialer func(ctx context.Context, network, addr string) (net.Conn, error)
	// Timeout overrides defaultTimeout.
	Timeout time.Duration
	// KeepAlive overrides keepAlive: the TCP keep-alive period, and how
	// long a connection is idle before valkey-go PINGs the node.
	KeepAlive time.Duration
}

// TLS is the trust material for a TLS target. The operator presents no
// client certificate.
type TLS struct {
	// CA is PEM: the ca.crt of the cluster's TLS Secret, possibly a bundle.
	CA []byte
	// ServerName is checked against the served certificate's SANs: the
	// pod's FQDN, since the address is a pod IP that no SAN names.
	ServerName string
	// Verify, when set, replaces the standard chain check, which rejects
	// expired certificates: a node serving an expired certificate must still
	// be manageable, so its rotation can be pushed to it. Verify gets the
	// served chain and must return an error unless it is acceptable. The
	// hostname is always checked against ServerName before Verify runs.
	Verify func(chain []*x509.Certificate) error
}

func (t Target) keepAlive() time.Duration {
	if t.KeepAlive > 0 {
		return t.KeepAlive
	}
	return keepAlive
}

func (t Target) timeout() time.Duration {
	if t.Timeout > 0 {
		return t.Timeout
	}
	return defaultTimeout
}

// ClientConfig builds the crypto/tls configuration for t: verification
// against the CA only (no system roots), hostname check on ServerName.
func (t *TLS) ClientConfig() (*tls.Config, error) {
	if t.ServerName == "" {
		return nil, errors.New("TLS target needs a server name to verify the certificate against")
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(t.CA) {
		return nil, fmt.Errorf("TLS target %s: CA PEM holds no certificate", t.ServerName)
	}
	cfg := &tls.Config{
		RootCAs:    pool,
		ServerName: t.ServerName,
		MinVersion: tls.VersionTLS12,
	}
	if t.Verify != nil {
		// The built-in check is replaced, not skipped: VerifyConnection runs
		// on every handshake and fails it unless the hostname and Verify pass.
		cfg.InsecureSkipVerify = true
		verify, name := t.Verify, t.ServerName
		cfg.VerifyConnection = func(cs tls.ConnectionState) error {
			if len(cs.PeerCertificates) == 0 {
				return errors.New("server presented no certificate")
			}
			if err := cs.PeerCertificates[0].VerifyHostname(name); err != nil {
				return err
			}
			return verify(cs.PeerCertificates)
		}
	}
	return cfg, nil
}

// dialConn opens one connection to t: TCP through t.Dialer, then a TLS
// handshake when t.TLS is set. A failed handshake closes the connection;
// nothing is ever sent in plaintext to a TLS target.
func dialConn(ctx context.Context, t Target, tlsConfig *tls.Config) (net.Conn, error) {
	ctx, cancel := context.WithTimeout(ctx, t.timeout())
	defer cancel()
	dial := t.Dialer
	if dial == nil {
		d := &net.Dialer{KeepAlive: t.keepAlive()}
		dial = d.DialContext
	}
	raw, err := dial(ctx, "tcp", t.Address)
	if err != nil {
		return nil, fmt.Errorf("connecting to %s: %w", t.Address, err)
	}
	if tlsConfig == nil {
		return raw, nil
	}
	conn := tls.Client(raw, tlsConfig.Clone())
	if err := conn.HandshakeContext(ctx); err != nil {
		_ = raw.Close()
		return nil, fmt.Errorf("TLS handshake with %s as %q: %w", t.Address, tlsConfig.ServerName, err)
	}
	return conn, nil
}

// peerCertificates returns the peer chain of a TLS connection from dialConn.
func peerCertificates(conn net.Conn) []*x509.Certificate {
	tc, ok := conn.(*tls.Conn)
	if !ok {
		return nil
	}
	return tc.ConnectionState().PeerCertificates
}
