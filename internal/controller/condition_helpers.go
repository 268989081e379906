package controller

import (
	"context"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	logf "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/go-logr/logr"
	valkeyv1 "github.com/gomomento/valkey-operator/api/v1alpha1"
)

func logFrom(ctx context.Context) logr.Logger { return logf.FromContext(ctx) }

// setCondition sets a condition stamped with the cluster's generation.
func setCondition(vc *valkeyv1.ValkeyCluster, typ string, status metav1.ConditionStatus, reason, message string) {
	meta.SetStatusCondition(&vc.Status.Conditions, metav1.Condition{
		Type: typ, Status: status, Reason: reason, Message: message, ObservedGeneration: vc.Generation,
	})
}

func boolStatus(b bool) metav1.ConditionStatus {
	if b {
		return metav1.ConditionTrue
	}
	return metav1.ConditionFalse
}

func isConditionMessage(vc *valkeyv1.ValkeyCluster, typ, msg string) bool {
	for _, c := range vc.Status.Conditions {
		if c.Type == typ {
			return c.Message == msg
		}
	}
	return false
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n]
}
