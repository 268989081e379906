package controller

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/gomomento/valkey-operator/internal/autoscale"
)

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
