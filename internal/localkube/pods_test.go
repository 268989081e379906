package localkube

import (
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	"github.com/gomomento/valkey-operator/internal/localkube/localkubetest"
)

func TestValkeyPodsGetOwnAddressesAndServe(t *testing.T) {
	t.Parallel()
	ns := newNamespace(t)
	names := []string{"v-0", "v-1", "v-2"}
	for _, n := range names {
		createPod(t, valkeyPod(ns, n))
	}
	seen := map[string]string{}
	podCIDR := netip.MustParsePrefix("127.10.0.0/16")
	for _, n := range names {
		pod := waitPod(t, ns, n, "ready", isReady)
		ip := pod.Status.PodIP
		addr, err := netip.ParseAddr(ip)
		if err != nil || !podCIDR.Contains(addr) || ip == "127.0.0.1" {
			t.Fatalf("pod %s got address %q, want one in %s other than 127.0.0.1", n, ip, podCIDR)
		}
		if other, dup := seen[ip]; dup {
			t.Fatalf("pods %s and %s share address %s", other, n, ip)
		}
		seen[ip] = n
		st := pod.Status
		if st.Phase != corev1.PodRunning || st.HostIP != nodeAddress || len(st.PodIPs) != 1 || st.PodIPs[0].IP != ip || st.StartTime == nil {
			t.Errorf("pod %s status: phase=%s hostIP=%q podIPs=%v startTime=%v", n, st.Phase, st.HostIP, st.PodIPs, st.StartTime)
		}
		for _, ct := range []corev1.PodConditionType{corev1.PodScheduled, corev1.PodInitialized, corev1.ContainersReady, corev1.PodReady} {
			found := false
			for _, c := range st.Conditions {
				found = found || (c.Type == ct && c.Status == corev1.ConditionTrue)
			}
			if !found {
				t.Errorf("pod %s lacks condition %s=True: %v", n, ct, st.Conditions)
			}
		}
		if len(st.ContainerStatuses) != 1 {
			t.Fatalf("pod %s container statuses: %v", n, st.ContainerStatuses)
		}
		cs := st.ContainerStatuses[0]
		if cs.State.Running == nil || !cs.Ready || cs.Started == nil || !*cs.Started || cs.RestartCount != 0 ||
			cs.Image != "valkey/valkey:8.0.1" || !strings.HasPrefix(cs.ContainerID, "localkube://") {
			t.Errorf("pod %s container status: %+v", n, cs)
		}
		conn := dialEventually(t, net.JoinHostPort(ip, "6379"))
		if err := ping(conn); err != nil {
			t.Errorf("pod %s: %v", n, err)
		}
		conn.Close()
		// The container's working directory is its pod directory.
		pid := pidOf(t, pod, "valkey")
		cwd, _ := os.Readlink(filepath.Join("/proc", strconv.Itoa(pid), "cwd"))
		if dir, _ := testRT.PodDir(ns, n); cwd != dir {
			t.Errorf("pod %s runs in %q, want its pod dir %q", n, cwd, dir)
		}
	}
	for _, n := range names {
		deletePod(t, ns, n)
	}
	for _, n := range names {
		waitGone(t, ns, n)
	}
	localkubetest.AssertNoLeakedProcesses(t, testRT.PodDirPrefix(ns))
}

