package localkube

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"github.com/gomomento/valkey-operator/internal/localkube/procscan"
	"github.com/gomomento/valkey-operator/internal/testbin"
)

// One control plane and one runtime for the whole package; each test works
// in its own namespace.
var (
	testCP  *ControlPlane
	testRT  *Runtime
	testCS  kubernetes.Interface
	testCtx = context.Background()
)

const (
	testProjectionDelay = time.Second
	testTimeout         = 60 * time.Second
)

func TestMain(m *testing.M) {
	os.Exit(runTests(m))
}

func runTests(m *testing.M) int {
	if _, err := testbin.Dir(testbin.AllBinaries...); err != nil {
		fmt.Fprintln(os.Stderr, "localkube tests need the control plane binaries:", err)
		return 1
	}
	if _, err := exec.LookPath("valkey-server"); err != nil {
		fmt.Fprintln(os.Stderr, "localkube tests need valkey-server: run hack/install-valkey.sh")
		return 1
	}
	base, err := os.MkdirTemp("", "localkube-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(base)
	start := time.Now()
	testCP, err = StartControlPlane(testCtx, ControlPlaneOptions{})
	if err != nil {
		fmt.Fprintln(os.Stderr, "starting control plane:", err)
		return 1
	}
	defer testCP.Stop()
	testRT, err = StartRuntime(testCtx, Options{
		Config:          testCP.Config,
		BaseDir:         base,
		ProjectionDelay: testProjectionDelay,
		RestartBackoff:  200 * time.Millisecond,
	})
	if err != nil {
		fmt.Fprintln(os.Stderr, "starting runtime:", err)
		return 1
	}
	testCS = testRT.Client()
	fmt.Fprintf(os.Stderr, "control plane and runtime up in %s\n", time.Since(start).Round(time.Millisecond))
	code := m.Run()
	if err := testRT.Stop(); err != nil {
		fmt.Fprintln(os.Stderr, "stopping runtime:", err)
		code = 1
	}
	if leaked, err := procscan.Under(base); err != nil || len(leaked) > 0 {
		fmt.Fprintf(os.Stderr, "processes leaked after Stop: %v %v\n", leaked, err)
		code = 1
	}
	return code
}

func newNamespace(t testing.TB) string {
	t.Helper()
	b := make([]byte, 3)
	_, _ = rand.Read(b)
	name := "lk-" + strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= '0' && r <= '9' {
			return r
		}
		return '-'
	}, strings.ToLower(t.Name()))
	if len(name) > 50 {
		name = name[:50]
	}
	name = strings.TrimRight(name, "-") + "-" + hex.EncodeToString(b)
	_, err := testCS.CoreV1().Namespaces().Create(testCtx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = testCS.CoreV1().Namespaces().Delete(testCtx, name, metav1.DeleteOptions{})
	})
	return name
}

// eventually polls cond until it holds; on timeout it fails with the last
// reason cond gave.
func eventually(t testing.TB, timeout time.Duration, cond func() (bool, string)) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		ok, why := cond()
		if ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s: %s", timeout, why)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func waitPod(t testing.TB, ns, name string, what string, cond func(*corev1.Pod) bool) *corev1.Pod {
	t.Helper()
	var pod *corev1.Pod
	eventually(t, testTimeout, func() (bool, string) {
		p, err := testCS.CoreV1().Pods(ns).Get(testCtx, name, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		pod = p
		return cond(p), fmt.Sprintf("pod %s/%s not %s: phase=%s conditions=%v containers=%v", ns, name, what, p.Status.Phase, p.Status.Conditions, p.Status.ContainerStatuses)
	})
	return pod
}

func isReady(p *corev1.Pod) bool { return podReady(p) }

func waitGone(t testing.TB, ns, name string) {
	t.Helper()
	eventually(t, testTimeout, func() (bool, string) {
		_, err := testCS.CoreV1().Pods(ns).Get(testCtx, name, metav1.GetOptions{})
		return apierrors.IsNotFound(err), fmt.Sprintf("pod %s/%s still exists (%v)", ns, name, err)
	})
}

