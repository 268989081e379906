package kubectlvalkey

import (
	"context"
	"fmt"
	"io"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	valkeyv1 "github.com/gomomento/valkey-operator/api/v1alpha1"
	"github.com/gomomento/valkey-operator/internal/topology"
	"github.com/gomomento/valkey-operator/internal/valkey"
)

// status prints a cluster's status and its ValkeyNodes.
func status(ctx context.Context, c client.Reader, namespace, name string, w io.Writer) error {
	var vc valkeyv1.ValkeyCluster
	key := client.ObjectKey{Namespace: namespace, Name: name}
	if err := c.Get(ctx, key, &vc); err != nil {
		if apierrors.IsNotFound(err) {
			return fmt.Errorf("ValkeyCluster %s not found", key)
		}
		return fmt.Errorf("reading ValkeyCluster %s: %w", key, err)
	}
	var list valkeyv1.ValkeyNodeList
	if err := c.List(ctx, &list, client.InNamespace(namespace)); err != nil {
		return fmt.Errorf("listing the ValkeyNodes of %s: %w", key, err)
	}
	var nodes []valkeyv1.ValkeyNode
	for _, n := range list.Items {
		if n.Spec.ClusterName == name {
			nodes = append(nodes, n)
		}
	}
	failovers, err := failoverEvents(ctx, c, namespace, name)
	if err != nil {
		return err
	}
	return writeStatus(w, &vc, nodes, failovers, time.Now())
}

// failoverEvents are the cluster's Failover Events, newest first, at most
// recentFailovers of them: which replica replaced which primary, and by
// which path (Valkey's election is not among them: the operator records
// only what it did). The API server selects them, so a busy namespace's
// other Events are not read. A user not allowed to list Events sees none.
func failoverEvents(ctx context.Context, c client.Reader, namespace, name string) ([]corev1.Event, error) {
	var list corev1.EventList
	switch err := c.List(ctx, &list, client.InNamespace(namespace), failoverSelector(name)); {
	case apierrors.IsForbidden(err):
		return nil, nil
	case err != nil:
		return nil, fmt.Errorf("listing the Events of %s/%s: %w", namespace, name, err)
	}
	out := list.Items
	sort.SliceStable(out, func(i, j int) bool { return eventTime(out[i]).After(eventTime(out[j])) })
	return out[:min(len(out), recentFailovers)], nil
}

const recentFailovers = 5

// failoverSelector picks the cluster's Failover Events by the fields the
// API server indexes for Events.
func failoverSelector(cluster string) client.MatchingFields {
	return client.MatchingFields{
		"involvedObject.kind": "ValkeyCluster",
		"involvedObject.name": cluster,
		"reason":              string(topology.KindFailover),
	}
}

// eventTime is when an Event last happened, whichever API recorded it.
func eventTime(e corev1.Event) time.Time {
	if !e.EventTime.IsZero() {
		return e.EventTime.Time
	}
	return e.LastTimestamp.Time
}

// writeStatus renders the status as aligned sections; now dates notAfter.
func writeStatus(w io.Writer, vc *valkeyv1.ValkeyCluster, nodes []valkeyv1.ValkeyNode, failovers []corev1.Event, now time.Time) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	s := vc.Status
	state := string(s.State)
	if state == "" {
		// A missing status counts as Creating (see the API).
		state = string(valkeyv1.StateCreating)
	}
	fmt.Fprintf(tw, "Cluster:\t%s/%s\n", vc.Namespace, vc.Name)
	fmt.Fprintf(tw, "State:\t%s\n", state)
	fmt.Fprintf(tw, "Message:\t%s\n", orDash(s.Message))
	fmt.Fprintf(tw, "Spec:\tshards %d, replicasPerShard %d\n", vc.Spec.Shards, vc.Spec.ReplicasPerShard)
	fmt.Fprintf(tw, "Shards:\t%d\n", s.Shards)
	fmt.Fprintf(tw, "Nodes:\t%d ready of %d\n", s.ReadyNodes, len(s.Nodes))
	fmt.Fprintf(tw, "Slots:\t%d/%d assigned\n", s.SlotsAssigned, valkey.SlotCount)
	if r := s.Resharding; r != nil {
		fmt.Fprintf(tw, "Resharding:\t%s moved, %d to go\n", r.Progress, r.SlotsToMove)
		for _, m := range r.Moving {
			fmt.Fprintf(tw, "  moving:\t%s -> %s slots %s (%d, %s)\n", m.Source, m.Target, m.Slots, m.SlotCount, m.Method)
		}
	}
	if vc.Spec.TLS != nil {
		writeTLS(tw, vc, now)
	}
	if err := tw.Flush(); err != nil {
		return err
	}

	sections := []func(io.Writer){
		func(w io.Writer) { writeConditions(w, s.Conditions) },
		func(w io.Writer) { writeShards(w, s.ShardStatuses) },
		func(w io.Writer) { writeNodes(w, nodes) },
	}
	if len(failovers) > 0 {
		sections = append(sections, func(w io.Writer) { writeFailovers(w, failovers, now) })
	}
	for _, section := range sections {
		fmt.Fprintln(w)
		tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
		section(tw)
		if err := tw.Flush(); err != nil {
			return err
		}
	}
	return nil
}

