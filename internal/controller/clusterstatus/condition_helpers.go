package clusterstatus

import (
	"context"

	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	logf "sigs.k8s.io/controller-runtime/pkg/log"

	valkeyv1 "github.com/gomomento/valkey-operator/api/v1alpha1"
)

// LogFrom is the reconcile's logger, carried in its context.
func LogFrom(ctx context.Context) logr.Logger { return logf.FromContext(ctx) }

// SetCondition sets a condition stamped with the cluster's generation.
func SetCondition(vc *valkeyv1.ValkeyCluster, typ string, status metav1.ConditionStatus, reason, message string) {
	meta.SetStatusCondition(&vc.Status.Conditions, metav1.Condition{
		Type: typ, Status: status, Reason: reason, Message: message, ObservedGeneration: vc.Generation,
	})
}

// BoolStatus is the condition status that says b.
func BoolStatus(b bool) metav1.ConditionStatus {
	if b {
		return metav1.ConditionTrue
	}
	return metav1.ConditionFalse
}

// IsConditionMessage says whether the condition typ already carries msg, so
// a caller can tell a repeat from news (an event, a log line) before setting it.
func IsConditionMessage(vc *valkeyv1.ValkeyCluster, typ, msg string) bool {
	for _, c := range vc.Status.Conditions {
		if c.Type == typ {
			return c.Message == msg
		}
	}
	return false
}
