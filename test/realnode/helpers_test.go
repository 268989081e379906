package realnode

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/valkey-io/valkey-go"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/httpstream"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/remotecommand"
	utilexec "k8s.io/client-go/util/exec"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	valkeyv1 "github.com/gomomento/valkey-operator/api/v1alpha1"
	"github.com/gomomento/valkey-operator/internal/chartinstall"
	"github.com/gomomento/valkey-operator/internal/realnode"
	"github.com/gomomento/valkey-operator/internal/testenv"
	"github.com/gomomento/valkey-operator/internal/topology"
	vk "github.com/gomomento/valkey-operator/internal/valkey"
)

// eventually polls cond until it returns nil or the timeout passes.
func eventually(t testing.TB, timeout time.Duration, what string, cond func() error) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	var err error
	for time.Now().Before(deadline) {
		if err = cond(); err == nil {
			return
		}
		time.Sleep(200 * time.Millisecond)
	}
	t.Fatalf("timed out after %s waiting for %s: %v", timeout, what, err)
}

func createNamespace(t testing.TB, name string) {
	t.Helper()
	if err := k8sClient.Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}); err != nil {
		t.Fatalf("creating namespace %s: %v", name, err)
	}
}

// createMenu creates a ValkeyImage of Valkey 8.0.1 and a ValkeyConfig on it
// with maxmemory 64mb, the metrics exporter beside Valkey when exporter is
// set, and edits applied, both named after name, and returns the config's
// name.
func createMenu(t testing.TB, name string, exporter bool, edits ...func(*valkeyv1.ValkeyConfigSpec)) string {
	t.Helper()
	img := &valkeyv1.ValkeyImage{ObjectMeta: metav1.ObjectMeta{Name: "valkey-" + name},
		Spec: valkeyv1.ValkeyImageSpec{Repository: "valkey/valkey", Tag: "8.0.1", Version: "8.0.1"}}
	cfg := &valkeyv1.ValkeyConfig{ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: valkeyv1.ValkeyConfigSpec{ImageRef: img.Name, Valkey: map[string]string{"maxmemory": "64mb"}}}
	if exporter {
		cfg.Spec.Exporter = &valkeyv1.Exporter{Enabled: ptr.To(true)}
	}
	for _, edit := range edits {
		edit(&cfg.Spec)
	}
	for _, o := range []client.Object{img, cfg} {
		if err := k8sClient.Create(context.Background(), o); err != nil {
			t.Fatalf("creating %s: %v", o.GetName(), err)
		}
	}
	return cfg.Name
}

// createCluster creates a plaintext cluster with edits applied, deleted
// when the test ends.
func createCluster(t testing.TB, ns, name, config string, shards, replicas int, edits ...func(*valkeyv1.ValkeyClusterSpec)) client.ObjectKey {
	t.Helper()
	vc := &valkeyv1.ValkeyCluster{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: valkeyv1.ValkeyClusterSpec{ConfigRef: config, Shards: int32(shards), ReplicasPerShard: int32(replicas)}}
	for _, edit := range edits {
		edit(&vc.Spec)
	}
	if err := k8sClient.Create(context.Background(), vc); err != nil {
		t.Fatal(err)
	}
	key := client.ObjectKeyFromObject(vc)
	t.Cleanup(func() {
		if t.Failed() {
			logState(t, key)
		}
		_ = k8sClient.Delete(context.Background(), vc)
		waitClusterPodsGone(t, key)
	})
	return key
}

func getCluster(t testing.TB, key client.ObjectKey) *valkeyv1.ValkeyCluster {
	t.Helper()
	var vc valkeyv1.ValkeyCluster
	if err := k8sClient.Get(context.Background(), key, &vc); err != nil {
		t.Fatalf("get cluster %s: %v", key, err)
	}
	return &vc
}

