package reload

import (
	"time"

	"k8s.io/apimachinery/pkg/types"
)

// idleInput is what says whether a look at a cluster may leave every node
// alone.
type idleInput struct {
	// Changed says the Secret's content changed since the last pass.
	Changed bool
	// Settled says the last pass found every node using the content.
	Settled bool
	// SameCluster says the cluster's generation and state are those of the
	// last pass, and its status still shows what the last pass wrote.
	SameCluster bool
	// Want is the hash of the Secret's content; Known maps a pod to the
	// hash of the content it is known to use; Pods are the running pods.
	Want  string
	Known map[types.UID]string
	Pods  []types.UID
	// SinceFull is how long ago a pass last visited every node; Safety is
	// how long that may be.
	SinceFull time.Duration
	Safety    time.Duration
}

// idle says nothing can have changed on the nodes that a pass would find:
// the content is the one every running pod, and no other, is known to use,
// the cluster is as the last pass saw it, and the safety pass is not due.
func idle(in idleInput) bool {
	if in.Changed || !in.Settled || !in.SameCluster || in.SinceFull >= in.Safety {
		return false
	}
	// A pod that went away is in Known and changes what status counts.
	if len(in.Pods) == 0 || len(in.Known) != len(in.Pods) {
		return false
	}
	for _, uid := range in.Pods {
		if in.Known[uid] != in.Want {
			return false
		}
	}
	return true
}
