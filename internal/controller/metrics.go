package controller

import (
	"regexp"
	"strings"

	"github.com/prometheus/client_golang/prometheus"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	valkeyv1 "github.com/gomomento/valkey-operator/api/v1alpha1"
)

// Operator metrics, served on the manager's /metrics with controller-runtime's own.
var (
	clusterState = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "valkey_cluster_state",
		Help: "1 for the state a cluster is in, 0 for the others.",
	}, []string{"namespace", "cluster", "state"})
	clusterSlotsAssigned = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "valkey_cluster_slots_assigned",
		Help: "Hash slots held by a primary, as the operator last observed.",
	}, []string{"namespace", "cluster"})
	clusterNodes = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "valkey_cluster_nodes",
		Help: "Members of a cluster by role.",
	}, []string{"namespace", "cluster", "role"})
	clusterCondition = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "valkey_cluster_condition",
		Help: "1 when a cluster's condition is True, 0 when it is False or Unknown.",
	}, []string{"namespace", "cluster", "condition"})
	actionsTotal = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "valkey_operator_actions_total",
		Help: "Topology actions performed, by kind and result.",
	}, []string{"namespace", "cluster", "kind", "result"})
)

func init() {
	register(clusterState, clusterCondition, clusterSlotsAssigned, clusterNodes, actionsTotal, tlsCertNotAfter, tlsReloads)
}

// registered is every collector the operator adds to the manager's registry.
var registered []prometheus.Collector

func register(cs ...prometheus.Collector) {
	metrics.Registry.MustRegister(cs...)
	registered = append(registered, cs...)
}

// describedAs is how a Desc prints its name and labels; Desc has no getters.
var describedAs = regexp.MustCompile(`^Desc\{fqName: "([^"]+)", .*variableLabels: \{([^}]*)\}\}$`)

// MetricLabels maps each of the operator's own metrics, as registered, to
// its label names: what dashboards and alert rules may query besides the
// exporter's. A vector with no series yet is missing from a Gather, so
// this reads the collectors' descriptions.
func MetricLabels() map[string][]string {
	ch := make(chan *prometheus.Desc)
	go func() {
		for _, c := range registered {
			c.Describe(ch)
		}
		close(ch)
	}()
	out := map[string][]string{}
	for d := range ch {
		if m := describedAs.FindStringSubmatch(d.String()); m != nil {
			out[m[1]] = strings.Split(m[2], ",")
		}
	}
	return out
}

var allStates = []valkeyv1.ClusterState{valkeyv1.StateCreating, valkeyv1.StateActive, valkeyv1.StateUpdating, valkeyv1.StateInvalid}

// recordClusterMetrics publishes a cluster's state and shape.
func recordClusterMetrics(vc *valkeyv1.ValkeyCluster) {
	for _, s := range allStates {
		v := 0.0
		if vc.Status.State == s {
			v = 1
		}
		clusterState.WithLabelValues(vc.Namespace, vc.Name, string(s)).Set(v)
	}
	for _, c := range vc.Status.Conditions {
		v := 0.0
		if c.Status == metav1.ConditionTrue {
			v = 1
		}
		clusterCondition.WithLabelValues(vc.Namespace, vc.Name, c.Type).Set(v)
	}
	clusterSlotsAssigned.WithLabelValues(vc.Namespace, vc.Name).Set(float64(vc.Status.SlotsAssigned))
	replicas := 0
	for _, sh := range vc.Status.ShardStatuses {
		replicas += len(sh.Replicas)
	}
	clusterNodes.WithLabelValues(vc.Namespace, vc.Name, "primary").Set(float64(vc.Status.Shards))
	clusterNodes.WithLabelValues(vc.Namespace, vc.Name, "replica").Set(float64(replicas))
}

// forgetClusterMetrics drops a deleted cluster's series.
func forgetClusterMetrics(namespace, name string) {
	labels := prometheus.Labels{"namespace": namespace, "cluster": name}
	clusterState.DeletePartialMatch(labels)
	clusterCondition.DeletePartialMatch(labels)
	clusterSlotsAssigned.DeletePartialMatch(labels)
	clusterNodes.DeletePartialMatch(labels)
	actionsTotal.DeletePartialMatch(labels)
}