// waitConverged waits until the cluster is Active with every slot
// assigned, exactly shards×(1+replicas) members, the change done
// (Progressing False), every ValkeyNode Active, and the nodes themselves
// reporting shards primaries with slots and shards×replicas replicas whose
// link is up. except names pods that must not be members.
func waitConverged(t testing.TB, key client.ObjectKey, shards, replicas int, timeout time.Duration, except ...string) *valkeyv1.ValkeyCluster {
	t.Helper()
	return waitConvergedVia(t, key, shards, replicas, timeout, func(name string) (*vk.Node, error) {
		return dialPod(key.Namespace, name)
	}, except...)
}

// waitConvergedVia is waitConverged asking the nodes through dial.
func waitConvergedVia(t testing.TB, key client.ObjectKey, shards, replicas int, timeout time.Duration,
	dial func(name string) (*vk.Node, error), except ...string) *valkeyv1.ValkeyCluster {
	t.Helper()
	var vc *valkeyv1.ValkeyCluster
	eventually(t, timeout, fmt.Sprintf("%s converged to %dx%d", key, shards, replicas), func() error {
		vc = getCluster(t, key)
		s := vc.Status
		if s.State != valkeyv1.StateActive || s.SlotsAssigned != topology.TotalSlots || int(s.Shards) != shards || len(s.Nodes) != shards*(1+replicas) {
			return fmt.Errorf("state %q (%s), %d slots, %d shards, %d nodes; conditions %v; pods %s",
				s.State, s.Message, s.SlotsAssigned, s.Shards, len(s.Nodes), conditionSummary(vc), podsSummary(key.Namespace))
		}
		for _, name := range s.Nodes {
			for _, gone := range except {
				if name == gone {
					return fmt.Errorf("%s is still a member", gone)
				}
			}
		}
		if p := meta.FindStatusCondition(s.Conditions, "Progressing"); p == nil || p.Status != metav1.ConditionFalse || p.ObservedGeneration != vc.Generation {
			return fmt.Errorf("still progressing: %v", conditionSummary(vc))
		}
		return testenv.MembersConverged(context.Background(), k8sClient, key, s.Nodes, shards, replicas, dial)
	})
	return vc
}

// healthyConditions are the conditions of a cluster a user would check
// once it is Active, with the status each should have.
var healthyConditions = map[string]metav1.ConditionStatus{
	valkeyv1.CondReady:             metav1.ConditionTrue,
	valkeyv1.CondDegraded:          metav1.ConditionFalse,
	valkeyv1.CondACLApplied:        metav1.ConditionTrue,
	valkeyv1.CondContainersHealthy: metav1.ConditionTrue,
	valkeyv1.CondConfigDrift:       metav1.ConditionFalse,
	valkeyv1.CondVersionMatches:    metav1.ConditionTrue,
}

// waitHealthyConditions waits until every one of healthyConditions has its
// healthy status and returns how long that took.
func waitHealthyConditions(t testing.TB, key client.ObjectKey, timeout time.Duration) time.Duration {
	t.Helper()
	start := time.Now()
	eventually(t, timeout, key.String()+" conditions healthy", func() error {
		vc := getCluster(t, key)
		var bad []string
		for typ, want := range healthyConditions {
			c := meta.FindStatusCondition(vc.Status.Conditions, typ)
			if c == nil {
				bad = append(bad, typ+" not set")
			} else if c.Status != want {
				bad = append(bad, fmt.Sprintf("%s=%s (%s: %s)", typ, c.Status, c.Reason, c.Message))
			}
		}
		if len(bad) > 0 {
			sort.Strings(bad)
			return errors.New(strings.Join(bad, "; "))
		}
		return nil
	})
	return time.Since(start)
}

func conditionSummary(vc *valkeyv1.ValkeyCluster) []string {
	var out []string
	for _, c := range vc.Status.Conditions {
		out = append(out, fmt.Sprintf("%s=%s(%s: %s)", c.Type, c.Status, c.Reason, c.Message))
	}
	return out
}

