package metrics

import (
	"regexp"
	"strings"

	"github.com/prometheus/client_golang/prometheus"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	valkeyv1 "github.com/gomomento/valkey-operator/api/v1alpha1"
)

// Operator metrics, served on the manager's /metrics with controller-runtime's
// own. Every one is declared here and registered by the list in init, so
// that MetricLabels, and the dashboards and alerts checked against it, see
// them all.
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
	ConfigDriftSettings = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "valkey_cluster_config_drift_settings",
		Help: "Live valkey settings, summed over the nodes, that a node runs otherwise than rendered, as the operator last read them.",
	}, []string{"namespace", "cluster"})
	ActionsTotal = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "valkey_operator_actions_total",
		Help: "Topology actions performed, by kind and result.",
	}, []string{"namespace", "cluster", "kind", "result"})

	// The TLS reloader's.
	TLSCertNotAfter = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "valkey_cluster_tls_certificate_not_after_seconds",
		Help: "notAfter, in Unix seconds, of the earliest-expiring certificate the cluster's nodes serve.",
	}, []string{"namespace", "cluster"})
	TLSReloads = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "valkey_tls_reloads_total",
		Help: "Certificate reloads issued to nodes, by result.",
	}, []string{"namespace", "cluster", "result"})

	// The ACL reloader's.
	ACLLoads = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "valkey_acl_loads_total",
		Help: "ACL LOAD commands issued to nodes, by result: success, rejected (the node refused the file) or unreachable.",
	}, []string{"namespace", "cluster", "result"})

	// Per-node utilisation, as the autoscaler last sampled it, and its
	// decisions.
	NodeMemoryPercent = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "valkey_node_memory_percent",
		Help: "used_memory as a percentage of maxmemory (else of the memory limit); absent without either.",
	}, []string{"namespace", "cluster", "node"})
	NodeCPUPercent = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "valkey_node_cpu_percent",
		Help: "Process CPU over the last sampling interval as a percentage of the CPU limit; absent without one.",
	}, []string{"namespace", "cluster", "node"})
	NodeBandwidthMbps = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "valkey_node_bandwidth_mbps",
		Help: "Inbound plus outbound network throughput over the last sampling interval, in Mbit/s.",
	}, []string{"namespace", "cluster", "node"})
	NodeUsedMemoryBytes = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "valkey_node_used_memory_bytes",
		Help: "Valkey's used_memory at the last sample.",
	}, []string{"namespace", "cluster", "node"})
	AutoscalingDesiredShards = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "valkey_cluster_autoscaling_desired_shards",
		Help: "The autoscaler's shard target (status.autoscaling.desiredShards).",
	}, []string{"namespace", "cluster"})
	AutoscalingDecisions = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "valkey_cluster_autoscaling_decisions_total",
		Help: "Autoscaling decisions, by direction (ScaleOut, ScaleIn).",
	}, []string{"namespace", "cluster", "direction"})
)

func init() {
	register(clusterState, clusterCondition, clusterSlotsAssigned, clusterNodes, ConfigDriftSettings, ActionsTotal,
		TLSCertNotAfter, TLSReloads,
		ACLLoads,
		NodeMemoryPercent, NodeCPUPercent, NodeBandwidthMbps, NodeUsedMemoryBytes, AutoscalingDesiredShards, AutoscalingDecisions)
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

// RecordCluster publishes a cluster's state and shape.
func RecordCluster(vc *valkeyv1.ValkeyCluster) {
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

// ForgetCluster drops a deleted cluster's series.
func ForgetCluster(namespace, name string) {
	labels := prometheus.Labels{"namespace": namespace, "cluster": name}
	clusterState.DeletePartialMatch(labels)
	clusterCondition.DeletePartialMatch(labels)
	clusterSlotsAssigned.DeletePartialMatch(labels)
	clusterNodes.DeletePartialMatch(labels)
	ConfigDriftSettings.DeletePartialMatch(labels)
	ActionsTotal.DeletePartialMatch(labels)
}
