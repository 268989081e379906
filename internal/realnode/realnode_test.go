package realnode_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/gomomento/valkey-operator/internal/localkube"
	"github.com/gomomento/valkey-operator/internal/localkube/procscan"
	"github.com/gomomento/valkey-operator/internal/realnode"
)

// envtest logs through controller-runtime, which complains when nothing
// takes its logs.
func init() { ctrllog.SetLogger(logr.Discard()) }

// TestHardenedPodOnRealNode starts a control plane and a real node
// (containerd, runc, CNI bridge, kubelet), runs the pause image as a
// hardened pod, deletes it, stops the node and checks that nothing of the
// run is left on the machine.
func TestHardenedPodOnRealNode(t *testing.T) {
	ctx, cs, cp, dir, before := setup(t)
	t1 := time.Now()
	node := startNode(ctx, t, cp, dir, "node")
	t.Logf("node %s Ready in %v (bridge %s, pod subnet %s, IP %s)", node.Name, time.Since(t1).Round(time.Millisecond), node.Bridge, node.PodSubnet, node.IP)
	for _, s := range node.Timings {
		t.Logf("  %-20s %v", s.Step, s.Took.Round(time.Millisecond))
	}
	cgroupDirs := cgroupsOf(t, node)
	for _, name := range realnode.Sysctls {
		if now, _ := realnode.ReadSysctl(name); now != before.sysctls[name] {
			t.Logf("  sysctl %s %s → %s while the node runs", name, before.sysctls[name], now)
		}
	}

	pid := runHardenedPod(ctx, t, cs, node, "hardened")
	status := procStatus(t, pid)
	for field, want := range map[string]string{
		"Uid":        "999\t999\t999\t999",
		"Gid":        "999\t999\t999\t999",
		"CapEff":     "0000000000000000",
		"CapPrm":     "0000000000000000",
		"CapBnd":     "0000000000000000",
		"Seccomp":    "2",
		"NoNewPrivs": "1",
	} {
		if got := status[field]; got != want {
			t.Errorf("container process %d: %s = %q, want %q", pid, field, got, want)
		}
	}
	root := fmt.Sprintf("/proc/%d/root", pid)
	if fi, err := os.Stat(filepath.Join(root, "secret", "password")); err != nil {
		t.Errorf("secret file: %v", err)
	} else if st := fi.Sys().(*syscall.Stat_t); fi.Mode().Perm() != 0o440 || st.Gid != 999 {
		t.Errorf("secret file mode %v group %d, want 0440 and 999", fi.Mode().Perm(), st.Gid)
	}
	if fi, err := os.Stat(filepath.Join(root, "data")); err != nil {
		t.Errorf("emptyDir: %v", err)
	} else if st := fi.Sys().(*syscall.Stat_t); st.Gid != 999 || fi.Mode().Perm()&0o070 != 0o070 {
		t.Errorf("emptyDir mode %v group %d, want group 999 with rwx", fi.Mode().Perm(), st.Gid)
	}
	if err := os.WriteFile(filepath.Join(root, "pause-was-here"), nil, 0o644); err == nil {
		t.Errorf("root filesystem of the container is writable")
	}

	// Logs go from the apiserver to the kubelet at its InternalIP, with the
	// apiserver's kubelet client certificate.
	if _, err := cs.CoreV1().Pods("default").GetLogs("hardened", &corev1.PodLogOptions{}).DoRaw(ctx); err != nil {
		t.Errorf("pod logs through the apiserver: %v", err)
	}

	t3 := time.Now()
	deletePod(ctx, t, cs, "hardened")
	t.Logf("pod delete → gone in %v", time.Since(t3).Round(time.Millisecond))

	t4 := time.Now()
	if err := node.Stop(); err != nil {
		t.Errorf("stopping the node: %v", err)
	}
	t.Logf("node stopped and cleaned up in %v", time.Since(t4).Round(time.Millisecond))
	assertNodeGone(ctx, t, cs, node, pid, cgroupDirs)
	assertMachineRestored(t, dir, before)
}

