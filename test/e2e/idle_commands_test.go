package e2e

import (
	"context"
	"fmt"
	"net"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"

	valkeyv1 "github.com/gomomento/valkey-operator/api/v1alpha1"
	"github.com/gomomento/valkey-operator/internal/controller"
	"github.com/gomomento/valkey-operator/internal/valkey"
)

// shippedSample is the shipped operator's sample interval: an idle node
// hears the autoscaler's INFO once per interval.
var shippedSample = controller.DefaultOptions().SampleInterval

// shippedSafety is the shipped operator's safety interval: an idle
// cluster's nodes hear the cluster controller's other questions (CLUSTER
// NODES, CLUSTER INFO, CONFIG GET) once per interval, moved by up to a fifth
// either way.
var shippedSafety = controller.DefaultOptions().SafetyInterval

// questionsWindow spans three sample intervals, well within one safety
// interval.
var questionsWindow = 3 * shippedSample

// reactionPatience is how long a change on a node may take to show in the
// cluster's status: below the shortest safety interval, so the change is
// seen because a sample woke the cluster.
var reactionPatience = 2 * time.Minute

// An idle cluster's nodes hear each question once per interval. With the
// operator binary as shipped (every timer at its default), over three
// sample intervals INFO reaches a node at most once per interval (the
// autoscaler's sample), give or take one where its phase crosses the
// window's, every other command at most once (a safety pass, due only
// every four to six minutes), and the operator opens no connection. Then
// the samples are what wakes the cluster: a failover by hand, and the
// primary's process killed, show in its status long before a safety pass.
// Not parallel: it replaces the suite's operator, whose sampling and
// safety pass are quickened for other tests, with the shipped binary.
func TestIdleClusterAsksEachQuestionOncePerInterval(t *testing.T) {
	argv, kubeconfig := operatorProcessesInstead(t, shippedOperator)
	const own, ns = "idle-questions-operator", "idle-questions"
	createNamespace(t, own)
	startOperatorProcess(t, append(argv, "--operator-namespace", own), kubeconfig, own, "shipped")
	key := newPlainCluster(t, ns, "idle", 1, 1)

	nodes := map[string]*valkey.Node{}
	for _, name := range getCluster(t, key).Status.Nodes {
		n, err := valkey.Dial(context.Background(), valkey.Target{
			Address: net.JoinHostPort(getPod(t, ns, name).Status.PodIP, "6379"),
			Dialer:  local.Runtime.DialContext,
		})
		if err != nil {
			t.Fatalf("connecting to %s: %v", name, err)
		}
		t.Cleanup(n.Close)
		nodes[name] = n
	}
	// Past the first passes of every controller: two samples of each node
	// since it became Active.
	waitSamples(t, nodes, 2)

	before := map[string]map[string]int64{}
	for name, n := range nodes {
		before[name] = commandCounts(t, name, n)
	}
	<-time.After(questionsWindow) // the window being measured
	limits := map[string]int64{
		"info": int64(questionsWindow/shippedSample) + 1,
		// Any other: the safety passes the window can hold.
		"": int64(questionsWindow/(shippedSafety*4/5)) + 1,
	}
	for name, n := range nodes {
		after := commandCounts(t, name, n)
		var asked []string
		for cmd, calls := range after {
			d := calls - before[name][cmd]
			if cmd == "info" {
				d-- // the test's own INFO that read before
			}
			if d > 0 {
				asked = append(asked, fmt.Sprintf("%s %d", cmd, d))
			}
			if !operatorQuestion(cmd) {
				continue
			}
			limit, ok := limits[cmd]
			if !ok {
				limit = limits[""]
			}
			if d > limit {
				t.Errorf("node %s: %s ran %d times in %s of an idle cluster, want at most %d", name, cmd, d, questionsWindow, limit)
			}
		}
		if opened := after["connections"] - before[name]["connections"]; opened != 0 {
			t.Errorf("node %s: the operator opened %d connections in %s of an idle cluster, want none", name, opened, questionsWindow)
		}
		t.Logf("node %s over %s: %s", name, questionsWindow, strings.Join(asked, ", "))
	}
	if vc := getCluster(t, key); vc.Status.State != valkeyv1.StateActive {
		t.Fatalf("cluster %s after the window, want Active", vc.Status.State)
	}
	failoverByHand(t, key, nodes)
	primaryKilled(t, key)
}

