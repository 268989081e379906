package cluster

import (
	"context"
	"fmt"
	"slices"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/controller-runtime/pkg/client"

	valkeyv1 "github.com/gomomento/valkey-operator/api/v1alpha1"
	"github.com/gomomento/valkey-operator/internal/resolve"
)

// rolloutObject is a ValkeyImage or ValkeyConfig a cluster uses, with its
// rollout policy and status.
type rolloutObject struct {
	obj    client.Object
	kind   string
	policy *valkeyv1.RolloutPolicy
	status *valkeyv1.RolloutStatus
}

func (o rolloutObject) String() string { return o.kind + " " + o.obj.GetName() }

// rolloutGate is why the cluster's roll must wait for its turn in the
// rollouts of the image and configs it uses, "" when it may roll. It takes
// and gives back the cluster's slots as it goes, image first then the
// configs child to root: taking them in one order everywhere means two
// clusters never each hold a slot the other waits for.
func (r *Reconciler) rolloutGate(ctx context.Context, s *clusterScope) (string, error) {
	if s.res == nil {
		return "", nil
	}
	m := menu{c: r.Client}
	objs, err := rolloutObjectsOf(ctx, m, s.res)
	if err != nil {
		return "", err
	}
	self := client.ObjectKeyFromObject(s.vc).String()
	owes := s.o.anyOutdated()
	rolledOut := s.vc.Status.RolledOut
	if s.o.settled() {
		// Also while Creating: new nodes get the current spec. Not while
		// a live edit is still being applied: a node that refuses it owes
		// a roll of this generation, which must wait for its slot.
		rolledOut = rolledOutOf(objs)
		s.found.rolledOut = &rolledOut
	}
	if !owes && !slices.ContainsFunc(objs, func(o rolloutObject) bool { return o.holds(self) || o.releaseAsked() || o.staleHold() }) {
		return "", nil
	}
	var clusters valkeyv1.ValkeyClusterList
	if err := r.List(ctx, &clusters); err != nil {
		return "", fmt.Errorf("listing clusters for their rollouts: %w", err)
	}
	chains := map[string][]rolloutObject{}
	for _, o := range objs {
		users, err := rolloutUsers(ctx, m, o, clusters.Items, chains)
		if err != nil {
			return "", err
		}
		// Only an object whose current generation the nodes do not all run
		// yet gates the roll: an edit of the config alone waits for the
		// config's slots, not the image's, and a roll the cluster's own
		// spec started waits for none.
		needs := owes && !slices.Contains(rolledOut, o.rolledOut())
		for i := range users {
			if users[i].Key == self {
				users[i].Owes = needs
			}
		}
		in := rolloutInput{Self: self, Max: o.policy.MaxConcurrent(), Generation: o.obj.GetGeneration(),
			Release: o.releaseAsked(), Status: *o.status, Clusters: users, Now: time.Now()}
		st, verdicts := decideRollout(in)
		if !equality.Semantic.DeepEqual(st, *o.status) {
			if err := r.writeRollout(ctx, o, st); apierrors.IsConflict(err) {
				return fmt.Sprintf("%s: its rollout changed meanwhile; deciding again", o), nil
			} else if err != nil {
				return "", err
			}
		}
		if in.Release {
			patch := client.MergeFrom(o.obj.DeepCopyObject().(client.Object))
			annotations := o.obj.GetAnnotations()
			delete(annotations, valkeyv1.AnnotationRolloutRelease)
			o.obj.SetAnnotations(annotations)
			if err := r.Patch(ctx, o.obj, patch); err != nil {
				return "", fmt.Errorf("removing %s from %s: %w", valkeyv1.AnnotationRolloutRelease, o, err)
			}
		}
		if v := verdicts[self]; !v.Roll {
			return fmt.Sprintf("%s: %s", o, v.Message), nil
		}
	}
	return "", nil
}

// writeRollout records st as o's rollout status. The update carries the
// resourceVersion the decision was read at, so a decision made on a stale
// count fails instead of overwriting another cluster's slot.
func (r *Reconciler) writeRollout(ctx context.Context, o rolloutObject, st valkeyv1.RolloutStatus) error {
	*o.status = st
	if err := r.Status().Update(ctx, o.obj); err != nil {
		return fmt.Errorf("writing the rollout status of %s: %w", o, err)
	}
	return nil
}

func (o rolloutObject) holds(cluster string) bool {
	return slices.ContainsFunc(o.status.Rolling, func(s valkeyv1.RolloutSlot) bool { return s.Cluster == cluster })
}

