package topology

import "fmt"

// VolumeLost says whether a persistent member's data is gone for good,
// and why: its claim does not exist or lost its volume, its volume does
// not exist, or the only Kubernetes node the volume can be used on does
// not exist (its pod can never be scheduled). It rests only on what the
// API server answered around the cache (Member.Storage), and only while
// no pod of the node runs: a running process still serves from its
// volume, whatever became of the objects. A claim still Pending (its
// volume not provisioned yet, as WaitForFirstConsumer leaves it) is not
// lost.
func VolumeLost(m Member) (string, bool) {
	st := m.Storage
	if st == nil || st.PodRuns || m.Pod.Phase == PodRunning || m.Pod.Phase == PodStopping {
		return "", false
	}
	switch {
	case st.ClaimPhase == ClaimMissing:
		return fmt.Sprintf("claim %s does not exist", st.Claim), true
	case st.ClaimPhase == ClaimLost:
		return fmt.Sprintf("claim %s is Lost (its volume %s is gone)", st.Claim, st.Volume), true
	case st.ClaimPhase != ClaimBound:
		return "", false
	case st.VolumeMissing:
		return fmt.Sprintf("volume %s of claim %s does not exist", st.Volume, st.Claim), true
	case st.PinnedNodeMissing:
		return fmt.Sprintf("volume %s of claim %s is pinned to Kubernetes node %s, which does not exist", st.Volume, st.Claim, st.PinnedTo), true
	}
	return "", false
}
