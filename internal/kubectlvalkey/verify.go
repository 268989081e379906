package kubectlvalkey

import (
	"context"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"sort"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	valkeyv1 "github.com/gomomento/valkey-operator/api/v1alpha1"
	"github.com/gomomento/valkey-operator/internal/dnsname"
	"github.com/gomomento/valkey-operator/internal/render"
	"github.com/gomomento/valkey-operator/internal/tlssecret"
)

const (
	defaultClusterDomain = tlssecret.DefaultClusterDomain
	defaultTimeout       = 5 * time.Second
)

// Names of the checks, as printed and as CheckError.Check. A node's check
// is CheckNodePrefix followed by its pod name.
const (
	CheckTLSPing             = "tls-ping"
	CheckPlaintextRefused    = "plaintext-refused"
	CheckSystemRootsRejected = "system-roots-rejected"
	CheckOtherCARejected     = "other-ca-rejected"
	CheckNodes               = "nodes"
	CheckNodePrefix          = "node/"
)

// verifier proves a TLS cluster's setup from a client's side, as the TLS
// guide's "Verifying TLS end to end" does by hand.
type verifier struct {
	Client    client.Reader
	Namespace string
	Cluster   string
	// ClusterDomain is the DNS suffix of Service and pod names.
	ClusterDomain string
	// CA, when set, replaces ca.crt of the cluster's TLS Secret.
	CA []byte
	// User and Password authenticate before PING; an empty User with a
	// Password authenticates as the default user.
	User     string
	Password string
	// Address, when set, is where the Service is reached (a port-forward);
	// pods are then not dialled.
	Address  string
	Dialer   DialFunc
	Resolver ResolveFunc
	Timeout  time.Duration
	Out      io.Writer
	// SystemRoots replaces the system trust store; nil uses it.
	SystemRoots *x509.CertPool
}

// subject is what the checks are run against.
type subject struct {
	service    string // the Service's DNS name: the ServerName clients use
	address    string // where the Service checks dial
	caPEM      []byte
	secret     string
	secretLeaf string // fingerprint of tls.crt in the Secret; empty when unread
	pods       []corev1.Pod
}

// verify runs every check, printing a line for each, and returns a
// *CheckError naming the first failure. Other errors mean the checks could
// not start.
func (v *verifier) verify(ctx context.Context) error {
	if v.Out == nil {
		v.Out = io.Discard
	}
	s, err := v.load(ctx)
	if err != nil {
		return err
	}
	checks := []check{
		{CheckTLSPing, func(ctx context.Context) outcome { return v.tlsPing(ctx, s) }},
		{CheckPlaintextRefused, func(ctx context.Context) outcome { return v.plaintextRefused(ctx, s) }},
		{CheckSystemRootsRejected, func(ctx context.Context) outcome { return v.systemRootsRejected(ctx, s) }},
		{CheckOtherCARejected, func(ctx context.Context) outcome { return v.otherCARejected(ctx, s) }},
	}
	checks = append(checks, v.nodeChecks(s)...)
	if err := runChecks(ctx, v.Out, checks); err != nil {
		return err
	}
	fmt.Fprintf(v.Out, "all %d checks passed\n", len(checks))
	return nil
}

