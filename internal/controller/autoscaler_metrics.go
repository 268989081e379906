package controller

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/gomomento/valkey-operator/internal/autoscale"
)

// Per-node utilisation, as last sampled, and the autoscaler's decisions.
var (
	nodeMemoryPercent = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "valkey_node_memory_percent",
		Help: "used_memory as a percentage of maxmemory (else of the memory limit); absent without either.",
	}, []string{"namespace", "cluster", "node"})
	nodeCPUPercent = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "valkey_node_cpu_percent",
		Help: "Process CPU over the last sampling interval as a percentage of the CPU limit; absent without one.",
	}, []string{"namespace", "cluster", "node"})
	nodeBandwidthMbps = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "valkey_node_bandwidth_mbps",
		Help: "Inbound plus outbound network throughput over the last sampling interval, in Mbit/s.",
	}, []string{"namespace", "cluster", "node"})
	nodeUsedMemoryBytes = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "valkey_node_used_memory_bytes",
		Help: "Valkey's used_memory at the last sample.",
	}, []string{"namespace", "cluster", "node"})
	autoscalingDesiredShards = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "valkey_cluster_autoscaling_desired_shards",
		Help: "The autoscaler's shard target (status.autoscaling.desiredShards).",
	}, []string{"namespace", "cluster"})
	autoscalingDecisions = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "valkey_cluster_autoscaling_decisions_total",
		Help: "Autoscaling decisions, by direction (ScaleOut, ScaleIn).",
	}, []string{"namespace", "cluster", "direction"})
)

func init() {
	register(nodeMemoryPercent, nodeCPUPercent, nodeBandwidthMbps, nodeUsedMemoryBytes,
		autoscalingDesiredShards, autoscalingDecisions)
}

func recordNodeMetrics(namespace, cluster, node string, s autoscale.Sample) {
	set := func(g *prometheus.GaugeVec, v *float64) {
		if v == nil {
			g.DeleteLabelValues(namespace, cluster, node)
			return
		}
		g.WithLabelValues(namespace, cluster, node).Set(*v)
	}
	set(nodeMemoryPercent, s.MemoryPercent)
	set(nodeCPUPercent, s.CPUPercent)
	set(nodeBandwidthMbps, s.BandwidthMbps)
	nodeUsedMemoryBytes.WithLabelValues(namespace, cluster, node).Set(float64(s.UsedMemoryBytes))
}

func forgetNodeMetrics(namespace, cluster, node string) {
	for _, g := range []*prometheus.GaugeVec{nodeMemoryPercent, nodeCPUPercent, nodeBandwidthMbps, nodeUsedMemoryBytes} {
		g.DeleteLabelValues(namespace, cluster, node)
	}
}

func forgetAutoscalingMetrics(namespace, cluster string) {
	labels := prometheus.Labels{"namespace": namespace, "cluster": cluster}
	autoscalingDesiredShards.DeletePartialMatch(labels)
	autoscalingDecisions.DeletePartialMatch(labels)
}
