package localkube

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// An apiserver outage: stopped, its clients fail while pods run on; started
// again, every client made before reaches it with the same configuration.
// Not parallel: every other test needs the apiserver.
func TestAPIServerOutage(t *testing.T) {
	ns := newNamespace(t)
	createPod(t, sleepPod(ns, "through"))
	pid := pidOf(t, waitPod(t, ns, "through", "ready", isReady), "main")

	if err := testCP.StopAPIServer(); err != nil {
		t.Fatal(err)
	}
	restarted := false
	t.Cleanup(func() {
		if !restarted {
			_ = testCP.StartAPIServer()
		}
	})
	if _, err := testCS.CoreV1().Namespaces().Get(testCtx, ns, metav1.GetOptions{}); err == nil {
		t.Fatal("the apiserver answered while stopped")
	}
	time.Sleep(2 * time.Second)
	if !processAlive(pid) {
		t.Fatalf("the pod's process %d died with the apiserver", pid)
	}
	start := time.Now()
	if err := testCP.StartAPIServer(); err != nil {
		t.Fatal(err)
	}
	restarted = true
	t.Logf("apiserver back after %s", time.Since(start).Round(time.Millisecond))
	if got := pidOf(t, waitPod(t, ns, "through", "ready", isReady), "main"); got != pid {
		t.Fatalf("the pod's process is %d after the outage, was %d", got, pid)
	}
	createPod(t, sleepPod(ns, "after"))
	waitPod(t, ns, "after", "ready", isReady)
}
