package cluster

import (
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	valkeyv1 "github.com/gomomento/valkey-operator/api/v1alpha1"
	"github.com/gomomento/valkey-operator/internal/render"
	"github.com/gomomento/valkey-operator/internal/resolve"
)

// placementCondition is PlacementApplied for the resolved spec.pod and the
// cluster's placement; render.PlacementConflicts decides.
func placementCondition(rc render.Cluster, res *resolve.Result) *cond {
	conflicts := rc.PlacementConflicts(res.Pod)
	if len(conflicts) == 0 {
		return &cond{metav1.ConditionTrue, valkeyv1.ReasonPlacementApplied, "the pods carry every placement setting as written"}
	}
	return &cond{metav1.ConditionFalse, valkeyv1.ReasonPlacementConflict, strings.Join(conflicts, "; ")}
}
