package cluster

import (
	"fmt"
	"strings"
	"time"

	valkeyv1 "github.com/gomomento/valkey-operator/api/v1alpha1"
	"github.com/gomomento/valkey-operator/internal/topology"
	"github.com/gomomento/valkey-operator/internal/valkey"
)

// downgradeGrace is how long a replica of an older major version than its
// primary may take over its first sync before the downgrade is called
// blocked: a first sync of the sizes we run takes seconds, and one that
// cannot load the file fails and starts again without end.
const downgradeGrace = time.Minute

// downgradeBlocked is the VersionMatches message when a roll to an older
// major version cannot go on: a replica running it was created more than
// downgradeGrace ago and has never completed a sync from its primary,
// which runs a newer major. Valkey 8 loads what Valkey 9 streams only
// while the data holds no type 8 lacks (a hash with fields of their own
// expiry, for one); otherwise it fails the sync over and over. Nothing is
// lost meanwhile (the older nodes serve on), but the roll can only finish
// upwards. Only replicas of image, the one the cluster now asks for,
// count: once the image is set back, the stuck replica is outdated and the
// roll retires it. "" when no replica is stuck that way.
func downgradeBlocked(members []topology.Member, nodes map[string]*valkeyv1.ValkeyNode, versions map[string]valkey.Version, image string, now time.Time) string {
	byID := map[string]string{}
	for _, m := range members {
		if m.View != nil && m.View.ID != "" {
			byID[m.View.ID] = m.Name
		}
	}
	var stuck []string
	var newer valkey.Version
	for _, m := range members {
		v, n := m.View, nodes[m.Name]
		if v == nil || n == nil || n.Spec.Image != image || v.Role != topology.RoleReplica || v.HoldsData || now.Sub(n.CreationTimestamp.Time) < downgradeGrace {
			continue
		}
		primary, ok := byID[v.PrimaryID]
		if !ok {
			continue
		}
		mine, theirs := versions[m.Name], versions[primary]
		if mine.Major == 0 || theirs.Major == 0 || mine.Major >= theirs.Major {
			continue
		}
		stuck = append(stuck, fmt.Sprintf("node %s (Valkey %s) has not loaded the data of its primary %s (Valkey %s)", m.Name, mine, primary, theirs))
		newer = theirs
	}
	if len(stuck) == 0 {
		return ""
	}
	return fmt.Sprintf("downgrade held: %s in %s; the data holds what the older version cannot read, so no further node is created and every node serves on; set the image back to Valkey %d to finish the roll",
		strings.Join(stuck, ", "), downgradeGrace, newer.Major)
}
