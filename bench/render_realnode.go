package main

import (
	"fmt"
	"strings"

	"github.com/gomomento/valkey-operator/bench/record"
)

// realNodeScenarios is the order the real-node table lists its rows in.
var realNodeScenarios = []string{
	record.ScenarioBootstrapTLS,
	record.ScenarioPrimaryDelete,
	record.ScenarioFullRestart,
}

func renderRealNode(w *strings.Builder, r Report) {
	if len(r.Records.RealNode) == 0 {
		return
	}
	section(w, "Real node beside the local runtime",
		"The same three scenarios, each written once per suite against its harness, run one after the",
		"other: on a real kubelet with containerd and runc (`test/realnode`: the operator installed by",
		"its chart as a Deployment, images built here, local volumes), then on the [local",
		"runtime](local-runtime.md) (`test/e2e`). Time runs from the action (the Secret and cluster",
		"created, the primary's pod deleted, every pod deleted at once) to the cluster `Active` with every",
		"member answering in place (and, for TLS, every node serving the Secret's certificate). \"lost\"",
		"counts keys written and replicated before the action that did not read back after it. The",
		"ratio is the real node's time over the local runtime's: what the local runtime's figures",
		"elsewhere on this page leave out.")
	tableHead(w, "lrrrl", "scenario", record.RuntimeRealNode, record.RuntimeLocal, "ratio", "keys written (lost)")
	for _, sc := range realNodeScenarios {
		real, okReal := realNodeRecord(r.Records.RealNode, record.RuntimeRealNode, sc)
		local, okLocal := realNodeRecord(r.Records.RealNode, record.RuntimeLocal, sc)
		if !okReal && !okLocal {
			continue
		}
		cell := func(rec record.RealNode, ok bool) string {
			if !ok {
				return "—"
			}
			return secs(rec.Seconds)
		}
		ratio := "—"
		if okReal && okLocal && local.Seconds > 0 {
			ratio = fmt.Sprintf("%.1f×", real.Seconds/local.Seconds)
		}
		fmt.Fprintf(w, "| %s | %s | %s | %s | %s |\n", sc, cell(real, okReal), cell(local, okLocal), ratio,
			keysCell(real, okReal, local, okLocal))
	}
	w.WriteString("\n")
}

// realNodeRecord is the last record of a scenario on a runtime.
func realNodeRecord(rs []record.RealNode, runtime, scenario string) (record.RealNode, bool) {
	for j := len(rs) - 1; j >= 0; j-- {
		if rs[j].Runtime == runtime && rs[j].Scenario == scenario {
			return rs[j], true
		}
	}
	return record.RealNode{}, false
}

// keysCell says what each runtime kept; a bootstrap writes no keys.
func keysCell(real record.RealNode, okReal bool, local record.RealNode, okLocal bool) string {
	var parts []string
	for _, c := range []struct {
		name string
		rec  record.RealNode
		ok   bool
	}{{"real", real, okReal}, {"local", local, okLocal}} {
		if c.ok && c.rec.Keys > 0 {
			parts = append(parts, fmt.Sprintf("%s %d (%d)", c.name, c.rec.Keys, c.rec.Lost))
		}
	}
	if len(parts) == 0 {
		return "—"
	}
	return strings.Join(parts, "; ")
}
