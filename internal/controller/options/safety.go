package options

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

// SafetyFor is how long after a pass that visited every node of the
// cluster with uid the next one is due when nothing wakes the cluster
// sooner: SafetyInterval (the shipped one when unset) moved by up to a
// fifth either way, the same for the cluster on every pass and after a
// restart of the operator.
func (o Options) SafetyFor(uid types.UID) time.Duration {
	base := o.SafetyInterval
	if base <= 0 {
		base = DefaultOptions().SafetyInterval
	}
	return safetyInterval(uid, base)
}

// safetyInterval is base moved by up to safetyJitter either way by uid.
func safetyInterval(uid types.UID, base time.Duration) time.Duration {
	// A fraction in [0, 1) from 53 bits of the hash: UIDs differ in few
	// bytes, which every bit of a cryptographic hash spreads.
	sum := sha256.Sum256([]byte(uid))
	frac := float64(binary.BigEndian.Uint64(sum[:8])>>11) / float64(uint64(1)<<53)
	return time.Duration(float64(base) * (1 - safetyJitter + 2*safetyJitter*frac))
}
