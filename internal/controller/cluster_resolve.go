package controller

import (
	"context"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	valkeyv1 "github.com/gomomento/valkey-operator/api/v1alpha1"
	"github.com/gomomento/valkey-operator/internal/resolve"
)

// resolve reads the config chain, image and roles live.
func (r *ClusterReconciler) resolve(ctx context.Context, vc *valkeyv1.ValkeyCluster) (*resolve.Result, []resolve.User, error) {
	m := menu{ctx: ctx, c: r.Client}
	res, err := resolve.Config(m, vc.Spec.ConfigRef)
	if err != nil {
		return nil, nil, err
	}
	bindings, err := resolve.MergeACL(res.ACL, vc.Spec.ACL)
	if err != nil {
		return nil, nil, err
	}
	users, err := resolve.Users(m, bindings)
	if err != nil {
		return nil, nil, err
	}
	return res, users, nil
}

func (r *ClusterReconciler) applyDefaultUserCondition(vc *valkeyv1.ValkeyCluster, users []resolve.User) {
	if len(users) == 0 {
		setCondition(vc, valkeyv1.CondDefaultUserOpen, metav1.ConditionTrue, valkeyv1.ReasonNoBindings,
			"no ACL bindings: the default user is open to every client without a password; add a binding to close it")
		return
	}
	setCondition(vc, valkeyv1.CondDefaultUserOpen, metav1.ConditionFalse, valkeyv1.ReasonBindingsPresent, "ACL bindings exist; the default user is disabled unless bound")
}