func createPod(t testing.TB, pod *corev1.Pod) *corev1.Pod {
	t.Helper()
	p, err := testCS.CoreV1().Pods(pod.Namespace).Create(testCtx, pod, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("creating pod %s: %v", pod.Name, err)
	}
	return p
}

func deletePod(t testing.TB, ns, name string) {
	t.Helper()
	if err := testCS.CoreV1().Pods(ns).Delete(testCtx, name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
		t.Fatal(err)
	}
}

var podIPEnv = corev1.EnvVar{Name: "POD_IP", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "status.podIP"}}}

// valkeyPod is a plain valkey-server pod listening on its own address.
func valkeyPod(ns, name string, extraArgs ...string) *corev1.Pod {
	args := append([]string{"--port", "6379", "--bind", "$(POD_IP)", "--save", "", "--appendonly", "no"}, extraArgs...)
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: map[string]string{"app": "valkey"}},
		Spec: corev1.PodSpec{
			RestartPolicy:                 corev1.RestartPolicyNever,
			TerminationGracePeriodSeconds: ptr.To[int64](5),
			Containers: []corev1.Container{{
				Name:    "valkey",
				Image:   "valkey/valkey:8.0.1",
				Command: []string{"valkey-server"},
				Args:    args,
				Env:     []corev1.EnvVar{podIPEnv},
				Ports:   []corev1.ContainerPort{{Name: "valkey", ContainerPort: 6379}},
			}},
		},
	}
}

// sleepPod runs a host program that does nothing, for tests about volumes
// and scheduling.
func sleepPod(ns, name string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: map[string]string{"app": "sleep"}},
		Spec: corev1.PodSpec{
			RestartPolicy:                 corev1.RestartPolicyNever,
			TerminationGracePeriodSeconds: ptr.To[int64](1),
			Containers: []corev1.Container{{
				Name:    "main",
				Image:   "busybox:1.36",
				Command: []string{"sleep", "3600"},
			}},
		},
	}
}

// dialEventually connects to a pod that is Ready but may not listen yet
// (Ready means started when there is no readiness probe).
func dialEventually(t testing.TB, addr string) net.Conn {
	t.Helper()
	var conn net.Conn
	eventually(t, 10*time.Second, func() (bool, string) {
		var err error
		conn, err = testRT.DialContext(testCtx, "tcp", addr)
		if err != nil {
			return false, err.Error()
		}
		return true, ""
	})
	return conn
}

// ping sends an inline PING on conn and expects +PONG.
func ping(conn net.Conn) error {
	return command(conn, "PING", "+PONG")
}

func command(conn net.Conn, cmd, wantPrefix string) error {
	_ = conn.SetDeadline(time.Now().Add(5 * time.Second))
	if _, err := conn.Write([]byte(cmd + "\r\n")); err != nil {
		return err
	}
	line, err := bufio.NewReader(conn).ReadString('\n')
	if err != nil {
		return err
	}
	if !strings.HasPrefix(line, wantPrefix) {
		return fmt.Errorf("%s answered %q, want %q", cmd, strings.TrimSpace(line), wantPrefix)
	}
	return nil
}

// pidOf reads the process id out of a running container's containerID.
func pidOf(t testing.TB, pod *corev1.Pod, container string) int {
	t.Helper()
	for _, cs := range pod.Status.ContainerStatuses {
		if cs.Name == container {
			i := strings.LastIndex(cs.ContainerID, "-")
			pid, err := strconv.Atoi(cs.ContainerID[i+1:])
			if err != nil {
				t.Fatalf("containerID %q has no pid", cs.ContainerID)
			}
			return pid
		}
	}
	t.Fatalf("pod %s has no status for container %s", pod.Name, container)
	return 0
}
