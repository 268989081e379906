package realnode

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	"sigs.k8s.io/yaml"

	"golang.org/x/sys/unix"
)

// kube-proxy's iptables chains (KUBE-SERVICES, KUBE-NODEPORTS, ...) are the
// machine's, not the node's: a second kube-proxy here would rewrite the
// first one's. A node running one holds this lock, in StateDir, for the
// kube-proxy's lifetime; another waits for it.
func proxyLockPath() string { return filepath.Join(StateDir, "kube-proxy.lock") }

// lockProxy takes the machine's kube-proxy lock, waiting until ctx ends
// for the run holding it to stop, and writes holder (who holds it, for
// the error of a run left waiting) into the lock file.
func lockProxy(ctx context.Context, holder string) (*os.File, error) {
	t := time.NewTicker(200 * time.Millisecond)
	defer t.Stop()
	for {
		f, err := tryLockProxy()
		if err != nil {
			return nil, err
		}
		if f != nil {
			if err := f.Truncate(0); err == nil {
				_, _ = f.WriteAt([]byte(holder), 0)
			}
			return f, nil
		}
		select {
		case <-ctx.Done():
			held, _ := os.ReadFile(proxyLockPath())
			return nil, fmt.Errorf("waiting for the kube-proxy of another run on this machine to stop (its chains are machine-wide; %s holds %s): %w", strings.TrimSpace(string(held)), proxyLockPath(), ctx.Err())
		case <-t.C:
		}
	}
}

// tryLockProxy takes the kube-proxy lock if it is free; nil when another
// run holds it.
func tryLockProxy() (*os.File, error) {
	if err := os.MkdirAll(StateDir, 0o700); err != nil {
		return nil, fmt.Errorf("kube-proxy lock: %w", err)
	}
	f, err := os.OpenFile(proxyLockPath(), os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return nil, fmt.Errorf("kube-proxy lock: %w", err)
	}
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		f.Close()
		if errors.Is(err, unix.EWOULDBLOCK) {
			return nil, nil
		}
		return nil, fmt.Errorf("kube-proxy lock: %w", err)
	}
	// The last run out removes StateDir: the file locked must still be
	// the one at the path.
	var held, at unix.Stat_t
	if unix.Fstat(int(f.Fd()), &held) != nil || unix.Stat(f.Name(), &at) != nil || held.Ino != at.Ino || held.Dev != at.Dev {
		f.Close()
		return nil, nil
	}
	return f, nil
}

// cleanupProxyRules removes every kube-proxy rule and chain of this
// machine (iptables, ip6tables, and the nftables and IPVS modes' too).
// Only the holder of the kube-proxy lock may: the rules are whoever runs
// kube-proxy now.
func cleanupProxyRules(bin string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, bin, "--cleanup", "--v=0").CombinedOutput()
	if err != nil {
		return fmt.Errorf("kube-proxy --cleanup: %w: %s", err, strings.TrimSpace(string(out)))
	}
	var errs []error
	for _, family := range []string{"iptables", "ip6tables"} {
		errs = append(errs, removeKubeChains(ctx, family))
	}
	return errors.Join(errs...)
}

// removeKubeChains removes the KUBE- chains kube-proxy --cleanup leaves
// (KUBE-FIREWALL, which it keeps for the kubelet, and the jumps to it):
// no kubelet here makes it (makeIPTablesUtilChains is off).
func removeKubeChains(ctx context.Context, family string) error {
	for _, table := range []string{"filter", "nat", "mangle"} {
		out, err := exec.CommandContext(ctx, family+"-save", "-t", table).Output()
		if err != nil {
			return fmt.Errorf("%s-save -t %s: %w", family, table, err)
		}
		var chains, jumps []string
		for _, l := range strings.Split(string(out), "\n") {
			if name, ok := strings.CutPrefix(l, ":KUBE-"); ok {
				chains = append(chains, "KUBE-"+strings.Fields(name)[0])
			} else if rule, ok := strings.CutPrefix(l, "-A "); ok && !strings.HasPrefix(rule, "KUBE-") && strings.Contains(rule, "-j KUBE-") {
				jumps = append(jumps, "-D "+rule)
			}
		}
		if len(chains) == 0 && len(jumps) == 0 {
			continue
		}
		script := []string{"*" + table}
		script = append(script, jumps...)
		for _, c := range chains {
			script = append(script, "-F "+c)
		}
		for _, c := range chains {
			script = append(script, "-X "+c)
		}
		script = append(script, "COMMIT", "")
		cmd := exec.CommandContext(ctx, family+"-restore", "--noflush")
		cmd.Stdin = strings.NewReader(strings.Join(script, "\n"))
		if out, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("%s-restore removing %s from %s: %w: %s", family, strings.Join(chains, ", "), table, err, strings.TrimSpace(string(out)))
		}
	}
	return nil
}

// cleanupDeadProxy removes the rules a killed run's kube-proxy left, unless
// some live run holds the lock (its kube-proxy then owns the chains and
// cleaned them when it started).
func cleanupDeadProxy(bin string) error {
	f, err := tryLockProxy()
	if err != nil || f == nil {
		return err
	}
	defer f.Close()
	return cleanupProxyRules(bin)
}

