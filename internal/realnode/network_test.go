package realnode_test

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"github.com/gomomento/valkey-operator/internal/localkube"
	"github.com/gomomento/valkey-operator/internal/nodeimages"
	"github.com/gomomento/valkey-operator/internal/realnode"
)

// TestClusterNetwork runs a node with cluster DNS and kube-proxy next to a
// control plane serving pods, and checks from a pod what a cluster gives
// it: a Service name and a headless pod name (hostname.subdomain) resolve
// through CoreDNS, a ClusterIP Service forwards to a valkey-server pod,
// and the apiserver answers https://kubernetes.default.svc (and the
// in-cluster address) authenticated by the pod's ServiceAccount token,
// trusted with its CA. From this machine the ClusterIP and the names work
// too. A second node with Services waits for this one's kube-proxy.
// Stopping the node leaves no kube-proxy rule and no process.
func TestClusterNetwork(t *testing.T) {
	ip, err := realnode.DefaultNodeIP()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cs, cp, dir, before := setupWith(t, &localkube.PodNetwork{Address: ip.String()})
	node := startNodeWith(ctx, t, cp, dir, "node", func(o *realnode.Options) {
		o.DNS = true
		o.Services = true
	})
	for _, s := range node.Timings {
		t.Logf("  %-20s %v", s.Step, s.Took.Round(time.Millisecond))
	}

	// One kube-proxy per machine: a second node with Services waits for
	// this one's, and gives up when its context ends, naming the holder.
	short, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	if second, err := realnode.Start(short, realnode.Options{Config: cp.Config, Users: cp.Env, Dir: filepath.Join(dir, "second"), Services: true}); err == nil {
		_ = second.Stop()
		t.Errorf("a second node with Services started while node %s's kube-proxy runs", node.Name)
	} else if !strings.Contains(err.Error(), "waiting for the kube-proxy") || !strings.Contains(err.Error(), node.Name) {
		t.Errorf("the second node's error does not say it waited for node %s's kube-proxy: %v", node.Name, err)
	} else {
		t.Logf("second node with Services: %v", err)
	}
	importImages(ctx, t, node, dir)

	const ns = "default"
	labels := map[string]string{"app": "valkey"}
	for _, svc := range []*corev1.Service{
		{
			ObjectMeta: metav1.ObjectMeta{Name: "valkey", Namespace: ns},
			Spec:       corev1.ServiceSpec{Selector: labels, Ports: []corev1.ServicePort{{Name: "valkey", Port: 6379, TargetPort: intstr.FromInt32(6379)}}},
		},
		{
			ObjectMeta: metav1.ObjectMeta{Name: "members", Namespace: ns},
			Spec:       corev1.ServiceSpec{ClusterIP: corev1.ClusterIPNone, Selector: labels, Ports: []corev1.ServicePort{{Name: "valkey", Port: 6379}}},
		},
	} {
		if _, err := cs.CoreV1().Services(ns).Create(ctx, svc, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	server := runPod(ctx, t, cs, node, valkeyPod(ns, "v0", node.Name, labels), func(p *corev1.Pod) bool {
		return p.Status.Phase == corev1.PodRunning && podReady(p)
	})
	svc, err := cs.CoreV1().Services(ns).Get(ctx, "valkey", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	clusterIP := svc.Spec.ClusterIP
	apiIP := cp.PodNetwork.KubernetesServiceIP().String()
	domain := node.ClusterDomain
	podName := "v0.members." + ns + ".svc." + domain
	t.Logf("valkey pod %s, Service ClusterIP %s, kubernetes Service %s, DNS %s:%d", server.Status.PodIP, clusterIP, apiIP, node.DNS, realnode.DNSPort)

	// From this machine: the ClusterIP through kube-proxy's rules, the
	// names through the node's CoreDNS.
	if err := waitFor(ctx, time.Minute, func() (bool, string) {
		err := pingValkey(net.JoinHostPort(clusterIP, "6379"))
		return err == nil, fmt.Sprint(err)
	}); err != nil {
		t.Errorf("PING through ClusterIP %s from this machine: %v", clusterIP, err)
	}
	for name, want := range map[string]string{
		"valkey." + ns + ".svc." + domain:  clusterIP,
		podName:                            server.Status.PodIP,
		"kubernetes.default.svc." + domain: apiIP,
	} {
		if err := waitFor(ctx, time.Minute, func() (bool, string) {
			addrs, err := node.Resolver().LookupHost(ctx, name)
			return err == nil && len(addrs) == 1 && addrs[0] == want, fmt.Sprint(addrs, err)
		}); err != nil {
			t.Errorf("%s from this machine, want %s: %v", name, want, err)
		}
	}

	// From a pod, through its resolv.conf (search path: the short name).
	probe := probePod(ns, "probe", node.Name,
		"resolve=valkey",
		"resolve="+podName,
		"resolve=kubernetes.default.svc",
		"ping=valkey:6379",
		"apiserver=https://kubernetes.default.svc",
		"apiserver=https://$KUBERNETES_SERVICE_HOST:$KUBERNETES_SERVICE_PORT",
	)
	done := runPod(ctx, t, cs, node, probe, func(p *corev1.Pod) bool {
		return p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed
	})
	logs, err := cs.CoreV1().Pods(ns).GetLogs("probe", &corev1.PodLogOptions{}).DoRaw(ctx)
	if err != nil {
		t.Fatalf("probe logs: %v", err)
	}
	t.Logf("probe (%s):\n%s", done.Status.Phase, logs)
	results := probeResults(string(logs))
	user := "system:serviceaccount:" + ns + ":default"
	for check, want := range map[string]string{
		"resolve=valkey":                           clusterIP,
		"resolve=" + podName:                       server.Status.PodIP,
		"resolve=kubernetes.default.svc":           apiIP,
		"ping=valkey:6379":                         "+PONG",
		"apiserver=https://kubernetes.default.svc": user,
		"apiserver=https://$KUBERNETES_SERVICE_HOST:$KUBERNETES_SERVICE_PORT": user,
	} {
		if got, ok := results[check]; !ok || got != want {
			t.Errorf("probe %s: got %q (passed %v), want %q", check, got, ok, want)
		}
	}

	if rules := rulesOf(t, node); len(rules) == 0 {
		t.Errorf("no kube-proxy rule names the pod subnet %s", node.PodSubnet)
	}
	if err := node.Stop(); err != nil {
		t.Errorf("stopping the node: %v", err)
	}
	// Another run's kube-proxy may hold the machine's chains as soon as
	// this one is stopped: none of its rules may name this node's pods.
	if rules := rulesOf(t, node); len(rules) > 0 {
		t.Errorf("kube-proxy's rules left after Stop:\n%s", strings.Join(rules, "\n"))
	}
	assertNodeGone(ctx, t, cs, node, 0, nil)
	assertMachineRestored(t, dir, before)
}

// importImages imports valkey/valkey:8.0.1 and the probe image into node.
func importImages(ctx context.Context, t *testing.T, node *realnode.Node, dir string) {
	t.Helper()
	imgDir := filepath.Join(dir, "images")
	if err := os.MkdirAll(imgDir, 0o755); err != nil {
		t.Fatal(err)
	}
	valkey, err := nodeimages.BuildValkey(ctx, nodeimages.Valkey8(), imgDir)
	if err != nil {
		t.Fatal(err)
	}
	probe := filepath.Join(imgDir, "probe.tar")
	if err := realnode.WriteProbeImage(ctx, probe); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{valkey.Path, probe} {
		if err := node.ImportImage(ctx, p); err != nil {
			t.Fatal(err)
		}
	}
}

// rulesOf are the kube-proxy rules naming node's pod subnet (its
// clusterCIDR, its pods' endpoints).
func rulesOf(t *testing.T, node *realnode.Node) []string {
	t.Helper()
	prefix := strings.TrimSuffix(node.PodSubnet.IP.String(), "0")
	var r []string
	for _, l := range kubeRules(t) {
		if strings.Contains(l, prefix) {
			r = append(r, l)
		}
	}
	return r
}

// kubeRules are the lines of iptables-save and ip6tables-save naming a
// KUBE- chain.
func kubeRules(t *testing.T) []string {
	t.Helper()
	var rules []string
	for _, save := range []string{"iptables-save", "ip6tables-save"} {
		out, err := exec.Command(save).Output()
		if err != nil {
			t.Fatalf("%s: %v", save, err)
		}
		for _, l := range strings.Split(string(out), "\n") {
			if strings.Contains(l, "KUBE-") {
				rules = append(rules, save+": "+l)
			}
		}
	}
	return rules
}

func runPod(ctx context.Context, t *testing.T, cs kubernetes.Interface, node *realnode.Node, pod *corev1.Pod, done func(*corev1.Pod) bool) *corev1.Pod {
	t.Helper()
	if _, err := cs.CoreV1().Pods(pod.Namespace).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	var last *corev1.Pod
	if err := waitFor(ctx, 2*time.Minute, func() (bool, string) {
		p, err := cs.CoreV1().Pods(pod.Namespace).Get(ctx, pod.Name, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		last = p
		return done(p), podState(p)
	}); err != nil {
		t.Fatalf("pod %s: %v\n(logs in %s)", pod.Name, err, node.LogDir())
	}
	return last
}

func podReady(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// restricted is Pod Security "restricted" for a container.
func restricted() *corev1.SecurityContext {
	return &corev1.SecurityContext{
		ReadOnlyRootFilesystem:   ptr.To(true),
		AllowPrivilegeEscalation: ptr.To(false),
		Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
	}
}

func podSecurity(uid int64) *corev1.PodSecurityContext {
	return &corev1.PodSecurityContext{
		RunAsUser:      ptr.To(uid),
		RunAsGroup:     ptr.To(uid),
		RunAsNonRoot:   ptr.To(true),
		SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
	}
}

// valkeyPod serves plain Valkey on 6379 as hostname "name" of the headless
// Service "members".
func valkeyPod(ns, name, nodeName string, labels map[string]string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: labels},
		Spec: corev1.PodSpec{
			NodeSelector:                  map[string]string{"kubernetes.io/hostname": nodeName},
			Hostname:                      name,
			Subdomain:                     "members",
			TerminationGracePeriodSeconds: ptr.To[int64](2),
			SecurityContext:               podSecurity(nodeimages.ValkeyUID),
			Containers: []corev1.Container{{
				Name:            "valkey",
				Image:           nodeimages.Valkey8().Name,
				ImagePullPolicy: corev1.PullNever,
				Command:         []string{"valkey-server", "--port", "6379", "--protected-mode", "no", "--save", "", "--appendonly", "no"},
				SecurityContext: restricted(),
				ReadinessProbe: &corev1.Probe{
					ProbeHandler:  corev1.ProbeHandler{TCPSocket: &corev1.TCPSocketAction{Port: intstr.FromInt32(6379)}},
					PeriodSeconds: 1,
				},
			}},
		},
	}
}

// probePod runs the probe's checks once.
func probePod(ns, name, nodeName string, checks ...string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: corev1.PodSpec{
			NodeSelector:    map[string]string{"kubernetes.io/hostname": nodeName},
			RestartPolicy:   corev1.RestartPolicyNever,
			SecurityContext: podSecurity(65534),
			Containers: []corev1.Container{{
				Name:            "probe",
				Image:           realnode.ProbeImage,
				ImagePullPolicy: corev1.PullNever,
				Args:            append([]string{"-timeout=60s"}, checks...),
				SecurityContext: restricted(),
			}},
		},
	}
}

// probeResults maps each check that passed to its result.
func probeResults(logs string) map[string]string {
	m := map[string]string{}
	s := bufio.NewScanner(strings.NewReader(logs))
	for s.Scan() {
		f := strings.SplitN(s.Text(), " ", 3)
		if len(f) == 3 && f[0] == "ok" {
			m[f[1]] = f[2]
		}
	}
	return m
}

// pingValkey sends PING to addr and wants +PONG.
func pingValkey(addr string) error {
	c, err := net.DialTimeout("tcp", addr, 2*time.Second)
	if err != nil {
		return err
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(2 * time.Second))
	if _, err := c.Write([]byte("*1\r\n$4\r\nPING\r\n")); err != nil {
		return err
	}
	line, err := bufio.NewReader(c).ReadString('\n')
	if err != nil {
		return err
	}
	if strings.TrimSpace(line) != "+PONG" {
		return fmt.Errorf("answered %q", line)
	}
	return nil
}
