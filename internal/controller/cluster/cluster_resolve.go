package cluster

import (
	"context"
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	valkeyv1 "github.com/gomomento/valkey-operator/api/v1alpha1"
	"github.com/gomomento/valkey-operator/internal/controller/clusterstatus"
	"github.com/gomomento/valkey-operator/internal/resolve"
)

// resolveConfig resolves the config chain, image and roles. A reference
// that does not resolve is the user's to fix: it is reported, not retried
// as an error, and the menu is read again on the resync. Only what the
// broken reference feeds waits: a formed cluster keeps healing with the
// rendering its nodes run (see lastGoodSpecs), and with the ACL it has
// while a binding does not resolve.
func (r *Reconciler) resolveConfig(ctx context.Context, s *clusterScope) (phaseResult, error) {
	vc := s.vc
	res, users, err := r.resolve(ctx, vc)
	if err == nil {
		s.found.refs = &cond{metav1.ConditionTrue, valkeyv1.ReasonResolved,
			fmt.Sprintf("config chain %v resolved to image %s", res.Chain, res.Image)}
		s.found.defaultUserOpen = defaultUserCondition(users)
		s.found.headroom = memoryHeadroomCondition(res)
		s.found.placement = placementCondition(s.rc, res)
		s.res, s.users = res, users
		return nextPhase, nil
	}
	var rerr *resolve.Error
	if !errors.As(err, &rerr) {
		return phaseResult{}, err
	}
	clusterstatus.LogFrom(ctx).Info(rerr.Message)
	if !clusterstatus.IsConditionMessage(vc, valkeyv1.CondReferencesResolved, rerr.Message) {
		r.Recorder.Eventf(vc, nil, corev1.EventTypeWarning, rerr.Reason, "Resolve", "%s", rerr.Message)
	}
	s.found.refs = &cond{metav1.ConditionFalse, rerr.Reason, rerr.Message}
	if !formed(vc) {
		// Nothing runs yet that a rendering could be kept from.
		return requeueAfter(r.Options.SteadyResync), nil
	}
	s.res, s.aclHeld = res, true
	return nextPhase, nil
}

// resolve reads the config chain, image and roles live. When only the
// ACL bindings fail, the config's result comes back with the error.
func (r *Reconciler) resolve(ctx context.Context, vc *valkeyv1.ValkeyCluster) (*resolve.Result, []resolve.User, error) {
	m := menu{c: r.Client}
	res, err := resolve.Config(ctx, m, vc.Spec.ConfigRef)
	if err != nil {
		return nil, nil, err
	}
	bindings, err := resolve.MergeACL(res.ACL, vc.Spec.ACL)
	if err != nil {
		return res, nil, err
	}
	users, err := resolve.Users(ctx, m, bindings)
	if err != nil {
		return res, nil, err
	}
	return res, users, nil
}

// defaultUserCondition is DefaultUserOpen for the resolved bindings.
func defaultUserCondition(users []resolve.User) *cond {
	if len(users) == 0 {
		return &cond{metav1.ConditionTrue, valkeyv1.ReasonNoBindings,
			"no ACL bindings: the default user is open to every client without a password; add a binding to close it"}
	}
	return &cond{metav1.ConditionFalse, valkeyv1.ReasonBindingsPresent, "ACL bindings exist; the default user is disabled unless bound"}
}