// waitSamples waits until every node has answered want INFOs besides the
// test's own.
func waitSamples(t *testing.T, nodes map[string]*valkey.Node, want int64) {
	t.Helper()
	first := map[string]int64{}
	own := map[string]int64{}
	for name, n := range nodes {
		first[name] = commandCounts(t, name, n)["info"]
		own[name] = 1
	}
	eventually(t, time.Duration(want+1)*shippedSample, fmt.Sprintf("%d samples of every node", want), func() error {
		for name, n := range nodes {
			seen := commandCounts(t, name, n)["info"] - first[name] - own[name]
			own[name]++
			if seen < want {
				return fmt.Errorf("node %s sampled %d times", name, seen)
			}
		}
		return nil
	})
}

// failoverByHand has the replica take over with CLUSTER FAILOVER, which
// no watched object reports: the status names it once a sample of either
// node woke the cluster.
func failoverByHand(t *testing.T, key client.ObjectKey, nodes map[string]*valkey.Node) {
	t.Helper()
	shard := getCluster(t, key).Status.ShardStatuses[0]
	replica := shard.Replicas[0]
	start := time.Now()
	if err := nodes[replica].ClusterFailover(context.Background(), valkey.FailoverDefault); err != nil {
		t.Fatalf("CLUSTER FAILOVER on %s: %v", replica, err)
	}
	eventually(t, reactionPatience, "the status naming "+replica+" the primary", func() error {
		if got := getCluster(t, key).Status.ShardStatuses[0].Primary; got != replica {
			return fmt.Errorf("primary %s", got)
		}
		return nil
	})
	t.Logf("failover by hand to %s: in the status after %s", replica, time.Since(start).Round(time.Second))
}

// primaryKilled kills the primary's process (with restartPolicy Never its
// pod ends Failed) and waits for it to be replaced and the cluster Active,
// with every write acknowledged and replicated before the kill read back.
func primaryKilled(t *testing.T, key client.ObjectKey) {
	t.Helper()
	c := clusterClient(t, seedOf(key), nil)
	before := writeKeys(t, c, "before-kill", 200)
	waitReplicated(t, c)
	lost := getCluster(t, key).Status.ShardStatuses[0].Primary
	start := time.Now()
	fail(t, key.Namespace, lost, processKilled)
	eventually(t, reactionPatience, lost+" replaced and the cluster Active", func() error {
		vc := getCluster(t, key)
		if slices.Contains(vc.Status.Nodes, lost) || vc.Status.State != valkeyv1.StateActive || len(vc.Status.Nodes) != 2 {
			return fmt.Errorf("state %s, nodes %v, conditions %v", vc.Status.State, vc.Status.Nodes, conditionSummary(vc))
		}
		return nil
	})
	t.Logf("primary %s killed: replaced and Active after %s", lost, time.Since(start).Round(time.Second))
	checkAll(t, c, before)
}

// operatorQuestion says whether a command counts as a question the
// operator asks. Not counted: a replica's REPLCONF ACKs and the PINGs its
// primary sends it (replication itself), and the client library's PING on
// a kept connection that has been idle for a while (how a kept connection
// is known to be alive; the limit the fleet benchmark compares with is a
// PING loop).
func operatorQuestion(cmd string) bool {
	switch cmd {
	case "connections", "replconf", "psync", "sync", "ping":
		return false
	}
	return true
}

// commandCounts is every command's calls on the node, and its
// connections received under "connections", from one INFO.
func commandCounts(t testing.TB, name string, n *valkey.Node) map[string]int64 {
	t.Helper()
	info, err := n.Info(context.Background(), "stats", "commandstats")
	if err != nil {
		t.Fatalf("INFO on %s: %v", name, err)
	}
	out := map[string]int64{}
	for k, v := range info["commandstats"] {
		out[strings.TrimPrefix(k, "cmdstat_")] = commandCalls(v)
	}
	c, err := strconv.ParseInt(info["stats"]["total_connections_received"], 10, 64)
	if err != nil {
		t.Fatalf("total_connections_received on %s: %v", name, err)
	}
	out["connections"] = c
	return out
}
