package main

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	"github.com/gomomento/valkey-operator/bench/record"
)

func renderDurability(w *strings.Builder, r Report) {
	rs, ws := slices.Clone(r.Records.DurableRestart), r.Records.DurableWrites
	if len(rs) == 0 && len(ws) == 0 {
		return
	}
	section(w, "Durability",
		"The optional persistence ([durability.md](durability.md)) against its limit, a plain",
		"`valkey-server` of the same version with the same append-only settings, measured in the",
		"same run on this machine; the ratio is the cluster's figure over the plain server's.")
	if len(rs) > 0 {
		slices.SortStableFunc(rs, func(a, b record.DurableRestart) int {
			return cmp.Or(cmp.Compare(a.Shards, b.Shards), cmp.Compare(a.Replicas, b.Replicas))
		})
		fmt.Fprintf(w, "**Full restart.** A persistent cluster holding the data set (values of %d bytes,\n", rs[0].ValueBytes)
		w.WriteString("written with pipelined `SET`s and replicated) has every pod deleted at once: from the\n" +
			"deletion to the cluster converged again (`Active`, every node at its new address, every\n" +
			"replica linked) with every key served by a primary. The limit is a plain server holding one\n" +
			"primary's share, stopped and started again: from its start to answering `PING` with\n" +
			"`loading:0`, the load of its append-only file.\n\n")
		tableHead(w, "llrrlrrr", "Valkey", "shape", "data", "keys", "appendfsync", "delete to converged, every key", "plain server: load of one share", "ratio")
		for _, x := range rs {
			ratio := "–"
			if x.PlainLoadSeconds > 0 {
				ratio = fmt.Sprintf("%.1f×", x.Seconds/x.PlainLoadSeconds)
			}
			fmt.Fprintf(w, "| %s | %d×%d | %s | %d | %s | %s | %s (%s) | %s |\n", x.Version, x.Shards, x.Replicas,
				mebibytes(x.DataBytes), x.Keys, x.Appendfsync, secs(x.Seconds), secs(x.PlainLoadSeconds), mebibytes(x.DataBytes/int64(max(1, x.Shards))), ratio)
		}
		w.WriteString("\n")
	}
	if len(ws) > 0 {
		fmt.Fprintf(w, "**Write throughput.** `valkey-benchmark -t set -n %d -c %d -d %d` against the primary of a\n", ws[0].Requests, ws[0].Clients, ws[0].ValueBytes)
		w.WriteString("1×0 cluster (its pod's address), then at once against the plain server.\n\n")
		tableHead(w, "llrrr", "Valkey", "persistence", "cluster primary", "plain server", "ratio")
		for _, x := range ws {
			what, plain := "`appendfsync "+x.Appendfsync+"`", ""
			if x.Appendfsync == "" {
				what, plain = "none (in memory)", " (`appendonly no`)"
			}
			ratio := "–"
			if x.PlainRPS > 0 {
				ratio = fmt.Sprintf("%.2f×", x.ClusterRPS/x.PlainRPS)
			}
			fmt.Fprintf(w, "| %s | %s | %.0f SET/s | %.0f SET/s%s | %s |\n", x.Version, what, x.ClusterRPS, x.PlainRPS, plain, ratio)
		}
		w.WriteString("\n")
	}
}
