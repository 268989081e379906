package localkube

import (
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
)

func TestRestartDelay(t *testing.T) {
	const base, max = 10 * time.Second, 5 * time.Minute
	for _, tc := range []struct {
		name     string
		ann      map[string]string
		restarts int32
		want     time.Duration
	}{
		{"no annotation, first restart", nil, 0, 10 * time.Second},
		{"no annotation, doubled per restart", nil, 2, 40 * time.Second},
		{"no annotation, capped", nil, 10, 5 * time.Minute},
		{"annotated", map[string]string{RestartDelayAnnotation: "20s"}, 0, 20 * time.Second},
		{"annotated, not doubled", map[string]string{RestartDelayAnnotation: "20s"}, 3, 20 * time.Second},
		{"annotated beyond the cap", map[string]string{RestartDelayAnnotation: "10m"}, 0, 10 * time.Minute},
		{"annotated zero: at once", map[string]string{RestartDelayAnnotation: "0s"}, 4, 0},
		{"unparsable: the backoff", map[string]string{RestartDelayAnnotation: "soon"}, 1, 20 * time.Second},
		{"negative: the backoff", map[string]string{RestartDelayAnnotation: "-1s"}, 0, 10 * time.Second},
		{"other annotations only", map[string]string{"a": "1s"}, 0, 10 * time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := restartDelay(tc.ann, tc.restarts, base, max); got != tc.want {
				t.Errorf("restartDelay(%v, %d) = %s, want %s", tc.ann, tc.restarts, got, tc.want)
			}
		})
	}
}

// A crashed container of a pod annotated with a restart delay waits that
// delay, not the runtime's backoff (200 ms in these tests), and says so in
// its waiting state; a pod beside it without the annotation is restarted
// on the runtime's backoff.
func TestRestartDelayAnnotationHoldsThePodsRestart(t *testing.T) {
	t.Parallel()
	ns := newNamespace(t)
	held := valkeyPod(ns, "held")
	held.Spec.RestartPolicy = corev1.RestartPolicyOnFailure
	held.Annotations = map[string]string{RestartDelayAnnotation: "1h"}
	plain := valkeyPod(ns, "plain")
	plain.Spec.RestartPolicy = corev1.RestartPolicyOnFailure
	createPod(t, held)
	createPod(t, plain)
	for _, name := range []string{"held", "plain"} {
		waitPod(t, ns, name, "ready", isReady)
		if err := testRT.KillContainer(ns, name, "valkey"); err != nil {
			t.Fatal(err)
		}
	}
	waitPod(t, ns, "plain", "restarted", func(p *corev1.Pod) bool {
		return len(p.Status.ContainerStatuses) == 1 && p.Status.ContainerStatuses[0].RestartCount == 1 && isReady(p)
	})
	p := waitPod(t, ns, "held", "waiting out its delay", func(p *corev1.Pod) bool {
		if len(p.Status.ContainerStatuses) != 1 {
			return false
		}
		w := p.Status.ContainerStatuses[0].State.Waiting
		return w != nil && w.Reason == reasonCrashLoop
	})
	cs := p.Status.ContainerStatuses[0]
	if !strings.Contains(cs.State.Waiting.Message, "back-off 1h0m0s") || cs.RestartCount != 0 {
		t.Errorf("held container: restarts %d, waiting %q; want no restart and a back-off of 1h0m0s", cs.RestartCount, cs.State.Waiting.Message)
	}
	for _, n := range []string{"held", "plain"} {
		deletePod(t, ns, n)
		waitGone(t, ns, n)
	}
}