func TestDeletionKillsProcessAndRemovesObject(t *testing.T) {
	t.Parallel()
	ns := newNamespace(t)
	createPod(t, valkeyPod(ns, "graceful"))
	// This one ignores SIGTERM (an ignored signal stays ignored across exec),
	// so only the SIGKILL after the grace period ends it.
	stubborn := sleepPod(ns, "stubborn")
	stubborn.Spec.TerminationGracePeriodSeconds = ptr.To[int64](2)
	stubborn.Spec.Containers[0].Command = []string{"sh", "-c", "trap '' TERM; touch trapped; exec sleep 3600"}
	// Ready only once SIGTERM is ignored (the probe runs in the pod dir too).
	stubborn.Spec.Containers[0].ReadinessProbe = &corev1.Probe{
		ProbeHandler:  corev1.ProbeHandler{Exec: &corev1.ExecAction{Command: []string{"test", "-f", "trapped"}}},
		PeriodSeconds: 1,
	}
	createPod(t, stubborn)

	graceful := waitPod(t, ns, "graceful", "ready", isReady)
	gpid := pidOf(t, graceful, "valkey")
	st := waitPod(t, ns, "stubborn", "ready", isReady)
	spid := pidOf(t, st, "main")

	deletePod(t, ns, "graceful")
	waitGone(t, ns, "graceful")
	if processAlive(gpid) {
		t.Errorf("process %d of a deleted pod is still alive", gpid)
	}

	start := time.Now()
	deletePod(t, ns, "stubborn")
	// SIGTERM alone must not stop it.
	waitPod(t, ns, "stubborn", "terminating", func(p *corev1.Pod) bool { return p.DeletionTimestamp != nil })
	if !processAlive(spid) {
		t.Errorf("process ignoring SIGTERM died before its grace period")
	}
	waitGone(t, ns, "stubborn")
	if took := time.Since(start); took < 2*time.Second {
		t.Errorf("pod ignoring SIGTERM was removed after %s, before its 2s grace period", took)
	}
	if processAlive(spid) {
		t.Errorf("process %d survived SIGKILL", spid)
	}
	localkubetest.AssertNoLeakedProcesses(t, testRT.PodDirPrefix(ns))
}

func terminated(p *corev1.Pod) *corev1.ContainerStateTerminated {
	if len(p.Status.ContainerStatuses) == 0 {
		return nil
	}
	return p.Status.ContainerStatuses[0].State.Terminated
}

func TestContainerEndsPerRestartPolicy(t *testing.T) {
	t.Parallel()
	ns := newNamespace(t)
	createPod(t, valkeyPod(ns, "crash"))
	ok := sleepPod(ns, "done")
	ok.Spec.Containers[0].Command = []string{"valkey-server", "--version"}
	ok.Spec.Containers[0].Image = "valkey/valkey:8.0.1"
	createPod(t, ok)

	waitPod(t, ns, "crash", "ready", isReady)
	if err := testRT.KillContainer(ns, "crash", "valkey"); err != nil {
		t.Fatal(err)
	}
	p := waitPod(t, ns, "crash", "failed", func(p *corev1.Pod) bool { return p.Status.Phase == corev1.PodFailed })
	if term := terminated(p); term == nil || term.ExitCode != 137 || term.Reason != "Error" {
		t.Errorf("killed container: %+v", p.Status.ContainerStatuses)
	}
	if podReady(p) {
		t.Error("failed pod is still Ready")
	}
	if err := testRT.KillContainer(ns, "crash", "valkey"); err == nil {
		t.Error("KillContainer of a dead container succeeded")
	}

	p = waitPod(t, ns, "done", "succeeded", func(p *corev1.Pod) bool { return p.Status.Phase == corev1.PodSucceeded })
	if term := terminated(p); term == nil || term.ExitCode != 0 || term.Reason != "Completed" {
		t.Errorf("finished container: %+v", p.Status.ContainerStatuses)
	}
	if logs, err := testRT.Logs(ns, "done", "main"); err != nil || !strings.Contains(logs, "v=8.") {
		t.Errorf("logs of valkey-server --version: %q, %v", logs, err)
	}
	for _, n := range []string{"crash", "done"} {
		deletePod(t, ns, n)
		waitGone(t, ns, n)
	}
	localkubetest.AssertNoLeakedProcesses(t, testRT.PodDirPrefix(ns))
}