// podsSummary is each pod of the namespace with its phase and what its
// containers wait on.
func podsSummary(ns string) string {
	var list corev1.PodList
	if err := k8sClient.List(context.Background(), &list, client.InNamespace(ns)); err != nil {
		return err.Error()
	}
	var out []string
	for _, p := range list.Items {
		s := p.Name + " " + string(p.Status.Phase)
		for _, c := range p.Status.ContainerStatuses {
			switch {
			case c.State.Waiting != nil:
				s += fmt.Sprintf(" %s waiting %s %s", c.Name, c.State.Waiting.Reason, c.State.Waiting.Message)
			case c.State.Terminated != nil:
				s += fmt.Sprintf(" %s terminated %s (%d) %s", c.Name, c.State.Terminated.Reason, c.State.Terminated.ExitCode, c.State.Terminated.Message)
			}
		}
		for _, c := range p.Status.Conditions {
			if c.Status != corev1.ConditionTrue && (c.Reason != "" || c.Message != "") {
				s += fmt.Sprintf(" %s=%s(%s: %s)", c.Type, c.Status, c.Reason, c.Message)
			}
		}
		out = append(out, s)
	}
	return "[" + strings.Join(out, "; ") + "]"
}

// logState logs the cluster and its pods, with their logs, when a test fails.
func logState(t testing.TB, key client.ObjectKey) {
	var vc valkeyv1.ValkeyCluster
	if err := k8sClient.Get(context.Background(), key, &vc); err == nil {
		t.Logf("cluster %s: state %q (%s), nodes %v, conditions %v", key, vc.Status.State, vc.Status.Message, vc.Status.Nodes, conditionSummary(&vc))
	}
	t.Logf("pods: %s", podsSummary(key.Namespace))
	t.Log(chartinstall.PodLogs(context.Background(), clientset, key.Namespace, "", 60))
}

// waitPodsGone waits until the namespace has no pod left.
func waitPodsGone(t testing.TB, ns string) {
	t.Helper()
	eventually(t, 2*time.Minute, "the pods of "+ns+" gone", func() error {
		var list corev1.PodList
		if err := k8sClient.List(context.Background(), &list, client.InNamespace(ns)); err != nil {
			return err
		}
		if len(list.Items) > 0 {
			return fmt.Errorf("pods left: %s", podsSummary(ns))
		}
		return nil
	})
}

// waitClusterPodsGone waits until no pod of the cluster is left, its
// restore loaders included; other clusters of the namespace may stay.
func waitClusterPodsGone(t testing.TB, key client.ObjectKey) {
	t.Helper()
	eventually(t, 2*time.Minute, "the pods of "+key.String()+" gone", func() error {
		var list corev1.PodList
		if err := k8sClient.List(context.Background(), &list, client.InNamespace(key.Namespace)); err != nil {
			return err
		}
		var left []string
		for _, p := range list.Items {
			if p.Labels[valkeyv1.LabelInstance] == key.Name || p.Labels[valkeyv1.LabelRestoreOf] == key.Name {
				left = append(left, p.Name+" "+string(p.Status.Phase))
			}
		}
		if len(left) > 0 {
			return fmt.Errorf("pods left: %v", left)
		}
		return nil
	})
}

// clusterPods are the cluster's pods, by name.
func clusterPods(t testing.TB, key client.ObjectKey) []corev1.Pod {
	t.Helper()
	var list corev1.PodList
	if err := k8sClient.List(context.Background(), &list, client.InNamespace(key.Namespace),
		client.MatchingLabels{valkeyv1.LabelInstance: key.Name}); err != nil {
		t.Fatalf("listing pods: %v", err)
	}
	sort.Slice(list.Items, func(i, j int) bool { return list.Items[i].Name < list.Items[j].Name })
	return list.Items
}