// TestStopWithRunningPod stops a node whose pod still runs: Stop kills the
// container and its shim, unmounts its root filesystem, volumes and network
// namespace, and leaves nothing either.
func TestStopWithRunningPod(t *testing.T) {
	ctx, cs, cp, dir, before := setup(t)
	node := startNode(ctx, t, cp, dir, "node")
	cgroupDirs := cgroupsOf(t, node)
	pid := runHardenedPod(ctx, t, cs, node, "left-running")
	if mounts, _ := realnode.MountsUnder(node.Dir()); len(mounts) == 0 {
		t.Errorf("no mounts under %s while a pod runs", node.Dir())
	}
	t0 := time.Now()
	if err := node.Stop(); err != nil {
		t.Errorf("stopping the node: %v", err)
	}
	t.Logf("node with a running pod stopped and cleaned up in %v", time.Since(t0).Round(time.Millisecond))
	assertNodeGone(ctx, t, cs, node, pid, cgroupDirs)
	assertMachineRestored(t, dir, before)
}

// TestTwoNodesSideBySide runs two nodes on one machine and one control
// plane: each gets its own bridge and subnet, and stopping the first
// leaves the second, its pod and the machine settings it relies on alone.
func TestTwoNodesSideBySide(t *testing.T) {
	ctx, cs, cp, dir, before := setup(t)
	a := startNode(ctx, t, cp, dir, "a")
	b := startNode(ctx, t, cp, dir, "b")
	t.Logf("nodes %s (%s, %s) and %s (%s, %s)", a.Name, a.Bridge, a.PodSubnet, b.Name, b.Bridge, b.PodSubnet)
	if a.Bridge == b.Bridge || a.PodSubnet.Contains(b.PodSubnet.IP) || b.PodSubnet.Contains(a.PodSubnet.IP) {
		t.Fatalf("the nodes share a bridge or subnet")
	}
	aCgroups, bCgroups := cgroupsOf(t, a), cgroupsOf(t, b)
	aPID := runHardenedPod(ctx, t, cs, a, "on-a")
	bPID := runHardenedPod(ctx, t, cs, b, "on-b")
	during := map[string]string{}
	for _, name := range realnode.Sysctls {
		during[name], _ = realnode.ReadSysctl(name)
	}

	if err := a.Stop(); err != nil {
		t.Errorf("stopping node a: %v", err)
	}
	assertNodeGone(ctx, t, cs, a, aPID, aCgroups)
	for name, v := range during {
		if now, _ := realnode.ReadSysctl(name); now != v {
			t.Errorf("sysctl %s restored to %s while node b still runs (was %s)", name, now, v)
		}
	}
	if _, err := os.Stat(fmt.Sprintf("/proc/%d", bPID)); err != nil {
		t.Errorf("the container on node b is gone: %v", err)
	}
	p, err := cs.CoreV1().Pods("default").Get(ctx, "on-b", metav1.GetOptions{})
	if err != nil || p.Status.Phase != corev1.PodRunning {
		t.Errorf("pod on node b after node a stopped: %v %v", err, p.Status.Phase)
	}
	n, err := cs.CoreV1().Nodes().Get(ctx, b.Name, metav1.GetOptions{})
	if err != nil || !nodeReady(n) {
		t.Errorf("node b not Ready after node a stopped: %v", err)
	}

	if err := b.Stop(); err != nil {
		t.Errorf("stopping node b: %v", err)
	}
	assertNodeGone(ctx, t, cs, b, bPID, bCgroups)
	assertMachineRestored(t, dir, before)
}

// machine is what the tests compare after the runs.
type machine struct {
	sysctls  map[string]string
	outside  map[string]bool
	iptables string
	// others are the runs alive when it was read: the machine then was as
	// their nodes need it, not as it is without any.
	others int
}

func setup(t *testing.T) (context.Context, kubernetes.Interface, *localkube.ControlPlane, string, machine) {
	t.Helper()
	return setupWith(t, nil)
}

