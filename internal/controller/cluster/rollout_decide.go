package cluster

import (
	"fmt"
	"slices"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	valkeyv1 "github.com/gomomento/valkey-operator/api/v1alpha1"
)

// rolloutCluster is one ValkeyCluster that uses a rollout's object, as the
// deciding cluster sees it.
type rolloutCluster struct {
	// Key is "namespace/name".
	Key    string
	Canary bool
	// Owes: some node is outdated. Only the deciding cluster knows its own;
	// the others' comes from status.rolledOut, which lags behind, never
	// ahead, so a canary is never taken for done too early.
	Owes bool
	// Failed is the message of a Progressing ActionFailed, or of a
	// ContainersHealthy False (a new node's image that cannot start), ""
	// otherwise.
	Failed string
	// DataLost and DataLostAt are the DataLost record, "" when none.
	DataLost   string
	DataLostAt time.Time
}

// rolloutInput is one object's rollout as one cluster reconcile sees it.
type rolloutInput struct {
	// Self is the deciding cluster's key: the only one that may take a
	// slot, since only its own Owes is first-hand.
	Self       string
	Max        int
	Generation int64
	// Release: the object carries AnnotationRolloutRelease.
	Release  bool
	Status   valkeyv1.RolloutStatus
	Clusters []rolloutCluster
	Now      time.Time
}

// rolloutVerdict is whether a cluster may roll, and why not.
type rolloutVerdict struct {
	Roll    bool
	Message string
}

// decideRollout is the object's rollout status after this decision and
// each cluster's verdict. The release annotation also lets the others go
// past canaries that have not finished. Holders keep their slot until they owe no roll
// (or stop using the object); a free slot goes to Self only, and the
// caller writes the status with an optimistic lock so two clusters
// deciding on the same stale count cannot both take it. A failure of a
// holder holds every cluster not yet rolling until the spec changes or
// the release annotation is set.
func decideRollout(in rolloutInput) (valkeyv1.RolloutStatus, map[string]rolloutVerdict) {
	st := *in.Status.DeepCopy()
	byKey := map[string]rolloutCluster{}
	for _, c := range in.Clusters {
		byKey[c.Key] = c
	}
	if in.Release {
		st.Hold = nil
		st.ReleasedGeneration = in.Generation
	}
	if st.Hold != nil && st.Hold.Generation != in.Generation {
		st.Hold = nil
	}
	st.Rolling = slices.DeleteFunc(st.Rolling, func(s valkeyv1.RolloutSlot) bool {
		c, ok := byKey[s.Cluster]
		return !ok || (s.Cluster == in.Self && !c.Owes)
	})
	if st.Hold == nil && st.ReleasedGeneration != in.Generation {
		for _, s := range st.Rolling {
			if s.Generation != in.Generation {
				continue
			}
			if msg := rolloutFailure(byKey[s.Cluster], s.Since.Time); msg != "" {
				st.Hold = &valkeyv1.RolloutHold{Generation: in.Generation, Message: msg}
				break
			}
		}
	}
	var canaries []string
	for _, c := range in.Clusters {
		if c.Canary && c.Owes {
			canaries = append(canaries, c.Key)
		}
	}
	slices.Sort(canaries)
	verdicts := map[string]rolloutVerdict{}
	for _, c := range in.Clusters {
		verdicts[c.Key] = verdictOf(&st, c, canaries, in)
	}
	if len(st.Rolling) == 0 {
		st.Rolling = nil
	}
	return st, verdicts
}

// verdictOf decides one cluster, taking a free slot into st when it is
// Self's.
func verdictOf(st *valkeyv1.RolloutStatus, c rolloutCluster, canaries []string, in rolloutInput) rolloutVerdict {
	if !c.Owes || slices.ContainsFunc(st.Rolling, func(s valkeyv1.RolloutSlot) bool { return s.Cluster == c.Key }) {
		return rolloutVerdict{Roll: true}
	}
	if st.Hold != nil {
		return rolloutVerdict{Message: st.Hold.Message}
	}
	if !c.Canary && len(canaries) > 0 && st.ReleasedGeneration != in.Generation {
		return rolloutVerdict{Message: "waiting for canary " + strings.Join(canaries, ", ")}
	}
	if len(st.Rolling) >= in.Max {
		holders := make([]string, len(st.Rolling))
		for i, s := range st.Rolling {
			holders[i] = s.Cluster
		}
		return rolloutVerdict{Message: fmt.Sprintf("waiting for rollout slot (%d of %d in use: %s)",
			len(st.Rolling), in.Max, strings.Join(holders, ", "))}
	}
	if c.Key == in.Self {
		st.Rolling = append(st.Rolling, valkeyv1.RolloutSlot{Cluster: c.Key, Since: metav1.NewTime(in.Now), Generation: in.Generation})
	}
	return rolloutVerdict{Roll: true}
}

// rolloutFailure is why a slot holder's roll counts as failed: an action
// failed, or a shard lost its data after it took the slot.
func rolloutFailure(c rolloutCluster, since time.Time) string {
	who := c.Key
	if c.Canary {
		who = "canary " + who
	}
	switch {
	case c.Failed != "":
		return fmt.Sprintf("held: %s failed: %s", who, c.Failed)
	case c.DataLost != "" && !c.DataLostAt.Before(since):
		return fmt.Sprintf("held: %s lost data: %s", who, c.DataLost)
	}
	return ""
}