func writeTLS(w io.Writer, vc *valkeyv1.ValkeyCluster, now time.Time) {
	fmt.Fprintf(w, "TLS Secret:\t%s\n", vc.Spec.TLS.SecretRef)
	t := vc.Status.TLS
	if t == nil {
		fmt.Fprintf(w, "Certificate:\tnot inspected yet\n")
		return
	}
	fmt.Fprintf(w, "Certificate:\tsha256 %s\n", orDash(t.Fingerprint))
	if t.NotAfter != nil {
		fmt.Fprintf(w, "Not after:\t%s (%s)\n", t.NotAfter.UTC().Format(time.RFC3339), untilText(t.NotAfter.Time, now))
	}
	fmt.Fprintf(w, "Serving:\t%d/%d nodes serve the current certificate\n", t.NodesServingCurrent, t.NodesTotal)
}

func writeConditions(w io.Writer, conds []metav1.Condition) {
	fmt.Fprintln(w, "CONDITION\tSTATUS\tREASON\tMESSAGE")
	if len(conds) == 0 {
		fmt.Fprintln(w, "-\t-\t-\t-")
	}
	for _, c := range conds {
		fmt.Fprintf(w, "%s\t%s\t%s\t%s\n", c.Type, c.Status, orDash(c.Reason), orDash(oneLine(c.Message)))
	}
}

func writeShards(w io.Writer, shards []valkeyv1.ShardStatus) {
	fmt.Fprintln(w, "SHARD\tPRIMARY\tREPLICAS\tSLOTS\tSLOT COUNT")
	sorted := append([]valkeyv1.ShardStatus(nil), shards...)
	sort.Slice(sorted, func(i, j int) bool { return sorted[i].Index < sorted[j].Index })
	for _, sh := range sorted {
		fmt.Fprintf(w, "%d\t%s\t%s\t%s\t%d\n", sh.Index, orDash(sh.Primary), orDash(strings.Join(sh.Replicas, ",")), orDash(sh.Slots), sh.SlotCount)
	}
}

func writeNodes(w io.Writer, nodes []valkeyv1.ValkeyNode) {
	fmt.Fprintln(w, "NODE\tSHARD\tROLE\tLIFECYCLE\tPOD IP")
	sorted := append([]valkeyv1.ValkeyNode(nil), nodes...)
	sort.Slice(sorted, func(i, j int) bool {
		a, b := sorted[i], sorted[j]
		if a.Spec.ShardIndex != b.Spec.ShardIndex {
			return a.Spec.ShardIndex < b.Spec.ShardIndex
		}
		// The primary first, as in the shard table.
		if pa, pb := a.Status.Role == valkeyv1.RolePrimary, b.Status.Role == valkeyv1.RolePrimary; pa != pb {
			return pa
		}
		return a.Name < b.Name
	})
	for _, n := range sorted {
		lifecycle := n.Spec.Lifecycle
		if lifecycle == "" {
			lifecycle = valkeyv1.LifecycleActive
		}
		fmt.Fprintf(w, "%s\t%d\t%s\t%s\t%s\n", n.Name, n.Spec.ShardIndex, orDash(string(n.Status.Role)), lifecycle, orDash(n.Status.PodIP))
	}
}

// writeFailovers lists the operator's recent failovers: the note says the
// path (a kubelet-reported exit, no quorum, an overdue election, a roll, a
// hand-over) and who replaced whom.
func writeFailovers(w io.Writer, events []corev1.Event, now time.Time) {
	fmt.Fprintln(w, "FAILOVER\tAGO\tWHAT")
	for _, e := range events {
		fmt.Fprintf(w, "%s\t%s\t%s\n", eventTime(e).UTC().Format(time.RFC3339), now.Sub(eventTime(e)).Round(time.Second), oneLine(e.Message))
	}
}

// untilText says how far notAfter is from now, in days.
func untilText(notAfter, now time.Time) string {
	d := notAfter.Sub(now)
	switch {
	case d < 0:
		return fmt.Sprintf("expired %s ago", days(-d))
	default:
		return "in " + days(d)
	}
}

func days(d time.Duration) string {
	if d < 24*time.Hour {
		return d.Round(time.Minute).String()
	}
	return fmt.Sprintf("%dd", int(d.Hours()/24))
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// oneLine keeps a multi-line condition message from breaking the table.
func oneLine(s string) string {
	return strings.Join(strings.Fields(s), " ")
}
