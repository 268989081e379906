package realnode

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"

	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// DNSPort is the port the node's CoreDNS serves on, at Node.DNS.
const DNSPort = 53

// defaultClusterDomain is the kubelet's and CoreDNS's domain when
// Options.ClusterDomain is empty.
const defaultClusterDomain = "cluster.local"

// corednsRules are what CoreDNS's kubernetes plugin watches: Services and
// their EndpointSlices for Service and headless names, namespaces, and
// pods for "pods verified" (a pod's A record only while the pod exists).
var corednsRules = []rbacv1.PolicyRule{
	{APIGroups: []string{""}, Resources: []string{"services", "endpoints", "namespaces", "pods"}, Verbs: []string{"list", "watch"}},
	{APIGroups: []string{"discovery.k8s.io"}, Resources: []string{"endpointslices"}, Verbs: []string{"list", "watch"}},
}

func (n *Node) dnsPath(name string) string { return filepath.Join(n.dir, "coredns", name) }

// corefile serves the cluster domain and the reverse zones at addr:53 from
// the control plane, and nothing else: the machines running these nodes
// resolve no outside names, so no query is forwarded (others are refused).
func corefile(addr net.IP, domain, kubeconfig string, readyPort int) string {
	return strings.Join([]string{
		fmt.Sprintf("%s:%d in-addr.arpa:%d ip6.arpa:%d {", domain, DNSPort, DNSPort, DNSPort),
		"    bind " + addr.String(),
		"    errors",
		fmt.Sprintf("    ready 127.0.0.1:%d", readyPort),
		"    kubernetes " + domain + " in-addr.arpa ip6.arpa {",
		"        kubeconfig " + kubeconfig,
		"        pods verified",
		"        ttl 5",
		"    }",
		"}",
		"",
	}, "\n")
}

// startDNS runs CoreDNS on the bridge's gateway address, which the pods
// reach and no other run's pods use, with a user that may read what the
// kubernetes plugin watches, and waits until it is ready (its caches
// synced).
func (n *Node) startDNS(ctx context.Context) error {
	bin := filepath.Join(n.opts.BinDir, "coredns")
	if _, err := os.Stat(bin); err != nil {
		return fmt.Errorf("coredns: %w (make testbin)", err)
	}
	if err := os.MkdirAll(n.dnsPath(""), 0o700); err != nil {
		return err
	}
	user := "realnode:" + n.Name + ":coredns"
	role := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: user}, Rules: corednsRules}
	if _, err := n.client.RbacV1().ClusterRoles().Create(ctx, role, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("creating ClusterRole %s: %w", role.Name, err)
	}
	n.rbacObjects = append(n.rbacObjects, rbacObject{kind: "ClusterRole", name: role.Name})
	kubeconfig, err := n.componentUser(ctx, user, role.Name, n.dnsPath("kubeconfig"))
	if err != nil {
		return err
	}
	ready, err := freePort()
	if err != nil {
		return err
	}
	if err := os.WriteFile(n.dnsPath("Corefile"), []byte(corefile(n.DNS, n.ClusterDomain, kubeconfig, ready)), 0o644); err != nil {
		return err
	}
	d, err := startDaemon("coredns", filepath.Join(n.LogDir(), "coredns.log"), n.dnsPath(""), bin, "-conf", n.dnsPath("Corefile"))
	if err != nil {
		return err
	}
	n.dnsProc = d
	return waitServing(ctx, d, fmt.Sprintf("http://127.0.0.1:%d/ready", ready), n.opts.StartTimeout, "coredns to be ready")
}

// Resolver asks the node's CoreDNS, as the pods do: for clients on this
// machine that dial pods and Services by name.
func (n *Node) Resolver() *net.Resolver {
	addr := net.JoinHostPort(n.DNS.String(), fmt.Sprint(DNSPort))
	return &net.Resolver{
		PreferGo: true,
		Dial: func(ctx context.Context, network, _ string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, network, addr)
		},
	}
}