// dialPod connects to one pod by its IP as the default user.
func dialPod(ns, name string) (*vk.Node, error) {
	var pod corev1.Pod
	if err := k8sClient.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, &pod); err != nil {
		return nil, err
	}
	if pod.Status.PodIP == "" {
		return nil, fmt.Errorf("pod %s has no address", name)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	return vk.Dial(ctx, vk.Target{Address: net.JoinHostPort(pod.Status.PodIP, "6379")})
}

// clusterClient is a cluster-aware client seeded with a pod's IP: plaintext
// nodes announce their pod IPs, which this machine reaches on the bridge.
func clusterClient(t testing.TB, seed string) valkey.Client {
	t.Helper()
	c, err := valkey.NewClient(valkey.ClientOption{InitAddress: []string{net.JoinHostPort(seed, "6379")}, DisableCache: true})
	if err != nil {
		t.Fatalf("connecting a cluster client to %s: %v", seed, err)
	}
	t.Cleanup(c.Close)
	return c
}

// writeKeys writes n keys and returns them with their values.
func writeKeys(t testing.TB, c valkey.Client, prefix string, n int) map[string]string {
	t.Helper()
	want := make(map[string]string, n)
	for i := range n {
		k, v := fmt.Sprintf("%s:%d", prefix, i), fmt.Sprintf("value-%d", i)
		if err := c.Do(context.Background(), c.B().Set().Key(k).Value(v).Build()).Error(); err != nil {
			t.Fatalf("SET %s: %v", k, err)
		}
		want[k] = v
	}
	return want
}

// keyWriter writes new keys one after another through a cluster client
// until stopped, keeping those acknowledged. A write that failed may or
// may not have landed, so only the acknowledged ones must read back.
type keyWriter struct {
	c      valkey.Client
	prefix string
	quit   chan struct{}
	done   chan struct{}

	mu     sync.Mutex
	acked  map[string]string
	failed int
}

func startWriter(c valkey.Client, prefix string) *keyWriter {
	w := &keyWriter{c: c, prefix: prefix, quit: make(chan struct{}), done: make(chan struct{}), acked: map[string]string{}}
	go w.run()
	return w
}

func (w *keyWriter) run() {
	defer close(w.done)
	for i := 0; ; i++ {
		select {
		case <-w.quit:
			return
		default:
		}
		k, v := fmt.Sprintf("%s:%d", w.prefix, i), fmt.Sprintf("value-%d", i)
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		err := w.c.Do(ctx, w.c.B().Set().Key(k).Value(v).Build()).Error()
		cancel()
		w.mu.Lock()
		if err == nil {
			w.acked[k] = v
		} else {
			w.failed++
		}
		w.mu.Unlock()
		if err != nil {
			// The cluster may be down for a while: no busy loop.
			time.Sleep(50 * time.Millisecond)
		}
	}
}

// acknowledged is how many writes have been acknowledged so far.
func (w *keyWriter) acknowledged() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.acked)
}

// stop ends the writes and returns the acknowledged ones and how many
// failed.
func (w *keyWriter) stop() (map[string]string, int) {
	close(w.quit)
	<-w.done
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.acked, w.failed
}

// waitReplicated waits until every replica has acknowledged everything its
// primary had produced when the call began.
func waitReplicated(t testing.TB, c valkey.Client) {
	t.Helper()
	want := map[string]int64{}
	eventually(t, time.Minute, "every replica caught up", func() error {
		for addr, n := range c.Nodes() {
			ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
			text, err := n.Do(ctx, n.B().Info().Section("replication").Build()).ToString()
			cancel()
			if err != nil {
				return fmt.Errorf("INFO on %s: %w", addr, err)
			}
			r, err := vk.ParseReplicationInfo(text)
			if err != nil || !r.IsPrimary() {
				continue
			}
			if _, ok := want[addr]; !ok {
				want[addr] = r.ReplicationOffset
			}
			if len(r.Replicas) == 0 {
				return fmt.Errorf("primary %s has no replica", addr)
			}
			for _, rep := range r.Replicas {
				if rep.Offset < want[addr] {
					return fmt.Errorf("replica %s:%d of %s at offset %d, want %d", rep.IP, rep.Port, addr, rep.Offset, want[addr])
				}
			}
		}
		return nil
	})
}