// setupWith is setup with a control plane serving pods (pn) when pn is
// not nil.
func setupWith(t *testing.T, pn *localkube.PodNetwork) (context.Context, kubernetes.Interface, *localkube.ControlPlane, string, machine) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Fatal("a real node runs containerd and a kubelet, which need root")
	}
	// Long: a node with Services first waits for the kube-proxy of any
	// other run on the machine, which test/realnode holds for its whole run.
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Minute)
	t.Cleanup(cancel)
	dir := t.TempDir()
	others, err := realnode.LiveRuns()
	if err != nil {
		t.Fatal(err)
	}
	before := machine{sysctls: map[string]string{}, outside: existing(append(realnode.OutsidePaths, realnode.StateDir)), iptables: iptablesRules(t), others: others}
	for _, name := range realnode.Sysctls {
		if v, err := realnode.ReadSysctl(name); err == nil {
			before.sysctls[name] = v
		}
	}
	t0 := time.Now()
	kc, err := realnode.NewKubeletClient(filepath.Join(dir, "apiserver-kubelet-client"))
	if err != nil {
		t.Fatal(err)
	}
	cp, err := localkube.StartControlPlane(ctx, localkube.ControlPlaneOptions{
		Dir:                     filepath.Join(dir, "cp"),
		ServiceAccountAdmission: true,
		APIServerArgs:           kc.APIServerArgs(),
		ControllerManagerArgs:   []string{"--flex-volume-plugin-dir=" + filepath.Join(dir, "cp", "flex")},
		PodNetwork:              pn,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := cp.Stop(); err != nil {
			t.Errorf("stopping the control plane: %v", err)
		}
	})
	t.Logf("control plane up in %v", time.Since(t0).Round(time.Millisecond))
	cs, err := kubernetes.NewForConfig(cp.Config)
	if err != nil {
		t.Fatal(err)
	}
	secret := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "creds", Namespace: "default"},
		Data:       map[string][]byte{"password": []byte("s3cret")},
	}
	if _, err := cs.CoreV1().Secrets("default").Create(ctx, secret, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	return ctx, cs, cp, dir, before
}

// startNode starts a node in dir/sub; the test's cleanup stops it (a
// second Stop does nothing).
func startNode(ctx context.Context, t *testing.T, cp *localkube.ControlPlane, dir, sub string) *realnode.Node {
	t.Helper()
	return startNodeWith(ctx, t, cp, dir, sub, func(*realnode.Options) {})
}

// startNodeWith is startNode with the options edited by edit.
func startNodeWith(ctx context.Context, t *testing.T, cp *localkube.ControlPlane, dir, sub string, edit func(*realnode.Options)) *realnode.Node {
	t.Helper()
	opts := realnode.Options{
		Config:          cp.Config,
		Users:           cp.Env,
		Dir:             filepath.Join(dir, sub),
		KubeletClientCA: filepath.Join(dir, "apiserver-kubelet-client", "kubelet-client-ca.crt"),
	}
	edit(&opts)
	node, err := realnode.Start(ctx, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := node.Stop(); err != nil {
			t.Errorf("stopping node %s: %v", node.Name, err)
		}
		keepLogs(t, node)
	})
	return node
}

// keepLogs copies the node's logs into $REALNODE_KEEP_LOGS/<node name>
// when that is set: the test's directory goes with the test.
func keepLogs(t *testing.T, node *realnode.Node) {
	keep := os.Getenv("REALNODE_KEEP_LOGS")
	if keep == "" {
		return
	}
	dst := filepath.Join(keep, node.Name)
	if err := os.MkdirAll(dst, 0o755); err != nil {
		t.Log(err)
		return
	}
	entries, _ := os.ReadDir(node.LogDir())
	for _, e := range entries {
		if b, err := os.ReadFile(filepath.Join(node.LogDir(), e.Name())); err == nil {
			_ = os.WriteFile(filepath.Join(dst, e.Name()), b, 0o644)
		}
	}
	t.Logf("logs of node %s kept in %s", node.Name, dst)
}

func cgroupsOf(t *testing.T, node *realnode.Node) []string {
	t.Helper()
	dirs, _ := filepath.Glob(filepath.Join("/sys/fs/cgroup", "*", node.CgroupRoot))
	if len(dirs) == 0 {
		t.Errorf("no cgroup %s made", node.CgroupRoot)
	}
	return dirs
}

