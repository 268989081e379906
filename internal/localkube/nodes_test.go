package localkube

import (
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gomomento/valkey-operator/internal/localkube/localkubetest"
	"github.com/gomomento/valkey-operator/internal/testbin"
)

func TestNodesAndLeases(t *testing.T) {
	t.Parallel()
	zones := map[string]bool{}
	for _, name := range testRT.NodeNames() {
		n, err := testCS.CoreV1().Nodes().Get(testCtx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		l := n.Labels
		if l[corev1.LabelHostname] != name || l[corev1.LabelOSStable] != "linux" || l[corev1.LabelArchStable] != runtime.GOARCH || l[corev1.LabelTopologyZone] == "" {
			t.Errorf("node %s labels: %v", name, l)
		}
		zones[l[corev1.LabelTopologyZone]] = true
		for _, r := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory, corev1.ResourcePods} {
			if q := n.Status.Allocatable[r]; q.IsZero() {
				t.Errorf("node %s has no allocatable %s", name, r)
			}
		}
		ready := false
		for _, c := range n.Status.Conditions {
			ready = ready || (c.Type == corev1.NodeReady && c.Status == corev1.ConditionTrue)
		}
		if !ready {
			t.Errorf("node %s is not Ready: %v", name, n.Status.Conditions)
		}
		// The node lifecycle controller taints nodes it thinks are gone.
		for _, taint := range n.Spec.Taints {
			t.Errorf("node %s has taint %v", name, taint)
		}
	}
	if len(testRT.NodeNames()) < 3 || len(zones) != 3 {
		t.Fatalf("nodes %v span zones %v, want 3", testRT.NodeNames(), zones)
	}
	name := testRT.NodeNames()[0]
	lease, err := testCS.CoordinationV1().Leases(nodeLeaseNamespace).Get(testCtx, name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if lease.Spec.HolderIdentity == nil || *lease.Spec.HolderIdentity != name || lease.Spec.RenewTime == nil {
		t.Fatalf("lease of %s: %+v", name, lease.Spec)
	}
	first := lease.Spec.RenewTime.Time
	eventually(t, 2*leaseRenewInterval, func() (bool, string) {
		l, err := testCS.CoordinationV1().Leases(nodeLeaseNamespace).Get(testCtx, name, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		return l.Spec.RenewTime.After(first), "lease not renewed since " + first.String()
	})
}

func TestSchedulerKeepsImpossiblePodPending(t *testing.T) {
	t.Parallel()
	ns := newNamespace(t)
	pod := sleepPod(ns, "nowhere")
	pod.Spec.NodeSelector = map[string]string{corev1.LabelTopologyZone: "zone-z"}
	createPod(t, pod)
	p := waitPod(t, ns, "nowhere", "unschedulable", func(p *corev1.Pod) bool {
		for _, c := range p.Status.Conditions {
			if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionFalse && c.Reason == corev1.PodReasonUnschedulable {
				return true
			}
		}
		return false
	})
	if p.Spec.NodeName != "" || p.Status.Phase != corev1.PodPending {
		t.Errorf("unschedulable pod: node=%q phase=%s", p.Spec.NodeName, p.Status.Phase)
	}
	deletePod(t, ns, "nowhere")
	waitGone(t, ns, "nowhere")
}

func TestSchedulerSpreadsAcrossZones(t *testing.T) {
	t.Parallel()
	ns := newNamespace(t)
	names := []string{"spread-0", "spread-1", "spread-2"}
	for _, n := range names {
		pod := sleepPod(ns, n)
		pod.Labels["group"] = "spread"
		pod.Spec.TopologySpreadConstraints = []corev1.TopologySpreadConstraint{{
			MaxSkew:           1,
			TopologyKey:       corev1.LabelTopologyZone,
			WhenUnsatisfiable: corev1.DoNotSchedule,
			LabelSelector:     &metav1.LabelSelector{MatchLabels: map[string]string{"group": "spread"}},
		}}
		createPod(t, pod)
	}
	zones := map[string]string{}
	for _, n := range names {
		p := waitPod(t, ns, n, "ready", isReady)
		node, err := testCS.CoreV1().Nodes().Get(testCtx, p.Spec.NodeName, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		zone := node.Labels[corev1.LabelTopologyZone]
		if other, dup := zones[zone]; dup {
			t.Errorf("pods %s and %s both in zone %s", other, n, zone)
		}
		zones[zone] = n
	}
	for _, n := range names {
		deletePod(t, ns, n)
	}
	for _, n := range names {
		waitGone(t, ns, n)
	}
	localkubetest.AssertNoLeakedProcesses(t, testRT.PodDirPrefix(ns))
}

func TestNamespaceDeletionRemovesPods(t *testing.T) {
	t.Parallel()
	ns := newNamespace(t)
	createPod(t, valkeyPod(ns, "doomed"))
	p := waitPod(t, ns, "doomed", "ready", isReady)
	pid := pidOf(t, p, "valkey")
	if err := testCS.CoreV1().Namespaces().Delete(testCtx, ns, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	// The controller-manager's namespace controller deletes the pod; the
	// runtime stops it and removes the object, which lets the namespace go.
	eventually(t, testTimeout, func() (bool, string) {
		_, err := testCS.CoreV1().Namespaces().Get(testCtx, ns, metav1.GetOptions{})
		return err != nil, "namespace still exists"
	})
	if processAlive(pid) {
		t.Errorf("process %d outlived its namespace", pid)
	}
	localkubetest.AssertNoLeakedProcesses(t, testRT.PodDirPrefix(ns))
}

func TestValkey9Image(t *testing.T) {
	t.Parallel()
	root, err := testbin.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, "bin", "valkey9", "usr", "bin", "valkey-server")); err != nil {
		t.Fatal("Valkey 9 not installed: run hack/install-valkey9.sh")
	}
	ns := newNamespace(t)
	pod := valkeyPod(ns, "nine")
	pod.Spec.Containers[0].Image = "valkey/valkey:9.0.1"
	// The probe's valkey-cli must come from the same build.
	pod.Spec.Containers[0].ReadinessProbe = &corev1.Probe{
		ProbeHandler:  corev1.ProbeHandler{Exec: &corev1.ExecAction{Command: []string{"sh", "-c", `valkey-cli -v | grep -q '^valkey-cli 9\.'`}}},
		PeriodSeconds: 1,
	}
	createPod(t, pod)
	p := waitPod(t, ns, "nine", "ready", isReady)
	conn := dialEventually(t, p.Status.PodIP+":6379")
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(5 * time.Second))
	if _, err := conn.Write([]byte("INFO server\r\n")); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 8192)
	n, _ := conn.Read(buf)
	if !strings.Contains(string(buf[:n]), "valkey_version:9.") {
		t.Errorf("INFO server of a valkey:9 pod:\n%s", buf[:n])
	}
	deletePod(t, ns, "nine")
	waitGone(t, ns, "nine")
	localkubetest.AssertNoLeakedProcesses(t, testRT.PodDirPrefix(ns))
}

