package autoscaler

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/gomomento/valkey-operator/internal/autoscale"
	"github.com/gomomento/valkey-operator/internal/controller/metrics"
)

func recordNodeMetrics(namespace, cluster, node string, s autoscale.Sample) {
	set := func(g *prometheus.GaugeVec, v *float64) {
		if v == nil {
			g.DeleteLabelValues(namespace, cluster, node)
			return
		}
		g.WithLabelValues(namespace, cluster, node).Set(*v)
	}
	set(metrics.NodeMemoryPercent, s.MemoryPercent)
	set(metrics.NodeCPUPercent, s.CPUPercent)
	set(metrics.NodeBandwidthMbps, s.BandwidthMbps)
	metrics.NodeUsedMemoryBytes.WithLabelValues(namespace, cluster, node).Set(float64(s.UsedMemoryBytes))
}

func forgetNodeMetrics(namespace, cluster, node string) {
	for _, g := range []*prometheus.GaugeVec{metrics.NodeMemoryPercent, metrics.NodeCPUPercent, metrics.NodeBandwidthMbps, metrics.NodeUsedMemoryBytes} {
		g.DeleteLabelValues(namespace, cluster, node)
	}
}

func forgetAutoscalingMetrics(namespace, cluster string) {
	labels := prometheus.Labels{"namespace": namespace, "cluster": cluster}
	metrics.AutoscalingDesiredShards.DeletePartialMatch(labels)
	metrics.AutoscalingDecisions.DeletePartialMatch(labels)
}
