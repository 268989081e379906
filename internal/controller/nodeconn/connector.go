package nodeconn

import (
	"context"
	"crypto/sha256"
	"crypto/x509"
	"encoding/hex"
	"fmt"
	"net"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	valkeyv1 "github.com/gomomento/valkey-operator/api/v1alpha1"
	"github.com/gomomento/valkey-operator/internal/controller/watch"
	"github.com/gomomento/valkey-operator/internal/render"
	"github.com/gomomento/valkey-operator/internal/tlsreload"
	"github.com/gomomento/valkey-operator/internal/tlssecret"
	"github.com/gomomento/valkey-operator/internal/topology"
	"github.com/gomomento/valkey-operator/internal/valkey"
)

// DialFunc opens a connection to a node.
type DialFunc = func(ctx context.Context, network, addr string) (net.Conn, error)

// Connector dials the nodes of one cluster as the operator's system user:
// at the pod IP, and in TLS mode verified against the cluster's CA with the
// pod's FQDN as server name. There is no plaintext fallback.
type Connector struct {
	Cluster  *valkeyv1.ValkeyCluster
	Domain   string
	Password string
	CAPEM    []byte // nil for plaintext clusters
	// Pins are fingerprints of leaves the operator has verified nodes
	// serving; they keep a node reachable while a CA rotation that skipped
	// the bundle step is being pushed to it.
	Pins   []string
	Dialer DialFunc
	// Pool keeps connections for the next visit; nil dials every time.
	Pool *valkey.Pool
}

// Target is how the node named name, at ip, is dialed.
func (c *Connector) Target(name, ip string) valkey.Target {
	t := valkey.Target{
		Address:  net.JoinHostPort(ip, fmt.Sprint(render.PortValkey)),
		Username: render.OperatorUser,
		Password: c.Password,
		Dialer:   c.Dialer,
	}
	if c.Cluster.Spec.TLS != nil {
		serverName := render.PodFQDN(name, c.Cluster.Name, c.Cluster.Namespace, c.Domain)
		t.TLS = &valkey.TLS{
			CA:         c.CAPEM,
			ServerName: serverName,
			// Expiry is warn-only: a cluster whose certificate expired is
			// still managed, with the chain and hostname verified.
			Verify: func(chain []*x509.Certificate) error {
				_, err := tlsreload.VerifyServed(chain, serverName, c.CAPEM, c.Pins)
				return err
			},
		}
	}
	return t
}

// Dial reaches a node, through the pool when the connector has one.
func (c *Connector) Dial(ctx context.Context, name, ip string) (*valkey.Node, error) {
	n, err := c.Pool.Dial(ctx, c.poolKey(name, ip), c.Target(name, ip))
	if err != nil {
		return nil, fmt.Errorf("connecting to node %s at %s: %w", name, ip, err)
	}
	return n, nil
}

// poolKey names everything a connection to the node is made with, so a
// kept connection is lent only to a visit that would have made the very
// same one: a new password, CA or pinned leaf is a new key.
func (c *Connector) poolKey(name, ip string) string {
	h := sha256.New()
	for _, part := range []string{c.Cluster.Namespace, c.Cluster.Name, name, ip, c.Domain, c.Password, string(c.CAPEM), strings.Join(c.Pins, ",")} {
		h.Write([]byte(part))
		h.Write([]byte{0})
	}
	return hex.EncodeToString(h.Sum(nil))
}

// DialLoader reaches a restore's scratch server (loader): its own default
// user, plaintext (see docs/backup.md), at the pod's IP.
func (c *Connector) DialLoader(ctx context.Context, name, ip, password string) (*valkey.Node, error) {
	n, err := valkey.Dial(ctx, valkey.Target{
		Address:  net.JoinHostPort(ip, fmt.Sprint(render.PortValkey)),
		Password: password,
		Dialer:   c.Dialer,
	})
	if err != nil {
		return nil, fmt.Errorf("connecting to restore loader %s at %s: %w", name, ip, err)
	}
	return n, nil
}

// ForCluster is how every controller but the cluster controller (which
// has the passwords and the copy Secret already) reaches a cluster's
// nodes: as the operator user and, for a TLS cluster, verified against the
// copy Secret's CA or a leaf the operator verified before.
func ForCluster(ctx context.Context, c client.Reader, vc *valkeyv1.ValkeyCluster, domain string, dialer DialFunc, pool *valkey.Pool) (*Connector, error) {
	password, err := OperatorPassword(ctx, c, vc)
	if err != nil {
		return nil, err
	}
	conn := &Connector{Cluster: vc, Domain: domain, Password: password, Dialer: dialer, Pool: pool}
	if vc.Spec.TLS != nil {
		var copySecret corev1.Secret
		if err := c.Get(ctx, client.ObjectKey{Namespace: vc.Namespace, Name: render.NodeTLSSecretName(vc.Name)}, &copySecret); err != nil {
			return nil, fmt.Errorf("reading Secret %s: %w", render.NodeTLSSecretName(vc.Name), err)
		}
		conn.CAPEM = copySecret.Data[tlssecret.KeyCA]
		conn.Pins = ParsePins(copySecret.Annotations[valkeyv1.AnnotationVerifiedLeaves])
	}
	return conn, nil
}

// OperatorPassword reads the password of the operator's system user from
// the cluster's {cluster}-operator-auth Secret.
func OperatorPassword(ctx context.Context, c client.Reader, vc *valkeyv1.ValkeyCluster) (string, error) {
	passwords, err := ClusterPasswords(ctx, c, vc)
	if err != nil {
		return "", err
	}
	return passwords.Operator, nil
}

// ClusterPasswords reads the system users' passwords from the cluster's
// {cluster}-operator-auth Secret.
func ClusterPasswords(ctx context.Context, c client.Reader, vc *valkeyv1.ValkeyCluster) (render.Passwords, error) {
	name := render.OperatorAuthSecretName(vc.Name)
	var auth corev1.Secret
	if err := c.Get(ctx, client.ObjectKey{Namespace: vc.Namespace, Name: name}, &auth); err != nil {
		return render.Passwords{}, fmt.Errorf("reading Secret %s: %w", name, err)
	}
	passwords, err := render.PasswordsFromSecret(&auth)
	if err != nil {
		return render.Passwords{}, fmt.Errorf("secret %s: %w", name, err)
	}
	return passwords, nil
}

// RunningPods are the cluster's pods that can answer, sorted by name.
func RunningPods(ctx context.Context, c client.Reader, vc *valkeyv1.ValkeyCluster) ([]*corev1.Pod, error) {
	var list corev1.PodList
	if err := c.List(ctx, &list, watch.OfCluster(vc.Namespace, vc.Name)...); err != nil {
		return nil, fmt.Errorf("listing pods: %w", err)
	}
	var out []*corev1.Pod
	for i := range list.Items {
		p := &list.Items[i]
		if p.Labels[valkeyv1.LabelManagedBy] == valkeyv1.LabelManagedByValue && PodState(p).Phase == topology.PodRunning {
			out = append(out, &list.Items[i])
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}