// load reads the cluster, its Secret and its pods, and picks the address.
func (v *verifier) load(ctx context.Context) (*subject, error) {
	var vc valkeyv1.ValkeyCluster
	key := client.ObjectKey{Namespace: v.Namespace, Name: v.Cluster}
	if err := v.Client.Get(ctx, key, &vc); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, fmt.Errorf("ValkeyCluster %s not found", key)
		}
		return nil, fmt.Errorf("reading ValkeyCluster %s: %w", key, err)
	}
	if vc.Spec.TLS == nil {
		return nil, fmt.Errorf("ValkeyCluster %s has no spec.tls: it is a plaintext cluster, there is no TLS to verify", key)
	}
	s := &subject{
		service: dnsname.Service(v.Cluster, v.Namespace, v.domain()),
		secret:  vc.Spec.TLS.SecretRef,
		caPEM:   v.CA,
	}
	caSource := "--ca"
	var secret corev1.Secret
	switch err := v.Client.Get(ctx, client.ObjectKey{Namespace: v.Namespace, Name: s.secret}, &secret); {
	case err == nil:
		if info, err := tlssecret.Inspect(s.secret, &secret); err == nil {
			s.secretLeaf = info.Leaf.Fingerprint
		}
		if s.caPEM == nil {
			s.caPEM, caSource = secret.Data[tlssecret.KeyCA], fmt.Sprintf("ca.crt of Secret %s", s.secret)
		}
	case s.caPEM == nil:
		return nil, fmt.Errorf("reading TLS Secret %s/%s for its ca.crt (or pass --ca): %w", v.Namespace, s.secret, err)
	default:
		fmt.Fprintf(v.Out, "note: cannot read TLS Secret %s/%s (%v); served certificates are not compared with its tls.crt\n", v.Namespace, s.secret, err)
	}
	if !x509.NewCertPool().AppendCertsFromPEM(s.caPEM) {
		return nil, fmt.Errorf("%s holds no PEM certificate", caSource)
	}

	var pods corev1.PodList
	if err := v.Client.List(ctx, &pods, client.InNamespace(v.Namespace), client.MatchingLabels(render.ClusterSelector(v.Cluster))); err != nil {
		return nil, fmt.Errorf("listing the pods of ValkeyCluster %s: %w", key, err)
	}
	s.pods = pods.Items
	sort.Slice(s.pods, func(i, j int) bool { return s.pods[i].Name < s.pods[j].Name })

	how, err := v.pickAddress(ctx, s)
	if err != nil {
		return nil, err
	}
	fmt.Fprintf(v.Out, "ValkeyCluster %s, Service %s\n", key, s.service)
	fmt.Fprintf(v.Out, "dialing %s (%s), verifying against %s\n", s.address, how, caSource)
	return s, nil
}

// pickAddress decides where the Service checks dial: --address; else the
// Service name as cluster DNS answers it (inside the cluster); else a pod IP,
// which a routable pod network reaches without cluster DNS.
func (v *verifier) pickAddress(ctx context.Context, s *subject) (string, error) {
	port := strconv.Itoa(int(render.PortValkey))
	if v.Address != "" {
		if _, _, err := net.SplitHostPort(v.Address); err != nil {
			return "", usageErrorf("verify-tls: --address %q: %v", v.Address, err)
		}
		s.address = v.Address
		return "from --address", nil
	}
	rctx, cancel := context.WithTimeout(ctx, v.timeout())
	defer cancel()
	addrs, rerr := v.resolver()(rctx, s.service)
	if rerr == nil && len(addrs) > 0 {
		s.address = net.JoinHostPort(addrs[0], port)
		return "the Service name resolved", nil
	}
	for _, p := range s.pods {
		if p.Status.PodIP != "" {
			s.address = net.JoinHostPort(p.Status.PodIP, port)
			return fmt.Sprintf("pod %s directly: the Service name does not resolve here: %v", p.Name, rerr), nil
		}
	}
	return "", fmt.Errorf("cannot reach Service %s: it does not resolve here (%v) and no pod of the cluster has an IP", s.service, rerr)
}

func (v *verifier) domain() string {
	if v.ClusterDomain == "" {
		return defaultClusterDomain
	}
	return v.ClusterDomain
}

func (v *verifier) timeout() time.Duration {
	if v.Timeout > 0 {
		return v.Timeout
	}
	return defaultTimeout
}

func (v *verifier) dialer() DialFunc {
	if v.Dialer != nil {
		return v.Dialer
	}
	d := &net.Dialer{}
	return d.DialContext
}

func (v *verifier) resolver() ResolveFunc {
	if v.Resolver != nil {
		return v.Resolver
	}
	return net.DefaultResolver.LookupHost
}

func readCAFile(path string) ([]byte, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("reading --ca: %w", err)
	}
	if !x509.NewCertPool().AppendCertsFromPEM(b) {
		return nil, errors.New("reading --ca: " + path + " holds no PEM certificate")
	}
	return b, nil
}