// checkAll reads every key back, retrying briefly so a client that has
// not yet learned the new topology is not mistaken for lost data.
func checkAll(t testing.TB, c valkey.Client, want map[string]string) {
	t.Helper()
	eventually(t, 30*time.Second, "every key read back", func() error {
		var lost []string
		for k, v := range want {
			ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
			got, err := c.Do(ctx, c.B().Get().Key(k).Build()).ToString()
			cancel()
			if err != nil || got != v {
				lost = append(lost, fmt.Sprintf("%s=%q (%v)", k, got, err))
			}
		}
		if len(lost) > 0 {
			sort.Strings(lost)
			if len(lost) > 5 {
				lost = append(lost[:5], fmt.Sprintf("and %d more", len(lost)-5))
			}
			return fmt.Errorf("%d of %d keys not read back: %v", len(lost), len(want), lost)
		}
		return nil
	})
}

// podProblems is what a user would see wrong with a pod: not Running or
// not Ready (a readiness gate included), a container not Running and
// Ready, a container restarted.
func podProblems(p *corev1.Pod) []string {
	var out []string
	if p.Status.Phase != corev1.PodRunning {
		out = append(out, fmt.Sprintf("pod %s is %s", p.Name, p.Status.Phase))
	}
	if p.DeletionTimestamp != nil {
		out = append(out, fmt.Sprintf("pod %s is terminating", p.Name))
	}
	conds := map[corev1.PodConditionType]corev1.PodCondition{}
	for _, c := range p.Status.Conditions {
		conds[c.Type] = c
	}
	if c := conds[corev1.PodReady]; c.Status != corev1.ConditionTrue {
		out = append(out, fmt.Sprintf("pod %s is not Ready (%s: %s)", p.Name, c.Reason, c.Message))
	}
	for _, g := range p.Spec.ReadinessGates {
		if c := conds[g.ConditionType]; c.Status != corev1.ConditionTrue {
			out = append(out, fmt.Sprintf("pod %s: readiness gate %s is %q (%s: %s)", p.Name, g.ConditionType, c.Status, c.Reason, c.Message))
		}
	}
	if len(p.Status.ContainerStatuses) != len(p.Spec.Containers) {
		out = append(out, fmt.Sprintf("pod %s: %d container statuses for %d containers", p.Name, len(p.Status.ContainerStatuses), len(p.Spec.Containers)))
	}
	for _, c := range p.Status.ContainerStatuses {
		if c.State.Running == nil || !c.Ready {
			out = append(out, fmt.Sprintf("pod %s container %s: state %+v, ready %v", p.Name, c.Name, c.State, c.Ready))
		}
		if c.RestartCount != 0 {
			out = append(out, fmt.Sprintf("pod %s container %s restarted %d times", p.Name, c.Name, c.RestartCount))
		}
	}
	return out
}

// waitPodsHealthy waits until the cluster has exactly n pods and none has
// a problem (podProblems). The kubelet turns a pod Ready once it sees the
// operator set the readiness gate, a moment after the cluster is Active.
// It returns the pods and how long the wait took.
func waitPodsHealthy(t testing.TB, key client.ObjectKey, n int, timeout time.Duration) ([]corev1.Pod, time.Duration) {
	t.Helper()
	start := time.Now()
	var pods []corev1.Pod
	eventually(t, timeout, fmt.Sprintf("%d healthy pods of %s", n, key), func() error {
		pods = clusterPods(t, key)
		var problems []string
		for i := range pods {
			problems = append(problems, podProblems(&pods[i])...)
		}
		if len(pods) != n {
			problems = append(problems, fmt.Sprintf("%d pods", len(pods)))
		}
		if len(problems) > 0 {
			return errors.New(strings.Join(problems, "; "))
		}
		return nil
	})
	return pods, time.Since(start)
}