// runHardenedPod runs the hardened pod on node, checks its IP is of the
// node's subnet and returns its container's process.
func runHardenedPod(ctx context.Context, t *testing.T, cs kubernetes.Interface, node *realnode.Node, name string) int {
	t.Helper()
	pod := hardenedPod("default", name, node.Name)
	t0 := time.Now()
	if _, err := cs.CoreV1().Pods("default").Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	var running *corev1.Pod
	if err := waitFor(ctx, time.Minute, func() (bool, string) {
		p, err := cs.CoreV1().Pods("default").Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		running = p
		return p.Status.Phase == corev1.PodRunning && p.Status.PodIP != "", podState(p)
	}); err != nil {
		t.Fatalf("pod %s did not run: %v\n(logs in %s)", name, err, node.LogDir())
	}
	t.Logf("pod %s create → Running in %v, IP %s", name, time.Since(t0).Round(time.Millisecond), running.Status.PodIP)
	if ip := net.ParseIP(running.Status.PodIP); ip == nil || !node.PodSubnet.Contains(ip) {
		t.Errorf("pod IP %s is not in the node's subnet %s", running.Status.PodIP, node.PodSubnet)
	}
	return pausePID(t, node.CgroupRoot)
}

func deletePod(ctx context.Context, t *testing.T, cs kubernetes.Interface, name string) {
	t.Helper()
	if err := cs.CoreV1().Pods("default").Delete(ctx, name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := waitFor(ctx, time.Minute, func() (bool, string) {
		p, err := cs.CoreV1().Pods("default").Get(ctx, name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return true, ""
		}
		if err != nil {
			return false, err.Error()
		}
		return false, podState(p)
	}); err != nil {
		t.Fatalf("pod %s not deleted: %v", name, err)
	}
}

// assertNodeGone checks nothing of one stopped node is left: processes,
// its container, mounts, bridge, cgroups, the Node object.
func assertNodeGone(ctx context.Context, t *testing.T, cs kubernetes.Interface, node *realnode.Node, pid int, cgroupDirs []string) {
	t.Helper()
	if procs, err := procscan.Under(node.Dir() + "/"); err != nil {
		t.Error(err)
	} else if len(procs) > 0 {
		t.Errorf("processes of node %s left: %v", node.Name, procs)
	}
	if b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid)); err == nil {
		t.Errorf("container process %d still there:\n%s", pid, b)
	}
	if mounts, err := realnode.MountsUnder(node.Dir()); err != nil {
		t.Error(err)
	} else if len(mounts) > 0 {
		t.Errorf("mounts left under %s: %v", node.Dir(), mounts)
	}
	if _, err := net.InterfaceByName(node.Bridge); err == nil {
		t.Errorf("bridge %s still exists", node.Bridge)
	}
	for _, d := range cgroupDirs {
		if _, err := os.Stat(d); err == nil {
			t.Errorf("cgroup %s still exists", d)
		}
	}
	if _, err := cs.CoreV1().Nodes().Get(ctx, node.Name, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("Node %s not deleted: %v", node.Name, err)
	}
}

// assertMachineRestored checks, once every node stopped, that the sysctls
// are as before and no path outside the runs' directories was added.
func assertMachineRestored(t *testing.T, dir string, before machine) {
	t.Helper()
	if mounts, err := realnode.MountsUnder(dir); err != nil {
		t.Error(err)
	} else if len(mounts) > 0 {
		t.Errorf("mounts left under %s: %v", dir, mounts)
	}
	// Another run on this machine (another package's tests) keeps the
	// machine as its node needs it; the last run out restores it, and its
	// own test checks that.
	if others, err := realnode.LiveRuns(); err != nil {
		t.Fatal(err)
	} else if others > 0 || before.others > 0 {
		t.Logf("other real-node runs alive (%d before this one, %d after): the machine is restored by the last one out", before.others, others)
		return
	}
	for name, v := range before.sysctls {
		if now, _ := realnode.ReadSysctl(name); now != v {
			t.Errorf("sysctl %s = %s after the run, %s before", name, now, v)
		}
	}
	after := existing(append(realnode.OutsidePaths, realnode.StateDir))
	for p, existed := range before.outside {
		if after[p] != existed {
			t.Errorf("%s: existed before the run %v, after %v", p, existed, after[p])
		}
	}
	if now := iptablesRules(t); now != before.iptables {
		t.Errorf("iptables rules changed by the run:\nbefore:\n%s\nafter:\n%s", before.iptables, now)
	}
}