func (n *Node) proxyPath(name string) string { return filepath.Join(n.dir, "kube-proxy", name) }

// lockMachineProxy takes the machine's kube-proxy lock for the node,
// first thing, so a node that has to wait does so before it starts
// anything, and removes what a run killed while holding it left.
func (n *Node) lockMachineProxy(ctx context.Context) error {
	bin := filepath.Join(n.opts.BinDir, "kube-proxy")
	if _, err := os.Stat(bin); err != nil {
		return fmt.Errorf("kube-proxy: %w (make testbin)", err)
	}
	lock, err := lockProxy(ctx, fmt.Sprintf("node %s of process %d (%s)", n.Name, os.Getpid(), n.dir))
	if err != nil {
		return err
	}
	n.proxyLock = lock
	n.rec.KubeProxy = bin
	if err := update(n.rec); err != nil {
		return err
	}
	return cleanupProxyRules(bin)
}

// startProxy runs kube-proxy in iptables mode for the node, with its own
// user bound to system:node-proxier, and waits until it reports healthy
// (its first sync of the rules done).
func (n *Node) startProxy(ctx context.Context) error {
	bin := n.rec.KubeProxy
	if err := os.MkdirAll(n.proxyPath(""), 0o700); err != nil {
		return err
	}
	user := "realnode:" + n.Name + ":kube-proxy"
	kubeconfig, err := n.componentUser(ctx, user, "system:node-proxier", n.proxyPath("kubeconfig"))
	if err != nil {
		return err
	}
	healthz, err := freePort()
	if err != nil {
		return err
	}
	metrics, err := freePort()
	if err != nil {
		return err
	}
	// conntrack's limits and timeouts at 0 and no localhost NodePorts
	// (route_localnet): kube-proxy leaves those machine settings alone.
	cfg, err := yaml.Marshal(map[string]any{
		"apiVersion":         "kubeproxy.config.k8s.io/v1alpha1",
		"kind":               "KubeProxyConfiguration",
		"mode":               "iptables",
		"clientConnection":   map[string]any{"kubeconfig": kubeconfig},
		"hostnameOverride":   n.Name,
		"clusterCIDR":        n.PodSubnet.String(),
		"detectLocalMode":    "ClusterCIDR",
		"healthzBindAddress": fmt.Sprintf("127.0.0.1:%d", healthz),
		"metricsBindAddress": fmt.Sprintf("127.0.0.1:%d", metrics),
		"iptables":           map[string]any{"localhostNodePorts": false},
		"nodePortAddresses":  []string{"primary"},
		"conntrack": map[string]any{
			"maxPerCore":            0,
			"min":                   0,
			"tcpEstablishedTimeout": "0s",
			"tcpCloseWaitTimeout":   "0s",
		},
	})
	if err != nil {
		return err
	}
	if err := os.WriteFile(n.proxyPath("config.yaml"), cfg, 0o644); err != nil {
		return err
	}
	d, err := startDaemon("kube-proxy", filepath.Join(n.LogDir(), "kube-proxy.log"), n.dir, bin,
		"--config="+n.proxyPath("config.yaml"), "--hostname-override="+n.Name, "--v=2")
	if err != nil {
		return err
	}
	n.proxyProc = d
	return waitServing(ctx, d, fmt.Sprintf("http://127.0.0.1:%d/healthz", healthz), n.opts.StartTimeout, "kube-proxy to be healthy")
}

// stopProxy stops kube-proxy, removes its rules and lets the next node
// have the lock.
func (n *Node) stopProxy() error {
	n.proxyProc.stop(10 * time.Second)
	if n.proxyLock == nil {
		return nil
	}
	err := cleanupProxyRules(n.rec.KubeProxy)
	n.proxyLock.Close()
	n.proxyLock = nil
	return err
}

// componentUser makes user, binds it to clusterRole (node-scoped binding
// named after it) and writes its kubeconfig at path.
func (n *Node) componentUser(ctx context.Context, user, clusterRole, path string) (string, error) {
	u, err := n.opts.Users.AddUser(envtest.User{Name: user}, rest.CopyConfig(n.opts.Config))
	if err != nil {
		return "", fmt.Errorf("adding user %s: %w", user, err)
	}
	kc, err := u.KubeConfig()
	if err != nil {
		return "", fmt.Errorf("kubeconfig of %s: %w", user, err)
	}
	if err := os.WriteFile(path, kc, 0o600); err != nil {
		return "", err
	}
	binding := &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: user},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: clusterRole},
		Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: user}},
	}
	if _, err := n.client.RbacV1().ClusterRoleBindings().Create(ctx, binding, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return "", fmt.Errorf("binding %s to %s: %w", user, clusterRole, err)
	}
	n.rbacObjects = append(n.rbacObjects, rbacObject{kind: "ClusterRoleBinding", name: binding.Name})
	return path, nil
}