// containerPID is the main process of a container of a pod: the oldest
// process of the node's pods whose cgroup names the container's ID.
func containerPID(t testing.TB, p *corev1.Pod, container string) int {
	t.Helper()
	var id string
	for _, c := range p.Status.ContainerStatuses {
		if c.Name == container {
			_, id, _ = strings.Cut(c.ContainerID, "://")
		}
	}
	if id == "" {
		t.Fatalf("pod %s has no container %s running", p.Name, container)
	}
	if !nodeIsLocal() {
		t.Fatalf("the processes of pod %s are on a node of another machine: read them only where nodeIsLocal", p.Name)
	}
	tops, _ := filepath.Glob(filepath.Join("/sys/fs/cgroup", "pids", node.CgroupRoot))
	if len(tops) == 0 {
		tops, _ = filepath.Glob(filepath.Join("/sys/fs/cgroup", node.CgroupRoot))
	}
	best := 0
	for _, top := range tops {
		for _, pid := range realnode.CgroupPIDs(top) {
			b, err := os.ReadFile(fmt.Sprintf("/proc/%d/cgroup", pid))
			if err != nil || !strings.Contains(string(b), id) {
				continue
			}
			if best == 0 || pid < best {
				best = pid
			}
		}
	}
	if best == 0 {
		t.Fatalf("no process of container %s (%s) of pod %s", container, id, p.Name)
	}
	return best
}

// procStatus is /proc/<pid>/status as a map.
func procStatus(t testing.TB, pid int) map[string]string {
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

// createRestrictedNamespace creates a namespace whose pods the apiserver
// admits only when they meet the restricted Pod Security Standard, and
// checks the admission refuses a pod that does not.
func createRestrictedNamespace(t testing.TB, name string) {
	t.Helper()
	ctx := context.Background()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{
		"pod-security.kubernetes.io/enforce": "restricted",
	}}}
	if err := k8sClient.Create(ctx, ns); err != nil {
		t.Fatalf("creating namespace %s: %v", name, err)
	}
	image, _ := clientImage()
	plain := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: name, Name: "no-security-context"},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: image}}},
	}
	if err := k8sClient.Create(ctx, plain, client.DryRunAll); err == nil || !strings.Contains(err.Error(), "PodSecurity") {
		t.Fatalf("a pod without securityContext in %s: %v; want a PodSecurity refusal", name, err)
	}
}

// execResult is what a command run in a container printed and how it
// exited.
type execResult struct {
	stdout, stderr string
	code           int
}

func (r execResult) String() string {
	return fmt.Sprintf("exit %d, stdout %q, stderr %q", r.code, r.stdout, r.stderr)
}

