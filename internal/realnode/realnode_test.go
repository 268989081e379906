//go:build realnode

package realnode_test

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"github.com/gomomento/valkey-operator/internal/localkube"
	"github.com/gomomento/valkey-operator/internal/localkube/procscan"
	"github.com/gomomento/valkey-operator/internal/realnode"
)

// TestHardenedPodOnRealNode starts a control plane and a real node
// (containerd, runc, CNI bridge, kubelet), runs the pause image as a
// hardened pod, deletes it, stops the node and checks that nothing of the
// run is left on the machine.
func TestHardenedPodOnRealNode(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("a real node needs root")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	dir := t.TempDir()

	sysctlsBefore := map[string]string{}
	for _, name := range realnode.Sysctls {
		if v, err := realnode.ReadSysctl(name); err == nil {
			sysctlsBefore[name] = v
		}
	}
	outsideBefore := existing(realnode.OutsidePaths)

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
	})
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := cp.Stop(); err != nil {
			t.Errorf("stopping the control plane: %v", err)
		}
	}()
	t.Logf("control plane up in %v", time.Since(t0).Round(time.Millisecond))

	t1 := time.Now()
	node, err := realnode.Start(ctx, realnode.Options{
		Config:          cp.Config,
		Users:           cp.Env,
		Dir:             filepath.Join(dir, "node"),
		KubeletClientCA: kc.CAFile,
	})
	if err != nil {
		t.Fatal(err)
	}
	stopped := false
	defer func() {
		if !stopped {
			if err := node.Stop(); err != nil {
				t.Errorf("stopping the node: %v", err)
			}
		}
	}()
	t.Logf("node %s Ready in %v (bridge %s, pod subnet %s, IP %s)", node.Name, time.Since(t1).Round(time.Millisecond), node.Bridge, node.PodSubnet, node.IP)
	for _, s := range node.Timings {
		t.Logf("  %-20s %v", s.Step, s.Took.Round(time.Millisecond))
	}
	cgroupDirs, _ := filepath.Glob(filepath.Join("/sys/fs/cgroup", "*", node.CgroupRoot))
	if len(cgroupDirs) == 0 {
		t.Errorf("no cgroup %s made", node.CgroupRoot)
	}

	cs, err := kubernetes.NewForConfig(cp.Config)
	if err != nil {
		t.Fatal(err)
	}
	ns := "default"
	secret := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "creds", Namespace: ns},
		Data:       map[string][]byte{"password": []byte("s3cret")},
	}
	if _, err := cs.CoreV1().Secrets(ns).Create(ctx, secret, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	pod := hardenedPod(ns, node.Name)
	t2 := time.Now()
	if _, err := cs.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	var running *corev1.Pod
	if err := waitFor(ctx, time.Minute, func() (bool, string) {
		p, err := cs.CoreV1().Pods(ns).Get(ctx, pod.Name, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		running = p
		return p.Status.Phase == corev1.PodRunning && p.Status.PodIP != "", podState(p)
	}); err != nil {
		t.Fatalf("pod did not run: %v\n(logs in %s)", err, node.LogDir())
	}
	t.Logf("pod create → Running in %v, IP %s", time.Since(t2).Round(time.Millisecond), running.Status.PodIP)
	if ip := net.ParseIP(running.Status.PodIP); ip == nil || !node.PodSubnet.Contains(ip) {
		t.Errorf("pod IP %s is not in the run's subnet %s", running.Status.PodIP, node.PodSubnet)
	}

	// The container's process, found in the run's cgroups.
	pid := pausePID(t, node.CgroupRoot)
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
	} else if fi.Mode().Perm() != 0o440 {
		t.Errorf("secret file mode %v, want 0440", fi.Mode().Perm())
	}
	if err := os.WriteFile(filepath.Join(root, "pause-was-here"), nil, 0o644); err == nil {
		t.Errorf("root filesystem of the container is writable")
	}

	// Logs go from the apiserver to the kubelet at its InternalIP, with the
	// apiserver's kubelet client certificate.
	if _, err := cs.CoreV1().Pods(ns).GetLogs(pod.Name, &corev1.PodLogOptions{}).DoRaw(ctx); err != nil {
		t.Errorf("pod logs through the apiserver: %v", err)
	}

	t3 := time.Now()
	if err := cs.CoreV1().Pods(ns).Delete(ctx, pod.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := waitFor(ctx, time.Minute, func() (bool, string) {
		p, err := cs.CoreV1().Pods(ns).Get(ctx, pod.Name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return true, ""
		}
		if err != nil {
			return false, err.Error()
		}
		return false, podState(p)
	}); err != nil {
		t.Fatalf("pod not deleted: %v", err)
	}
	t.Logf("pod delete → gone in %v", time.Since(t3).Round(time.Millisecond))

	t4 := time.Now()
	stopped = true
	if err := node.Stop(); err != nil {
		t.Errorf("stopping the node: %v", err)
	}
	t.Logf("node stopped and cleaned up in %v", time.Since(t4).Round(time.Millisecond))

	// Nothing of the run is left.
	if procs, err := procscan.Under(node.Dir() + "/"); err != nil {
		t.Error(err)
	} else if len(procs) > 0 {
		t.Errorf("processes of the run left: %v", procs)
	}
	if _, err := os.Stat(fmt.Sprintf("/proc/%d", pid)); err == nil {
		t.Errorf("container process %d still alive", pid)
	}
	if mounts, err := realnode.MountsUnder(dir); err != nil {
		t.Error(err)
	} else if len(mounts) > 0 {
		t.Errorf("mounts left under %s: %v", dir, mounts)
	}
	if _, err := net.InterfaceByName(node.Bridge); err == nil {
		t.Errorf("bridge %s still exists", node.Bridge)
	}
	for _, d := range cgroupDirs {
		if _, err := os.Stat(d); err == nil {
			t.Errorf("cgroup %s still exists", d)
		}
	}
	for name, before := range sysctlsBefore {
		if now, _ := realnode.ReadSysctl(name); now != before {
			t.Errorf("sysctl %s = %s after the run, %s before", name, now, before)
		}
	}
	outsideAfter := existing(realnode.OutsidePaths)
	for _, p := range realnode.OutsidePaths {
		if outsideAfter[p] != outsideBefore[p] {
			t.Errorf("%s: existed before the run %v, after %v", p, outsideBefore[p], outsideAfter[p])
		}
	}
	if _, err := cs.CoreV1().Nodes().Get(ctx, node.Name, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("Node %s not deleted: %v", node.Name, err)
	}
}

func hardenedPod(ns, nodeName string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "hardened", Namespace: ns},
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

// pausePID is the one process in the cgroups under root running /pause as
// user 999: the pod's container (the sandbox's pause runs as root).
func pausePID(t *testing.T, root string) int {
	t.Helper()
	tops, _ := filepath.Glob(filepath.Join("/sys/fs/cgroup", "pids", root))
	if len(tops) == 0 {
		tops, _ = filepath.Glob(filepath.Join("/sys/fs/cgroup", "*", root))
	}
	for _, top := range tops {
		for _, pid := range realnode.CgroupPIDs(top) {
			if strings.HasPrefix(procStatus(t, pid)["Uid"], "999\t") {
				return pid
			}
		}
	}
	t.Fatalf("no process of user 999 in cgroup %s", root)
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
