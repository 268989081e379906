package cluster

import (
	"context"
	"errors"
	"fmt"
	"maps"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	valkeyv1 "github.com/gomomento/valkey-operator/api/v1alpha1"
	"github.com/gomomento/valkey-operator/internal/controller/clusterstatus"
	"github.com/gomomento/valkey-operator/internal/controller/watch"
	"github.com/gomomento/valkey-operator/internal/render"
	"github.com/gomomento/valkey-operator/internal/resolve"
)

// ensureBaseObjects keeps the objects that do not depend on the TLS
// material current, even while the cluster is Invalid.
func (r *Reconciler) ensureBaseObjects(ctx context.Context, s *clusterScope) (phaseResult, error) {
	vc := s.vc
	if err := r.ensureService(ctx, s.rc); err != nil {
		return phaseResult{}, err
	}
	passwords, err := r.ensurePasswords(ctx, s.rc)
	if lost := (*errCredentialsLost)(nil); errors.As(err, &lost) {
		if c := meta.FindStatusCondition(vc.Status.Conditions, valkeyv1.CondReady); c == nil || c.Reason != valkeyv1.ReasonCredentialsLost {
			r.Recorder.Eventf(vc, nil, corev1.EventTypeWarning, valkeyv1.ReasonCredentialsLost, "EnsureCredentials", "%s", lost.message)
		}
		s.found.credentialsLost = lost.message
	}
	if err != nil {
		return phaseResult{}, err
	}
	s.passwords = passwords
	return nextPhase, nil
}

// ensureDerivedObjects brings what follows from the observation in line
// with it.
func (r *Reconciler) ensureDerivedObjects(ctx context.Context, s *clusterScope) (phaseResult, error) {
	vc, rc, o := s.vc, s.rc, s.o
	// The exporter's user outlives the setting until the last pod running
	// an exporter is replaced, so those keep authenticating meanwhile.
	exporter := o.anyExporter() || (s.res != nil && s.res.Exporter)
	if !s.aclHeld {
		// While the bindings do not resolve, the ACL Secret keeps the
		// rules the nodes run: a new node loads those, not a guess.
		if err := r.ensureACLSecret(ctx, rc, s.users, s.passwords, o.minVersion(s.res.Version), exporter); err != nil {
			return phaseResult{}, err
		}
	}
	var err error
	if s.rotating, err = r.rotateCredentials(ctx, vc, o, s.conn); err != nil {
		return phaseResult{}, err
	}
	if err := r.ensurePDBs(ctx, rc, shardPods(vc, o)); err != nil {
		return phaseResult{}, err
	}
	if err := r.ensureNetworkPolicy(ctx, rc, exporter); err != nil {
		return phaseResult{}, err
	}
	if err := r.recordNodeStatus(ctx, o); err != nil {
		return phaseResult{}, err
	}
	if err := r.sizeVolumes(ctx, s); err != nil {
		return phaseResult{}, err
	}
	if err := r.applyLiveSettings(ctx, s); err != nil {
		return phaseResult{}, err
	}
	if err := r.restorePodLabels(ctx, vc, o); err != nil {
		return phaseResult{}, err
	}
	if err := r.ensurePodMetadata(ctx, s); err != nil {
		return phaseResult{}, err
	}
	if err := r.ensurePodReadiness(ctx, o); err != nil {
		return phaseResult{}, err
	}
	return nextPhase, nil
}

// ensureService creates the headless Service, or restores its ports and
// selector if someone changed them.
func (r *Reconciler) ensureService(ctx context.Context, rc render.Cluster) error {
	want := rc.Service()
	var got corev1.Service
	switch err := r.Get(ctx, client.ObjectKeyFromObject(want), &got); {
	case apierrors.IsNotFound(err):
		clusterstatus.LogFrom(ctx).Info("creating headless Service")
		return createIgnoreExists(ctx, r.Client, want)
	case err != nil:
		return fmt.Errorf("reading Service %s: %w", want.Name, err)
	}
	if equality.Semantic.DeepEqual(got.Spec.Ports, want.Spec.Ports) && maps.Equal(got.Spec.Selector, want.Spec.Selector) &&
		got.Spec.PublishNotReadyAddresses == want.Spec.PublishNotReadyAddresses {
		return nil
	}
	got.Spec.Ports = want.Spec.Ports
	got.Spec.Selector = want.Spec.Selector
	got.Spec.PublishNotReadyAddresses = want.Spec.PublishNotReadyAddresses
	if err := r.Update(ctx, &got); err != nil {
		return fmt.Errorf("updating Service %s: %w", want.Name, err)
	}
	return nil
}

// ensureACLSecret renders the ACL file and writes it when it changed.
func (r *Reconciler) ensureACLSecret(ctx context.Context, rc render.Cluster, users []resolve.User, p render.Passwords, version string, exporter bool) error {
	want, err := rc.ACLSecret(users, p, version, exporter)
	if err != nil {
		return err
	}
	return r.ensureSecretData(ctx, want)
}

// ensureNodeTLSSecret keeps the operator-owned copy that pods mount equal to
// the user's valid Secret, so a secretRef rename is applied in place and
// invalid material never reaches a pod.
func (r *Reconciler) ensureNodeTLSSecret(ctx context.Context, rc render.Cluster, source *corev1.Secret) error {
	return r.ensureSecretData(ctx, rc.NodeTLSSecret(source))
}

