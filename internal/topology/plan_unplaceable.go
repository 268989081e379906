package topology

import "slices"

// replaceUnplaceable deletes a joining node whose pod the scheduler cannot
// place and whose spec has changed since it was created: its process never
// ran, so it holds nothing, and waiting for it would wait on settings the
// user has already fixed. The step that creates nodes (bootstrap, joins,
// the roll) then makes it anew from the current spec. A node whose spec is
// current is waited for instead, with the scheduler's reason: replacing it
// would only bring the same pod back, so a cluster that lacks room never
// churns through nodes.
func (w *world) replaceUnplaceable() (Action, bool) {
	for _, n := range w.nodes {
		if !n.joining() || !n.Outdated || n.Pod.Phase != PodPending || n.Pod.Unschedulable == "" {
			continue
		}
		if n.id != "" && slices.Contains(w.holders, n.id) {
			continue
		}
		tier := TierUpdate
		if w.in.Creating {
			tier = TierBootstrap
		}
		return Action{Kind: KindDeleteNode, Tier: tier, Reason: ReasonReplaceUnplaceable,
			Detail: n.Name + ": " + n.Pod.Unschedulable, DeleteNode: &NodeRef{Node: n.Name}}, true
	}
	return Action{}, false
}
