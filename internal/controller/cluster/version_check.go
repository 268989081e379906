package cluster

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	valkeyv1 "github.com/gomomento/valkey-operator/api/v1alpha1"
	"github.com/gomomento/valkey-operator/internal/controller/clusterstatus"
	"github.com/gomomento/valkey-operator/internal/resolve"
	"github.com/gomomento/valkey-operator/internal/valkey"
)

// versionCheck is the VersionMatches message and reason: a node that runs
// another Valkey version than its image declares first, else a downgrade
// the data blocks; "" when neither. The planner holds node creations and
// the roll while it is set (Input.HoldForVersion).
func versionCheck(o *observed, res *resolve.Result, now time.Time) (mismatch, reason string) {
	if m := versionMismatch(o.nodes, o.versions, res); m != "" {
		return m, valkeyv1.ReasonVersionMismatch
	}
	if res == nil {
		return "", ""
	}
	return downgradeBlocked(o.members, o.nodes, o.versions, res.Image, now), valkeyv1.ReasonDowngradeBlocked
}

// versionMismatch is the VersionMatches message when some node that
// answers, of those created from the image res resolves to, runs another
// Valkey version than the image declares; "" when none does. Nodes of
// another image (the old side of a roll) are not judged: the version their
// image declared is no longer known.
func versionMismatch(nodes map[string]*valkeyv1.ValkeyNode, versions map[string]valkey.Version, res *resolve.Result) string {
	if res == nil {
		return ""
	}
	declared, err := valkey.ParseVersion(res.Version)
	var off []string
	for _, name := range slices.Sorted(maps.Keys(versions)) {
		n, ok := nodes[name]
		if !ok || n.Spec.Image != res.Image {
			continue
		}
		if v := versions[name]; err != nil || v.Compare(declared) != 0 {
			off = append(off, fmt.Sprintf("node %s runs %s", name, v))
		}
	}
	if len(off) == 0 {
		return ""
	}
	return fmt.Sprintf("ValkeyImage %s (%s) declares Valkey %s, but %s; no node is created until they agree",
		res.ImageName, res.Image, res.Version, strings.Join(off, ", "))
}

// versionsCondition is VersionMatches. Without a resolved image there is
// nothing to compare against: nil, and the condition keeps what it said.
func versionsCondition(res *resolve.Result, reason, mismatch string) *cond {
	switch {
	case res == nil:
		return nil
	case mismatch == "":
		return &cond{metav1.ConditionTrue, valkeyv1.ReasonVersionsMatch,
			"every node that answers runs the Valkey version its image declares"}
	}
	return &cond{metav1.ConditionFalse, reason, mismatch}
}

// announceVersions sends a Warning Event whenever the mismatch message
// changes.
func (r *Reconciler) announceVersions(vc *valkeyv1.ValkeyCluster, c *cond) {
	if c != nil && c.status == metav1.ConditionFalse && !clusterstatus.IsConditionMessage(vc, valkeyv1.CondVersionMatches, c.message) {
		r.Recorder.Eventf(vc, nil, corev1.EventTypeWarning, c.reason, "CheckVersion", "%s", c.message)
	}
}
