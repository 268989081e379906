package reload

import (
	"crypto/sha256"
	"encoding/binary"
	"time"

	"k8s.io/apimachinery/pkg/types"
)

// safetyJitter is how far, as a fraction either way, one cluster's safety
// interval is moved from the configured one, so clusters created together
// do not have their nodes visited together.
const safetyJitter = 0.2

// safetyInterval is how long after a pass that visited every node of the
// cluster with uid the next one is due when nothing changes: base moved by
// up to safetyJitter either way, the same for the cluster on every pass and
// after a restart of the operator.
func safetyInterval(uid types.UID, base time.Duration) time.Duration {
	// A fraction in [0, 1) from 53 bits of the hash: UIDs differ in few
	// bytes, which every bit of a cryptographic hash spreads.
	sum := sha256.Sum256([]byte(uid))
	frac := float64(binary.BigEndian.Uint64(sum[:8])>>11) / float64(uint64(1)<<53)
	return time.Duration(float64(base) * (1 - safetyJitter + 2*safetyJitter*frac))
}

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