// A node cut off from the apiserver (PauseNodeHeartbeat) holds its pods as
// they are: a deletion is not carried out and the process runs on, a
// status another controller wrote (the node lifecycle controller marking
// pods not Ready) is not written over. Heard from again, it catches up.
// Not parallel: every pod on the node freezes with it.
func TestSilentNodeHoldsItsPods(t *testing.T) {
	ns := newNamespace(t)
	node := testRT.NodeNames()[0]
	for _, name := range []string{"deleted", "kept"} {
		p := sleepPod(ns, name)
		p.Spec.NodeName = node
		createPod(t, p)
	}
	pid := pidOf(t, waitPod(t, ns, "deleted", "ready", isReady), "main")
	waitPod(t, ns, "kept", "ready", isReady)

	if err := testRT.PauseNodeHeartbeat(node, true); err != nil {
		t.Fatal(err)
	}
	resumed := false
	t.Cleanup(func() {
		if !resumed {
			_ = testRT.PauseNodeHeartbeat(node, false)
		}
	})
	deletePod(t, ns, "deleted")
	kept, err := testCS.CoreV1().Pods(ns).Get(testCtx, "kept", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for i, c := range kept.Status.Conditions {
		if c.Type == corev1.PodReady {
			kept.Status.Conditions[i].Status, kept.Status.Conditions[i].Reason = corev1.ConditionFalse, "NodeNotReady"
		}
	}
	if _, err := testCS.CoreV1().Pods(ns).UpdateStatus(testCtx, kept, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	time.Sleep(3 * time.Second) // the pods' grace period is 1 s
	p, err := testCS.CoreV1().Pods(ns).Get(testCtx, "deleted", metav1.GetOptions{})
	if err != nil || p.DeletionTimestamp == nil || !processAlive(pid) {
		t.Fatalf("deleted pod on a silent node: %v, process alive %v; want it terminating and running", err, processAlive(pid))
	}
	if isReady(waitPod(t, ns, "kept", "present", func(*corev1.Pod) bool { return true })) {
		t.Fatal("a silent node wrote its pod's status over the node controller's")
	}

	if err := testRT.PauseNodeHeartbeat(node, false); err != nil {
		t.Fatal(err)
	}
	resumed = true
	waitGone(t, ns, "deleted")
	if processAlive(pid) {
		t.Fatalf("process %d of a pod deleted while its node was silent survived the node's return", pid)
	}
	waitPod(t, ns, "kept", "Ready again", isReady)
}
