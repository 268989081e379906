package cluster

import (
	"context"

	"github.com/gomomento/valkey-operator/internal/controller/nodeconn"
	"github.com/gomomento/valkey-operator/internal/tlssecret"
)

// clusterConnector is how the cluster controller reaches its nodes: as
// the operator user and, on TLS, verified against the valid Secret's CA, or
// while that is invalid against the CA the nodes run with, or a leaf the
// operator verified before.
func (r *Reconciler) clusterConnector(ctx context.Context, s *clusterScope) (*nodeconn.Connector, error) {
	conn := &nodeconn.Connector{Cluster: s.vc, Domain: r.Options.ClusterDomain, Password: s.passwords.Operator, Dialer: r.Dialer, Pool: r.Pool}
	if s.tls.Secret == nil && s.nodeCA == nil {
		return conn, nil
	}
	conn.CAPEM = s.nodeCA
	if s.tls.Secret != nil {
		conn.CAPEM = s.tls.Secret.Data[tlssecret.KeyCA]
	}
	var err error
	if conn.Pins, err = r.verifiedLeaves(ctx, s.rc); err != nil {
		return nil, err
	}
	return conn, nil
}