// podExec runs argv in a container of a pod as kubectl exec does: through
// the apiserver, which streams it from the node's kubelet.
func podExec(t testing.TB, ns, pod, container string, argv ...string) execResult {
	t.Helper()
	req := clientset.CoreV1().RESTClient().Post().Namespace(ns).Resource("pods").Name(pod).SubResource("exec").
		VersionedParams(&corev1.PodExecOptions{Container: container, Command: argv, Stdout: true, Stderr: true}, scheme.ParameterCodec)
	ws, err := remotecommand.NewWebSocketExecutor(restConfig, "GET", req.URL().String())
	if err != nil {
		t.Fatal(err)
	}
	spdy, err := remotecommand.NewSPDYExecutor(restConfig, "POST", req.URL())
	if err != nil {
		t.Fatal(err)
	}
	ex, err := remotecommand.NewFallbackExecutor(ws, spdy, func(err error) bool {
		return httpstream.IsUpgradeFailure(err) || httpstream.IsHTTPSProxyError(err)
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var stdout, stderr strings.Builder
	err = ex.StreamWithContext(ctx, remotecommand.StreamOptions{Stdout: &stdout, Stderr: &stderr})
	res := execResult{stdout: stdout.String(), stderr: stderr.String()}
	var exit utilexec.ExitError
	switch {
	case errors.As(err, &exit):
		res.code = exit.ExitStatus()
	case err != nil:
		t.Fatalf("exec %q in %s/%s: %v", argv, ns, pod, err)
	}
	return res
}

// checkingClient writes keys again and again, reading each back, while a
// change that no client may notice runs; it remembers every acknowledged
// value and every failed or wrong request.
type checkingClient struct {
	c    valkey.Client
	stop chan struct{}
	done chan struct{}

	mu             sync.Mutex
	acked          map[string]string
	writes, reads  int
	failed, wrong  int
	errs           []string
	start, stopped time.Time
}

// startChecking starts one writer cycling through 200 keys under prefix.
func startChecking(c valkey.Client, prefix string) *checkingClient {
	cc := &checkingClient{c: c, stop: make(chan struct{}), done: make(chan struct{}), acked: map[string]string{}, start: time.Now()}
	go cc.run(prefix)
	return cc
}

func (cc *checkingClient) run(prefix string) {
	defer close(cc.done)
	for seq := 0; ; seq++ {
		select {
		case <-cc.stop:
			return
		default:
		}
		k, v := fmt.Sprintf("%s:%d", prefix, seq%200), fmt.Sprintf("v%d", seq)
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		err := cc.c.Do(ctx, cc.c.B().Set().Key(k).Value(v).Build()).Error()
		var got string
		var rerr error
		if err == nil {
			got, rerr = cc.c.Do(ctx, cc.c.B().Get().Key(k).Build()).ToString()
		}
		cancel()
		cc.mu.Lock()
		switch {
		case err != nil:
			cc.failed++
			cc.note("SET %s: %v", k, err)
			// The write may have landed: the key's value is unknown.
			delete(cc.acked, k)
		case rerr != nil:
			cc.writes++
			cc.acked[k] = v
			cc.failed++
			cc.note("GET %s: %v", k, rerr)
		default:
			cc.writes++
			cc.reads++
			cc.acked[k] = v
			if got != v {
				cc.wrong++
				cc.note("GET %s = %q, want %q", k, got, v)
			}
		}
		cc.mu.Unlock()
		select {
		case <-cc.stop:
			return
		case <-time.After(5 * time.Millisecond): // pacing the client, not waiting for the operator
		}
	}
}

func (cc *checkingClient) note(format string, args ...any) {
	if len(cc.errs) < 5 {
		cc.errs = append(cc.errs, time.Now().Format("15:04:05.000")+" "+fmt.Sprintf(format, args...))
	}
}

// finishUndisturbed stops the client, fails the test on any failed or
// wrong request (or none made at all) and returns every acknowledged
// write.
func (cc *checkingClient) finishUndisturbed(t testing.TB) map[string]string {
	t.Helper()
	close(cc.stop)
	<-cc.done
	cc.mu.Lock()
	defer cc.mu.Unlock()
	t.Logf("checking client over %s: %d writes and %d reads ok, %d failed, %d wrong; first errors: %v",
		time.Since(cc.start).Round(time.Second), cc.writes, cc.reads, cc.failed, cc.wrong, cc.errs)
	if cc.writes == 0 {
		t.Fatal("the checking client wrote nothing")
	}
	if cc.failed+cc.wrong > 0 {
		t.Fatalf("%d requests failed and %d read a wrong value, e.g. %v", cc.failed, cc.wrong, cc.errs)
	}
	out := make(map[string]string, len(cc.acked))
	for k, v := range cc.acked {
		out[k] = v
	}
	return out
}
