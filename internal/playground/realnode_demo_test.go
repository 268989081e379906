package playground

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/client-go/tools/remotecommand"
)

// syncBuffer is the demo's output, written by the demo and read by the test.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestRealNodeDemo runs `valkey-local demo --real-node` until the sample is
// Active, then does what its printed kubectl logs and kubectl exec do,
// through the same API, and stops it as Ctrl-C does: nothing of the node
// stays mounted.
func TestRealNodeDemo(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Fatal("a real node runs containerd and a kubelet, which need root")
	}
	// Short: containerd's and the kubelet's unix sockets live under it.
	nodeDir, err := os.MkdirTemp("", "rn-pg-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(nodeDir) })
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	var out syncBuffer
	var logs, pong string
	err = Demo(ctx, DemoOptions{
		Dir: t.TempDir(), Out: &out, RealNode: true, NodeDir: nodeDir,
		Ready: func(ctx context.Context, s *Sample) error {
			// As Ctrl-C: stop once the commands ran, whatever they gave.
			defer cancel()
			try := s.RealNode
			if try == nil {
				return fmt.Errorf("the real-node demo gave nothing to try")
			}
			for _, want := range []string{
				fmt.Sprintf("logs -n %s %s -c %s", Namespace, try.Pod, try.Container),
				fmt.Sprintf("exec -n %s %s -c %s -- %s", Namespace, try.Pod, try.Container, strings.Join(try.Exec, " ")),
			} {
				if !strings.Contains(out.String(), "kubectl --kubeconfig "+try.Kubeconfig+" "+want) {
					return fmt.Errorf("the demo did not print kubectl ... %s", want)
				}
			}
			cfg, err := clientcmd.BuildConfigFromFlags("", try.Kubeconfig)
			if err != nil {
				return err
			}
			cs, err := kubernetes.NewForConfig(cfg)
			if err != nil {
				return err
			}
			b, err := cs.CoreV1().Pods(Namespace).GetLogs(try.Pod, &corev1.PodLogOptions{Container: try.Container}).DoRaw(ctx)
			if err != nil {
				return fmt.Errorf("logs of %s: %w", try.Pod, err)
			}
			logs = string(b)
			pong, err = execIn(ctx, cfg, cs, try.Pod, try.Container, try.Exec)
			return err
		},
	})
	if err != nil {
		t.Fatalf("demo: %v\n%s", err, out.String())
	}
	if !strings.Contains(logs, "Ready to accept connections") {
		t.Errorf("kubectl logs of the Valkey container: want valkey-server's start-up, got:\n%s", logs)
	}
	if strings.TrimSpace(pong) != "PONG" {
		t.Errorf("kubectl exec ... PING printed %q, want PONG", pong)
	}
	mounts, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(string(mounts), "\n") {
		if strings.Contains(l, nodeDir) {
			t.Errorf("still mounted after the demo stopped: %s", l)
		}
	}
}

// execIn runs argv in a pod's container as kubectl exec does, returning
// its output.
func execIn(ctx context.Context, cfg *rest.Config, cs kubernetes.Interface, pod, container string, argv []string) (string, error) {
	req := cs.CoreV1().RESTClient().Post().Resource("pods").Namespace(Namespace).Name(pod).SubResource("exec").
		VersionedParams(&corev1.PodExecOptions{Container: container, Command: argv, Stdout: true, Stderr: true}, scheme.ParameterCodec)
	ws, err := remotecommand.NewWebSocketExecutor(cfg, "GET", req.URL().String())
	if err != nil {
		return "", err
	}
	var stdout, stderr bytes.Buffer
	if err := ws.StreamWithContext(ctx, remotecommand.StreamOptions{Stdout: &stdout, Stderr: &stderr}); err != nil {
		return "", fmt.Errorf("exec %v in %s: %w (stderr: %s)", argv, pod, err, stderr.String())
	}
	return stdout.String() + stderr.String(), nil
}
