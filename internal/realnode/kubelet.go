package realnode

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	"sigs.k8s.io/yaml"
)

func (n *Node) kubeletPath(name string) string { return filepath.Join(n.dir, "kubelet-conf", name) }

// writeKubeletFiles makes the node's user and its binding to the
// system:node ClusterRole (the test control plane authorizes with RBAC
// alone, without the Node authorizer), its kubeconfig, a self-signed
// serving certificate and the KubeletConfiguration.
func (n *Node) writeKubeletFiles(ctx context.Context) error {
	if err := os.MkdirAll(n.kubeletPath(""), 0o700); err != nil {
		return err
	}
	user := "system:node:" + n.Name
	u, err := n.opts.Users.AddUser(envtest.User{Name: user, Groups: []string{"system:nodes"}}, rest.CopyConfig(n.opts.Config))
	if err != nil {
		return fmt.Errorf("adding user %s: %w", user, err)
	}
	kc, err := u.KubeConfig()
	if err != nil {
		return fmt.Errorf("kubeconfig of %s: %w", user, err)
	}
	if err := os.WriteFile(n.kubeletPath("kubeconfig"), kc, 0o600); err != nil {
		return err
	}
	binding := &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "realnode:" + n.Name},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "system:node"},
		Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: user}},
	}
	if _, err := n.client.RbacV1().ClusterRoleBindings().Create(ctx, binding, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("binding %s to system:node: %w", user, err)
	}
	n.rbacBinding = binding.Name
	if err := selfSignedServing(n.kubeletPath("serving.crt"), n.kubeletPath("serving.key"), n.Name, n.IP); err != nil {
		return err
	}
	cfg, err := n.kubeletConfig()
	if err != nil {
		return err
	}
	return os.WriteFile(n.kubeletPath("config.yaml"), cfg, 0o644)
}

// kubeletConfig is the KubeletConfiguration: cgroup v1 allowed, cgroupfs
// with the run's own cgroup root, every directory it can be given inside
// the run's, its own ports, no image garbage collection (the pause image
// exists only here) and no eviction on a busy disk.
func (n *Node) kubeletConfig() ([]byte, error) {
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	healthz, err := freePort()
	if err != nil {
		return nil, err
	}
	auth := map[string]any{
		"anonymous": map[string]any{"enabled": false},
		"webhook":   map[string]any{"enabled": true},
	}
	if n.opts.KubeletClientCA != "" {
		auth["x509"] = map[string]any{"clientCAFile": n.opts.KubeletClientCA}
	}
	cfg := map[string]any{
		"apiVersion":                  "kubelet.config.k8s.io/v1beta1",
		"kind":                        "KubeletConfiguration",
		"failCgroupV1":                false,
		"cgroupDriver":                "cgroupfs",
		"cgroupRoot":                  n.CgroupRoot,
		"containerRuntimeEndpoint":    "unix://" + n.containerd.socket,
		"address":                     n.IP.String(),
		"port":                        port,
		"readOnlyPort":                0,
		"healthzBindAddress":          "127.0.0.1",
		"healthzPort":                 healthz,
		"tlsCertFile":                 n.kubeletPath("serving.crt"),
		"tlsPrivateKeyFile":           n.kubeletPath("serving.key"),
		"authentication":              auth,
		"authorization":               map[string]any{"mode": "Webhook"},
		"volumePluginDir":             filepath.Join(n.dir, "volume-plugins"),
		"podLogsDir":                  n.podLogsDir,
		"failSwapOn":                  false,
		"makeIPTablesUtilChains":      false,
		"imageGCHighThresholdPercent": 100,
		"imageGCLowThresholdPercent":  99,
		"evictionHard": map[string]string{
			"memory.available":  "1Mi",
			"nodefs.available":  "1%",
			"nodefs.inodesFree": "1%",
			"imagefs.available": "1%",
		},
		"serializeImagePulls": false,
		"resolvConf":          "/etc/resolv.conf",
		"registerNode":        true,
	}
	if len(n.opts.ClusterDNS) > 0 {
		cfg["clusterDNS"] = n.opts.ClusterDNS
	} else if n.DNS != nil {
		cfg["clusterDNS"] = []string{n.DNS.String()}
	}
	if n.ClusterDomain != "" {
		cfg["clusterDomain"] = n.ClusterDomain
	}
	return yaml.Marshal(cfg)
}

// startKubelet starts the kubelet and waits for its Node to be Ready.
func (n *Node) startKubelet(ctx context.Context) error {
	args := []string{
		"--config=" + n.kubeletPath("config.yaml"),
		"--kubeconfig=" + n.kubeletPath("kubeconfig"),
		"--root-dir=" + n.kubeletRoot,
		"--cert-dir=" + n.kubeletPath("pki"),
		"--hostname-override=" + n.Name,
		"--node-ip=" + n.IP.String(),
		"--v=2",
	}
	args = append(args, n.opts.KubeletArgs...)
	d, err := startDaemon("kubelet", filepath.Join(n.LogDir(), "kubelet.log"), n.dir, filepath.Join(n.opts.BinDir, "kubelet"), args...)
	if err != nil {
		return err
	}
	n.kubeletProc = d
	n.registered = true
	var last string
	err = poll(ctx, n.opts.StartTimeout, func() (bool, error) {
		if d.exited() {
			return false, fmt.Errorf("kubelet exited: %v", d.err)
		}
		node, err := n.client.CoreV1().Nodes().Get(ctx, n.Name, metav1.GetOptions{})
		if err != nil {
			last = err.Error()
			return false, nil
		}
		for _, c := range node.Status.Conditions {
			if c.Type == corev1.NodeReady {
				last = fmt.Sprintf("Ready=%s %s: %s", c.Status, c.Reason, c.Message)
				return c.Status == corev1.ConditionTrue, nil
			}
		}
		last = "no Ready condition yet"
		return false, nil
	})
	if err != nil {
		return fmt.Errorf("waiting for node %s to be Ready (last: %s; log %s): %w", n.Name, last, d.log, err)
	}
	return nil
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", ":0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// unregister deletes the Node object and the RBAC objects of the node's
// users.
func (n *Node) unregister() error {
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	var errs []error
	if n.registered {
		if err := n.client.CoreV1().Nodes().Delete(ctx, n.Name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			errs = append(errs, fmt.Errorf("deleting node %s: %w", n.Name, err))
		}
	}
	if n.rbacBinding != "" {
		if err := n.client.RbacV1().ClusterRoleBindings().Delete(ctx, n.rbacBinding, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			errs = append(errs, fmt.Errorf("deleting ClusterRoleBinding %s: %w", n.rbacBinding, err))
		}
	}
	for _, o := range n.rbacObjects {
		var err error
		switch o.kind {
		case "ClusterRoleBinding":
			err = n.client.RbacV1().ClusterRoleBindings().Delete(ctx, o.name, metav1.DeleteOptions{})
		case "ClusterRole":
			err = n.client.RbacV1().ClusterRoles().Delete(ctx, o.name, metav1.DeleteOptions{})
		}
		if err != nil && !apierrors.IsNotFound(err) {
			errs = append(errs, fmt.Errorf("deleting %s %s: %w", o.kind, o.name, err))
		}
	}
	return errors.Join(errs...)
}

// rbacObject is a ClusterRole or ClusterRoleBinding the node made for one
// of its components, deleted with the Node.
type rbacObject struct{ kind, name string }
