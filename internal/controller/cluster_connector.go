package controller

import (
	"context"

	"github.com/gomomento/valkey-operator/internal/tlssecret"
)

// clusterConnector is how the cluster controller reaches its nodes: as
// the operator user and, on TLS, verified against the valid Secret's CA, or
// while that is invalid against the CA the nodes run with, or a leaf the
// operator verified before.
func (r *ClusterReconciler) clusterConnector(ctx context.Context, s *clusterScope) (*connector, error) {
	conn := &connector{cluster: s.vc, domain: r.Options.ClusterDomain, password: s.passwords.Operator, dialer: r.Dialer, pool: r.pool}
	if s.tls.Secret == nil && s.nodeCA == nil {
		return conn, nil
	}
	conn.caPEM = s.nodeCA
	if s.tls.Secret != nil {
		conn.caPEM = s.tls.Secret.Data[tlssecret.KeyCA]
	}
	var err error
	if conn.pins, err = r.verifiedLeaves(ctx, s.rc); err != nil {
		return nil, err
	}
	return conn, nil
}