// iptablesRules is iptables-save and ip6tables-save without comments,
// counters and tables that hold nothing (only built-in chains accepting):
// iptables-nft keeps a table kube-proxy made once it is emptied, to the
// same effect as none.
func iptablesRules(t *testing.T) string {
	t.Helper()
	var lines []string
	for _, save := range []string{"iptables-save", "ip6tables-save"} {
		out, err := exec.Command(save).Output()
		if err != nil {
			t.Fatalf("%s: %v", save, err)
		}
		var table []string
		empty := true
		for _, l := range strings.Split(string(out), "\n") {
			switch {
			case strings.HasPrefix(l, "#") || l == "":
				continue
			case strings.HasPrefix(l, "*"):
				table, empty = nil, true
			case strings.HasPrefix(l, ":"):
				if f := strings.Fields(l); len(f) < 2 || f[1] != "ACCEPT" {
					empty = false
				}
			case l != "COMMIT":
				empty = false
			}
			if i := strings.LastIndex(l, " ["); strings.HasPrefix(l, ":") && i > 0 {
				l = l[:i]
			}
			table = append(table, save+": "+l)
			if l == "COMMIT" && !empty {
				lines = append(lines, table...)
			}
		}
	}
	return strings.Join(lines, "\n")
}

func nodeReady(n *corev1.Node) bool {
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// hardenedPod runs the pause image as user and group 999 with fsGroup
// 999, a read-only root filesystem, no capabilities, the runtime's default
// seccomp profile, an emptyDir and the Secret "creds" (mode 0440).
func hardenedPod(ns, name, nodeName string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: corev1.PodSpec{
			NodeSelector:                  map[string]string{"kubernetes.io/hostname": nodeName},
			TerminationGracePeriodSeconds: ptr.To[int64](5),
			SecurityContext: &corev1.PodSecurityContext{
				RunAsUser:      ptr.To[int64](999),
				RunAsGroup:     ptr.To[int64](999),
				FSGroup:        ptr.To[int64](999),
				RunAsNonRoot:   ptr.To(true),
				SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
			},
			Containers: []corev1.Container{{
				Name:            "pause",
				Image:           realnode.PauseImage,
				ImagePullPolicy: corev1.PullNever,
				SecurityContext: &corev1.SecurityContext{
					ReadOnlyRootFilesystem:   ptr.To(true),
					AllowPrivilegeEscalation: ptr.To(false),
					Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
				},
				VolumeMounts: []corev1.VolumeMount{
					{Name: "data", MountPath: "/data"},
					{Name: "secret", MountPath: "/secret", ReadOnly: true},
				},
			}},
			Volumes: []corev1.Volume{
				{Name: "data", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
				{Name: "secret", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "creds", DefaultMode: ptr.To[int32](0o440)}}},
			},
		},
	}
}

func podState(p *corev1.Pod) string {
	s := string(p.Status.Phase)
	for _, c := range p.Status.ContainerStatuses {
		if w := c.State.Waiting; w != nil {
			s += fmt.Sprintf(" %s waiting %s: %s", c.Name, w.Reason, w.Message)
		}
	}
	for _, c := range p.Status.Conditions {
		if c.Status != corev1.ConditionTrue && c.Message != "" {
			s += fmt.Sprintf(" %s: %s", c.Type, c.Message)
		}
	}
	return s
}

