package valkey

import (
	"context"
	"crypto/x509"
	"errors"
	"fmt"
)

// ServedCertificate does a bare TLS handshake with t (verified against
// t.TLS.CA and t.TLS.ServerName) and returns the chain the node presents,
// leaf first. It sends no command, so it needs no credentials: an observer
// holding only the CA can see which certificate a node serves. The TLS
// reloader confirms its reloads with it, passing t.TLS.Verify that also
// accepts pinned leaves, since mid-rotation ca.crt may not trust them.
func ServedCertificate(ctx context.Context, t Target) ([]*x509.Certificate, error) {
	if t.TLS == nil {
		return nil, errors.New("reading served certificate: target has no TLS settings")
	}
	cfg, err := t.TLS.ClientConfig()
	if err != nil {
		return nil, fmt.Errorf("reading served certificate of %s: %w", t.Address, err)
	}
	conn, err := dialConn(ctx, t, cfg)
	if err != nil {
		return nil, fmt.Errorf("reading served certificate: %w", err)
	}
	defer conn.Close()
	state := peerCertificates(conn)
	if len(state) == 0 {
		return nil, fmt.Errorf("reading served certificate of %s: no peer certificate", t.Address)
	}
	return state, nil
}