// ensureSecretData keeps one of the operator's Secrets holding want's data
// and labels. A Secret whose labels someone removed is out of the cache's
// sight: found by its name, it gets them back.
func (r *Reconciler) ensureSecretData(ctx context.Context, want *corev1.Secret) error {
	var got corev1.Secret
	switch err := r.Get(ctx, client.ObjectKeyFromObject(want), &got); {
	case apierrors.IsNotFound(err):
		err := r.Create(ctx, want)
		if !apierrors.IsAlreadyExists(err) {
			if err != nil {
				return fmt.Errorf("creating Secret %s: %w", want.Name, err)
			}
			return nil
		}
		if err := r.APIReader.Get(ctx, client.ObjectKeyFromObject(want), &got); err != nil {
			return fmt.Errorf("reading Secret %s: %w", want.Name, err)
		}
	case err != nil:
		return fmt.Errorf("reading Secret %s: %w", want.Name, err)
	}
	labeled := true
	for k, v := range want.Labels {
		labeled = labeled && got.Labels[k] == v
	}
	if labeled && equality.Semantic.DeepEqual(got.Data, want.Data) {
		return nil
	}
	got.Data = want.Data
	if got.Labels == nil {
		got.Labels = map[string]string{}
	}
	maps.Copy(got.Labels, want.Labels)
	if err := r.Update(ctx, &got); err != nil {
		return fmt.Errorf("updating Secret %s: %w", want.Name, err)
	}
	return nil
}

// ensureNetworkPolicy keeps the cluster's NetworkPolicy as rendered, or
// removes it when the cluster turns it off.
func (r *Reconciler) ensureNetworkPolicy(ctx context.Context, rc render.Cluster, exporter bool) error {
	want := rc.NetworkPolicy(exporter, r.Options.Namespace)
	var got networkingv1.NetworkPolicy
	err := r.Get(ctx, client.ObjectKeyFromObject(want), &got)
	switch {
	case !rc.NetworkPolicyEnabled():
		if err == nil && metav1.IsControlledBy(&got, rc.Cluster) {
			if err := r.Delete(ctx, &got); err != nil && !apierrors.IsNotFound(err) {
				return fmt.Errorf("deleting NetworkPolicy %s: %w", got.Name, err)
			}
		}
		return client.IgnoreNotFound(err)
	case apierrors.IsNotFound(err):
		return createIgnoreExists(ctx, r.Client, want)
	case err != nil:
		return fmt.Errorf("reading NetworkPolicy %s: %w", want.Name, err)
	}
	if equality.Semantic.DeepEqual(got.Spec, want.Spec) {
		return nil
	}
	got.Spec = want.Spec
	if err := r.Update(ctx, &got); err != nil {
		return fmt.Errorf("updating NetworkPolicy %s: %w", want.Name, err)
	}
	return nil
}

// ensurePDBs keeps one PodDisruptionBudget per shard index in use, sized
// for its pods, and removes those of shards that are gone.
func (r *Reconciler) ensurePDBs(ctx context.Context, rc render.Cluster, pods map[int32]int) error {
	var list policyv1.PodDisruptionBudgetList
	if err := r.List(ctx, &list, watch.OfCluster(rc.Cluster.Namespace, rc.Cluster.Name)...); err != nil {
		return fmt.Errorf("listing PodDisruptionBudgets: %w", err)
	}
	have := map[string]*policyv1.PodDisruptionBudget{}
	for i := range list.Items {
		pdb := &list.Items[i]
		have[pdb.Name] = pdb
		var idx int32
		if _, err := fmt.Sscan(pdb.Labels[valkeyv1.LabelShardIndex], &idx); err == nil {
			if _, used := pods[idx]; !used {
				if err := r.Delete(ctx, pdb); err != nil && !apierrors.IsNotFound(err) {
					return fmt.Errorf("deleting PodDisruptionBudget %s: %w", pdb.Name, err)
				}
			}
		}
	}
	for idx, n := range pods {
		want := rc.PodDisruptionBudget(idx, n)
		got := have[want.Name]
		if got == nil {
			if err := createIgnoreExists(ctx, r.Client, want); err != nil {
				return err
			}
			continue
		}
		if equality.Semantic.DeepEqual(got.Spec.MinAvailable, want.Spec.MinAvailable) && got.Spec.MaxUnavailable == nil {
			continue
		}
		// Budgets written by an earlier version use maxUnavailable, which
		// refuses every eviction of these pods.
		got.Spec.MinAvailable, got.Spec.MaxUnavailable = want.Spec.MinAvailable, nil
		if err := r.Update(ctx, got); err != nil {
			return fmt.Errorf("updating PodDisruptionBudget %s: %w", got.Name, err)
		}
	}
	return nil
}

// shardPods is the size each shard index in use is budgeted for: the
// desired 1 + replicasPerShard, or more while the shard has more members
// (a replacement joining before the node it replaces has left, a surplus
// replica leaving). Every member counts, a leaving or lost one included,
// so the budget never lets two pods of a shard go because a third, which
// may still be syncing or about to be removed, happens to be Ready.
func shardPods(vc *valkeyv1.ValkeyCluster, o *observed) map[int32]int {
	_, replicas := desiredShape(vc)
	out := map[int32]int{}
	for _, n := range o.nodes {
		out[n.Spec.ShardIndex]++
	}
	for idx, n := range out {
		out[idx] = max(n, 1+replicas)
	}
	return out
}