func waitFor(ctx context.Context, timeout time.Duration, cond func() (bool, string)) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var last string
	for {
		var ok bool
		if ok, last = cond(); ok {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%w (last: %s)", ctx.Err(), last)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// pausePID is the process in the cgroups under root that sees the pod's
// Secret volume: the pod's container (the sandbox's pause also runs as the
// pod's user, without the volumes).
func pausePID(t *testing.T, root string) int {
	t.Helper()
	tops, _ := filepath.Glob(filepath.Join("/sys/fs/cgroup", "pids", root))
	if len(tops) == 0 {
		tops, _ = filepath.Glob(filepath.Join("/sys/fs/cgroup", "*", root))
	}
	for _, top := range tops {
		for _, pid := range realnode.CgroupPIDs(top) {
			if _, err := os.Stat(fmt.Sprintf("/proc/%d/root/secret", pid)); err == nil {
				return pid
			}
		}
	}
	t.Fatalf("no process with the Secret volume in cgroup %s", root)
	return 0
}

func procStatus(t *testing.T, pid int) map[string]string {
	t.Helper()
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		t.Fatalf("process %d: %v", pid, err)
	}
	m := map[string]string{}
	for _, line := range strings.Split(string(b), "\n") {
		if k, v, ok := strings.Cut(line, ":"); ok {
			m[k] = strings.TrimSpace(v)
		}
	}
	return m
}

func existing(paths []string) map[string]bool {
	m := map[string]bool{}
	for _, p := range paths {
		_, err := os.Lstat(p)
		m[p] = err == nil
	}
	return m
}

// helperDirEnv makes TestKilledRunHelper run: the directory it runs its
// node in and reports to.
const helperDirEnv = "REALNODE_KILLED_RUN_DIR"

type helperReport struct {
	NodeDir    string `json:"nodeDir"`
	Bridge     string `json:"bridge"`
	CgroupRoot string `json:"cgroupRoot"`
	PodSubnet  string `json:"podSubnet"`
	PID        int    `json:"pid"`
}

// TestKilledRunIsCleanedUp kills a test binary whose node runs a pod, as a
// test timeout would: kubelet, containerd, kube-proxy and CoreDNS die with
// it, but the shim, the container, the mounts, the bridge, the cgroups and
// kube-proxy's rules stay. The next node started on the machine tears all
// of that down, and restores the sysctls the killed run changed once the
// last node stops.
func TestKilledRunIsCleanedUp(t *testing.T) {
	ctx, _, cp, dir, before := setup(t)
	helperDir := filepath.Join(dir, "killed")
	if err := os.MkdirAll(helperDir, 0o755); err != nil {
		t.Fatal(err)
	}
	helperLog, err := os.Create(filepath.Join(dir, "killed.log"))
	if err != nil {
		t.Fatal(err)
	}
	defer helperLog.Close()
	cmd := exec.Command(os.Args[0], "-test.run=^TestKilledRunHelper$", "-test.v", "-test.count=1")
	cmd.Env = append(os.Environ(), helperDirEnv+"="+helperDir)
	cmd.Stdout, cmd.Stderr = helperLog, helperLog
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	var rep helperReport
	if err := waitFor(ctx, 30*time.Minute, func() (bool, string) {
		select {
		case err := <-exited:
			exited <- err
			return true, ""
		default:
		}
		b, err := os.ReadFile(filepath.Join(helperDir, "ready.json"))
		return err == nil && json.Unmarshal(b, &rep) == nil, "no report yet"
	}); err != nil || rep.PID == 0 {
		_ = cmd.Process.Kill()
		log, _ := os.ReadFile(helperLog.Name())
		t.Fatalf("the helper did not run its pod: %v\n%s", err, log)
	}
	_ = cmd.Process.Kill()
	<-exited
	// What a killed run leaves.
	if _, err := os.Stat(fmt.Sprintf("/proc/%d", rep.PID)); err != nil {
		t.Fatalf("the killed run's container is gone already: %v", err)
	}
	if _, err := net.InterfaceByName(rep.Bridge); err != nil {
		t.Fatalf("the killed run's bridge is gone already: %v", err)
	}
	if mounts, _ := realnode.MountsUnder(rep.NodeDir); len(mounts) == 0 {
		t.Fatalf("no mounts left by the killed run")
	}
	_, killedSubnet, err := net.ParseCIDR(rep.PodSubnet)
	if err != nil {
		t.Fatal(err)
	}
	killedNode := &realnode.Node{PodSubnet: killedSubnet}
	if rules := rulesOf(t, killedNode); len(rules) == 0 {
		t.Fatalf("no kube-proxy rules left by the killed run")
	}
	cgroupDirs, _ := filepath.Glob(filepath.Join("/sys/fs/cgroup", "*", rep.CgroupRoot))

	t0 := time.Now()
	node := startNode(ctx, t, cp, dir, "node")
	t.Logf("node Ready in %v, the killed run torn down on the way", time.Since(t0).Round(time.Millisecond))
	if b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", rep.PID)); err == nil {
		t.Errorf("the killed run's container is still there:\n%s", b)
	}
	if procs, _ := procscan.Under(rep.NodeDir + "/"); len(procs) > 0 {
		t.Errorf("processes of the killed run left: %v", procs)
	}
	if _, err := net.InterfaceByName(rep.Bridge); err == nil {
		t.Errorf("the killed run's bridge %s still exists", rep.Bridge)
	}
	if mounts, _ := realnode.MountsUnder(rep.NodeDir); len(mounts) > 0 {
		t.Errorf("mounts of the killed run left: %v", mounts)
	}
	for _, d := range cgroupDirs {
		if _, err := os.Stat(d); err == nil {
			t.Errorf("cgroup %s of the killed run still exists", d)
		}
	}
	if rules := rulesOf(t, killedNode); len(rules) > 0 {
		t.Errorf("kube-proxy rules of the killed run left:\n%s", strings.Join(rules, "\n"))
	}
	if err := node.Stop(); err != nil {
		t.Errorf("stopping the node: %v", err)
	}
	assertMachineRestored(t, dir, before)
}