func TestProbes(t *testing.T) {
	t.Parallel()
	ns := newNamespace(t)

	// Exec probes through a shell, the container's env and the image's
	// valkey-cli on PATH: readiness passes, liveness (wrong port) fails.
	graceful := valkeyPod(ns, "exec-live")
	graceful.Spec.Containers[0].ReadinessProbe = &corev1.Probe{
		ProbeHandler:   corev1.ProbeHandler{Exec: &corev1.ExecAction{Command: []string{"sh", "-c", `valkey-cli -h "$POD_IP" -p 6379 ping | grep -q PONG`}}},
		PeriodSeconds:  1,
		TimeoutSeconds: 5,
	}
	graceful.Spec.Containers[0].LivenessProbe = &corev1.Probe{
		ProbeHandler:        corev1.ProbeHandler{Exec: &corev1.ExecAction{Command: []string{"sh", "-c", `valkey-cli -h "$POD_IP" -p 6390 ping | grep -q PONG`}}},
		InitialDelaySeconds: 4,
		PeriodSeconds:       1,
		FailureThreshold:    2,
	}
	createPod(t, graceful)

	// A hung process: SIGTERM does nothing, SIGKILL ends it.
	hung := sleepPod(ns, "hung")
	hung.Spec.Containers[0].Command = []string{"sh", "-c", "trap '' TERM; exec sleep 3600"}
	hung.Spec.Containers[0].LivenessProbe = &corev1.Probe{
		ProbeHandler: corev1.ProbeHandler{TCPSocket: &corev1.TCPSocketAction{Port: intstr.FromInt32(6379)}},
		// Give the shell time to ignore SIGTERM before the first probe.
		InitialDelaySeconds: 2,
		PeriodSeconds:       1,
		FailureThreshold:    1,
	}
	createPod(t, hung)

	always := valkeyPod(ns, "tcp-live")
	always.Spec.RestartPolicy = corev1.RestartPolicyAlways
	always.Spec.Containers[0].LivenessProbe = &corev1.Probe{
		ProbeHandler:     corev1.ProbeHandler{TCPSocket: &corev1.TCPSocketAction{Port: intstr.FromInt32(6390)}},
		PeriodSeconds:    1,
		FailureThreshold: 1,
	}
	createPod(t, always)

	healthy := valkeyPod(ns, "tcp-ok")
	healthy.Spec.Containers[0].LivenessProbe = &corev1.Probe{
		ProbeHandler:  corev1.ProbeHandler{TCPSocket: &corev1.TCPSocketAction{Port: intstr.FromString("valkey")}},
		PeriodSeconds: 1,
	}
	createPod(t, healthy)

	// Ready once the exec readiness probe passed, then stopped by the
	// liveness probe. valkey-server exits 0 on SIGTERM, so as with the
	// kubelet the container ends Completed and the pod Succeeded.
	p := waitPod(t, ns, "exec-live", "ready or finished", func(p *corev1.Pod) bool {
		return isReady(p) || p.Status.Phase == corev1.PodFailed || p.Status.Phase == corev1.PodSucceeded
	})
	if !isReady(p) {
		t.Fatalf("pod finished before its readiness probe passed: %+v", p.Status.ContainerStatuses)
	}
	p = waitPod(t, ns, "exec-live", "succeeded", func(p *corev1.Pod) bool { return p.Status.Phase == corev1.PodSucceeded })
	if term := terminated(p); term == nil || term.ExitCode != 0 || !strings.Contains(term.Message, "Liveness probe failed") {
		t.Errorf("container after liveness failure: %+v", p.Status.ContainerStatuses)
	}

	p = waitPod(t, ns, "hung", "failed", func(p *corev1.Pod) bool { return p.Status.Phase == corev1.PodFailed })
	if term := terminated(p); term == nil || term.ExitCode != 137 || term.Reason != "Error" {
		t.Errorf("hung container after liveness failure: %+v", p.Status.ContainerStatuses)
	}

	p = waitPod(t, ns, "tcp-live", "restarted twice", func(p *corev1.Pod) bool {
		return len(p.Status.ContainerStatuses) == 1 && p.Status.ContainerStatuses[0].RestartCount >= 2
	})
	cs := p.Status.ContainerStatuses[0]
	if p.Status.Phase != corev1.PodRunning || cs.LastTerminationState.Terminated == nil {
		t.Errorf("restarting pod: phase=%s status=%+v", p.Status.Phase, cs)
	}

	// The passing probe has run many times by now and never killed it.
	p = waitPod(t, ns, "tcp-ok", "ready", isReady)
	if p.Status.ContainerStatuses[0].RestartCount != 0 || p.Status.Phase != corev1.PodRunning {
		t.Errorf("healthy pod: %+v", p.Status)
	}
	names := []string{"exec-live", "hung", "tcp-live", "tcp-ok"}
	for _, n := range names {
		deletePod(t, ns, n)
	}
	for _, n := range names {
		waitGone(t, ns, n)
	}
	localkubetest.AssertNoLeakedProcesses(t, testRT.PodDirPrefix(ns))
}