// staleHold: the hold is of a generation the spec has moved past, and
// only a decision clears it from the status.
func (o rolloutObject) staleHold() bool {
	return o.status.Hold != nil && o.status.Hold.Generation != o.obj.GetGeneration()
}

func (o rolloutObject) releaseAsked() bool {
	_, ok := o.obj.GetAnnotations()[valkeyv1.AnnotationRolloutRelease]
	return ok
}

// rolloutObjectsOf is the image and the configs res resolved, in the order
// their slots are taken, read from the cache like res itself.
func rolloutObjectsOf(ctx context.Context, m menu, res *resolve.Result) ([]rolloutObject, error) {
	img, err := m.Image(ctx, res.ImageName)
	if err != nil {
		return nil, fmt.Errorf("reading ValkeyImage %s for its rollout: %w", res.ImageName, err)
	}
	if img.Status.Rollout == nil {
		img.Status.Rollout = &valkeyv1.RolloutStatus{}
	}
	out := []rolloutObject{{obj: img, kind: "ValkeyImage", policy: img.Spec.Rollout, status: img.Status.Rollout}}
	for _, name := range res.Chain {
		cfg, err := m.Config(ctx, name)
		if err != nil {
			return nil, fmt.Errorf("reading ValkeyConfig %s for its rollout: %w", name, err)
		}
		if cfg.Status.Rollout == nil {
			cfg.Status.Rollout = &valkeyv1.RolloutStatus{}
		}
		out = append(out, rolloutObject{obj: cfg, kind: "ValkeyConfig", policy: cfg.Spec.Rollout, status: cfg.Status.Rollout})
	}
	return out, nil
}

// rolledOutOf is the generations of objs, which a cluster with no outdated
// node runs.
func rolledOutOf(objs []rolloutObject) []valkeyv1.RolledOut {
	out := make([]valkeyv1.RolledOut, len(objs))
	for i, o := range objs {
		out[i] = o.rolledOut()
	}
	return out
}

// rolledOut is what a cluster running o's current generation records.
func (o rolloutObject) rolledOut() valkeyv1.RolledOut {
	return valkeyv1.RolledOut{Kind: o.kind, Name: o.obj.GetName(), Generation: o.obj.GetGeneration()}
}

// rolloutUsers is every cluster whose config chain uses o, as o's rollout
// sees it. chains memoises each config's resolution.
func rolloutUsers(ctx context.Context, m menu, o rolloutObject, clusters []valkeyv1.ValkeyCluster, chains map[string][]rolloutObject) ([]rolloutCluster, error) {
	canary := labels.Nothing()
	if o.policy != nil && o.policy.Canary != nil {
		sel, err := metav1.LabelSelectorAsSelector(o.policy.Canary)
		if err != nil {
			return nil, fmt.Errorf("canary selector of %s: %w", o, err)
		}
		canary = sel
	}
	var out []rolloutCluster
	for i := range clusters {
		vc := &clusters[i]
		chain, ok := chains[vc.Spec.ConfigRef]
		if !ok {
			// A cluster whose chain does not resolve runs no roll of it.
			if res, err := resolve.Config(ctx, m, vc.Spec.ConfigRef); err == nil {
				chain, _ = rolloutObjectsOf(ctx, m, res)
			}
			chains[vc.Spec.ConfigRef] = chain
		}
		if !slices.ContainsFunc(chain, func(c rolloutObject) bool { return c.kind == o.kind && c.obj.GetName() == o.obj.GetName() }) {
			continue
		}
		c := rolloutCluster{Key: client.ObjectKeyFromObject(vc).String(), Canary: canary.Matches(labels.Set(vc.Labels)),
			Owes: !slices.Contains(vc.Status.RolledOut, o.rolledOut())}
		if p := meta.FindStatusCondition(vc.Status.Conditions, valkeyv1.CondProgressing); p != nil && p.Reason == valkeyv1.ReasonActionFailed {
			c.Failed = p.Message
		} else if h := meta.FindStatusCondition(vc.Status.Conditions, valkeyv1.CondContainersHealthy); h != nil && h.Status == metav1.ConditionFalse {
			c.Failed = h.Reason + ": " + h.Message
		}
		if d := meta.FindStatusCondition(vc.Status.Conditions, valkeyv1.CondDataLost); d != nil && d.Status == metav1.ConditionTrue {
			c.DataLost, c.DataLostAt = d.Message, d.LastTransitionTime.Time
		}
		out = append(out, c)
	}
	return out, nil
}