// TestKilledRunHelper is TestKilledRunIsCleanedUp's run to kill: it starts a
// control plane and a node, runs a pod, reports and waits to be killed.
func TestKilledRunHelper(t *testing.T) {
	helperDir := os.Getenv(helperDirEnv)
	if helperDir == "" {
		t.Skip("run by TestKilledRunIsCleanedUp")
	}
	ctx, cs, cp, dir, _ := setup(t)
	node, err := realnode.Start(ctx, realnode.Options{
		Config:          cp.Config,
		Users:           cp.Env,
		Dir:             filepath.Join(helperDir, "node"),
		KubeletClientCA: filepath.Join(dir, "apiserver-kubelet-client", "kubelet-client-ca.crt"),
		DNS:             true,
		Services:        true,
	})
	if err != nil {
		t.Fatal(err)
	}
	pid := runHardenedPod(ctx, t, cs, node, "to-be-killed")
	b, err := json.Marshal(helperReport{NodeDir: node.Dir(), Bridge: node.Bridge, CgroupRoot: node.CgroupRoot, PodSubnet: node.PodSubnet.String(), PID: pid})
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(helperDir, "ready.json"), b, 0o644); err != nil {
		t.Fatal(err)
	}
	select {}
}

// TestFailedStartUndoes starts a node whose kubelet exits at once: Start
// reports it and leaves nothing behind.
func TestFailedStartUndoes(t *testing.T) {
	ctx, _, cp, dir, before := setup(t)
	bin := filepath.Join(dir, "bin")
	if err := os.MkdirAll(bin, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(bin, "kubelet"), []byte("#!/bin/sh\necho refusing >&2\nexit 3\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	cgroupsBefore, _ := filepath.Glob("/sys/fs/cgroup/*/realnode-*")
	bridge := fmt.Sprintf("rnfail%d", os.Getpid()%100000)
	node, err := realnode.Start(ctx, realnode.Options{
		Config: cp.Config,
		Users:  cp.Env,
		Dir:    filepath.Join(dir, "node"),
		BinDir: bin,
		Bridge: bridge,
	})
	if err == nil {
		_ = node.Stop()
		t.Fatal("Start succeeded with a kubelet that exits")
	}
	t.Logf("Start: %v", err)
	if !strings.Contains(err.Error(), "kubelet exited") {
		t.Errorf("the error does not say the kubelet exited: %v", err)
	}
	if procs, _ := procscan.Under(filepath.Join(dir, "node") + "/"); len(procs) > 0 {
		t.Errorf("processes left: %v", procs)
	}
	if _, err := net.InterfaceByName(bridge); err == nil {
		t.Errorf("bridge %s left", bridge)
	}
	if dirs, _ := filepath.Glob("/sys/fs/cgroup/*/realnode-*"); len(dirs) > len(cgroupsBefore) {
		t.Errorf("cgroups left: %v (before the run: %v)", dirs, cgroupsBefore)
	}
	assertMachineRestored(t, dir, before)
}