func TestStartStop50Pods(t *testing.T) {
	if testing.Short() {
		t.Skip("starts 50 valkey-server processes")
	}
	ns := newNamespace(t)
	up, down := startStopPods(t, ns, 50)
	t.Logf("50 pods: all Ready after %s, all gone after %s more", up.Round(time.Millisecond), down.Round(time.Millisecond))
	localkubetest.AssertNoLeakedProcesses(t, testRT.PodDirPrefix(ns))
}

func BenchmarkStartStop50Pods(b *testing.B) {
	var up, down time.Duration
	for i := 0; i < b.N; i++ {
		ns := newNamespace(b)
		u, d := startStopPods(b, ns, 50)
		up += u
		down += d
		localkubetest.AssertNoLeakedProcesses(b, testRT.PodDirPrefix(ns))
	}
	b.ReportMetric(up.Seconds()/float64(b.N), "s-to-ready/op")
	b.ReportMetric(down.Seconds()/float64(b.N), "s-to-gone/op")
}

// startStopPods creates n valkey pods, waits until all are Ready, deletes
// them and waits until all are gone.
func startStopPods(t testing.TB, ns string, n int) (up, down time.Duration) {
	t.Helper()
	start := time.Now()
	for i := range n {
		createPod(t, valkeyPod(ns, "p-"+strconv.Itoa(i)))
	}
	eventually(t, 3*testTimeout, func() (bool, string) {
		list, err := testCS.CoreV1().Pods(ns).List(testCtx, metav1.ListOptions{})
		if err != nil {
			return false, err.Error()
		}
		ready := 0
		ips := map[string]bool{}
		for i := range list.Items {
			if isReady(&list.Items[i]) {
				ready++
				ips[list.Items[i].Status.PodIP] = true
			}
		}
		if ready == n && len(ips) != n {
			t.Fatalf("%d ready pods share %d addresses", n, len(ips))
		}
		return ready == n, strconv.Itoa(ready) + " of " + strconv.Itoa(n) + " ready"
	})
	up = time.Since(start)
	start = time.Now()
	if err := testCS.CoreV1().Pods(ns).DeleteCollection(testCtx, metav1.DeleteOptions{}, metav1.ListOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, 3*testTimeout, func() (bool, string) {
		list, err := testCS.CoreV1().Pods(ns).List(testCtx, metav1.ListOptions{})
		if err != nil {
			return false, err.Error()
		}
		return len(list.Items) == 0, strconv.Itoa(len(list.Items)) + " pods left"
	})
	return up, time.Since(start)
}

// A preStop sleep keeps the process running, untouched, for its length;
// SIGTERM comes after it, within the grace period.
func TestPreStopSleepHoldsSIGTERM(t *testing.T) {
	t.Parallel()
	ns := newNamespace(t)
	out := t.TempDir()
	const hold = 2 * time.Second
	p := sleepPod(ns, "held")
	p.Spec.TerminationGracePeriodSeconds = ptr.To[int64](10)
	p.Spec.Containers[0].Command = []string{"sh", "-c",
		"trap 'date +%s%N > " + out + "/term; exit 0' TERM; touch " + out + "/started; while :; do sleep 0.05; done"}
	p.Spec.Containers[0].Lifecycle = &corev1.Lifecycle{
		PreStop: &corev1.LifecycleHandler{Sleep: &corev1.SleepAction{Seconds: int64(hold / time.Second)}},
	}
	createPod(t, p)
	waitPod(t, ns, "held", "running", func(p *corev1.Pod) bool { return p.Status.Phase == corev1.PodRunning })
	eventually(t, 10*time.Second, func() (bool, string) {
		_, err := os.Stat(out + "/started")
		return err == nil, "the shell has not set its trap"
	})

	deleted := time.Now()
	deletePod(t, ns, "held")
	waitGone(t, ns, "held")
	raw, err := os.ReadFile(out + "/term")
	if err != nil {
		t.Fatalf("the process never got SIGTERM: %v", err)
	}
	ns64, err := strconv.ParseInt(strings.TrimSpace(string(raw)), 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	if at := time.Unix(0, ns64); at.Sub(deleted) < hold {
		t.Errorf("SIGTERM %s after the deletion, inside the %s preStop hold", at.Sub(deleted), hold)
	}
	localkubetest.AssertNoLeakedProcesses(t, testRT.PodDirPrefix(ns))
}
