package cluster

import (
	"context"
	"crypto/rand"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	valkeyv1 "github.com/gomomento/valkey-operator/api/v1alpha1"
	"github.com/gomomento/valkey-operator/internal/controller/finalizer"
	"github.com/gomomento/valkey-operator/internal/controller/watch"
	"github.com/gomomento/valkey-operator/internal/render"
)

// errCredentialsLost: the passwords the nodes run with are gone and the
// operator will not mint others over them (see ensurePasswords).
type errCredentialsLost struct{ message string }

func (e *errCredentialsLost) Error() string { return e.message }

// ensurePasswords returns the system users' passwords, generating them
// once, for a cluster with no node yet. The Secret is read from the cache;
// only the API server's own answer, read around the cache, says it is
// missing, so a lost or lagging cache cannot make the operator mint new
// passwords. It carries a finalizer, so a deletion while the cluster runs
// is turned into a restore (see keepCredentials). A Secret gone for good
// while nodes exist is reported, never replaced: new passwords would lock
// the operator out of every running node and break replication.
func (r *Reconciler) ensurePasswords(ctx context.Context, rc render.Cluster) (render.Passwords, error) {
	name := render.OperatorAuthSecretName(rc.Cluster.Name)
	key := client.ObjectKey{Namespace: rc.Cluster.Namespace, Name: name}
	var s corev1.Secret
	err := r.Get(ctx, key, &s)
	if apierrors.IsNotFound(err) {
		err = r.APIReader.Get(ctx, key, &s)
	}
	switch {
	case err == nil && !s.DeletionTimestamp.IsZero():
		return render.Passwords{}, r.keepCredentials(ctx, rc, &s)
	case err == nil:
		p, err := render.PasswordsFromSecret(&s)
		if err != nil {
			return render.Passwords{}, fmt.Errorf("secret %s: %w", name, err)
		}
		if p.Exporter == "" {
			return r.addExporterPassword(ctx, &s, p)
		}
		// Secrets of clusters created before the finalizer existed get it.
		if _, err := finalizer.Set(ctx, r.Client, &s, valkeyv1.FinalizerCredentials, true); err != nil {
			return render.Passwords{}, fmt.Errorf("adding the credentials finalizer to Secret %s: %w", name, err)
		}
		return p, nil
	case !apierrors.IsNotFound(err):
		return render.Passwords{}, fmt.Errorf("reading Secret %s: %w", name, err)
	}

	if p, ok, err := r.restoreCredentials(ctx, rc); ok || err != nil {
		return p, err
	}
	var nodes valkeyv1.ValkeyNodeList
	if err := r.List(ctx, &nodes, watch.OfCluster(rc.Cluster.Namespace, rc.Cluster.Name)...); err != nil {
		return render.Passwords{}, fmt.Errorf("listing nodes: %w", err)
	}
	if len(nodes.Items) > 0 {
		return render.Passwords{}, &errCredentialsLost{fmt.Sprintf(
			"Secret %s, which holds the passwords the cluster's %d node(s) run with, is gone (removed past its finalizer); "+
				"the operator cannot authenticate to the nodes and will not replace the passwords under them. "+
				"Recreate the Secret from a backup, or delete the cluster to rebuild it empty", name, len(nodes.Items))}
	}
	p, err := render.NewPasswords(rand.Reader)
	if err != nil {
		return render.Passwords{}, fmt.Errorf("generating passwords: %w", err)
	}
	if err := r.Create(ctx, rc.OperatorAuthSecret(p)); err != nil {
		if apierrors.IsAlreadyExists(err) {
			return render.Passwords{}, fmt.Errorf("secret %s appeared while creating it; retrying", name)
		}
		return render.Passwords{}, fmt.Errorf("creating Secret %s: %w", name, err)
	}
	return p, nil
}

// keepCredentials handles a deletion of the operator-auth Secret while the
// cluster runs: the passwords go to a restore Secret first, then the
// finalizer is released so the deletion completes, and the next reconcile
// recreates the Secret from the copy. Each step survives an operator
// restart: the copy exists before the original can disappear.
func (r *Reconciler) keepCredentials(ctx context.Context, rc render.Cluster, s *corev1.Secret) error {
	p, err := render.PasswordsFromSecret(s)
	if err != nil {
		return fmt.Errorf("secret %s, being deleted: %w", s.Name, err)
	}
	if err := createIgnoreExists(ctx, r.Client, rc.OperatorAuthRestoreSecret(p)); err != nil {
		return err
	}
	released, err := finalizer.Set(ctx, r.Client, s, valkeyv1.FinalizerCredentials, false)
	if err != nil {
		return fmt.Errorf("releasing the deleted Secret %s: %w", s.Name, err)
	}
	if released {
		r.Recorder.Eventf(rc.Cluster, nil, corev1.EventTypeWarning, valkeyv1.ReasonCredentialsDeleted, "KeepCredentials",
			"Secret %s was deleted while the cluster runs; its passwords are kept in %s and it is recreated with them",
			s.Name, render.OperatorAuthRestoreSecretName(rc.Cluster.Name))
	}
	return fmt.Errorf("secret %s is being deleted; recreating it once it is gone", s.Name)
}

// restoreCredentials recreates the operator-auth Secret from its restore
// copy, if there is one, and removes the copy.
func (r *Reconciler) restoreCredentials(ctx context.Context, rc render.Cluster) (render.Passwords, bool, error) {
	var saved corev1.Secret
	key := client.ObjectKey{Namespace: rc.Cluster.Namespace, Name: render.OperatorAuthRestoreSecretName(rc.Cluster.Name)}
	switch err := r.APIReader.Get(ctx, key, &saved); {
	case apierrors.IsNotFound(err):
		return render.Passwords{}, false, nil
	case err != nil:
		return render.Passwords{}, false, fmt.Errorf("reading Secret %s: %w", key.Name, err)
	}
	p, err := render.PasswordsFromSecret(&saved)
	if err != nil {
		return render.Passwords{}, false, fmt.Errorf("secret %s: %w", key.Name, err)
	}
	if err := createIgnoreExists(ctx, r.Client, rc.OperatorAuthSecret(p)); err != nil {
		return render.Passwords{}, false, err
	}
	if err := r.Delete(ctx, &saved); err != nil && !apierrors.IsNotFound(err) {
		return render.Passwords{}, false, fmt.Errorf("deleting Secret %s: %w", key.Name, err)
	}
	r.Recorder.Eventf(rc.Cluster, nil, corev1.EventTypeNormal, valkeyv1.ReasonCredentialsRestored, "RestoreCredentials",
		"Secret %s recreated with the passwords the nodes run with", render.OperatorAuthSecretName(rc.Cluster.Name))
	return p, true, nil
}

// releaseCredentials lets the operator-auth Secret go with its cluster.
func (r *Reconciler) releaseCredentials(ctx context.Context, vc *valkeyv1.ValkeyCluster) error {
	var s corev1.Secret
	key := client.ObjectKey{Namespace: vc.Namespace, Name: render.OperatorAuthSecretName(vc.Name)}
	switch err := r.APIReader.Get(ctx, key, &s); {
	case apierrors.IsNotFound(err):
		return nil
	case err != nil:
		return fmt.Errorf("reading Secret %s: %w", key.Name, err)
	}
	if _, err := finalizer.Set(ctx, r.Client, &s, valkeyv1.FinalizerCredentials, false); err != nil {
		return fmt.Errorf("releasing Secret %s: %w", key.Name, err)
	}
	return nil
}

// addExporterPassword completes the Secret of a cluster created before the
// exporter's user existed. The update carries the read's resourceVersion,
// so two writers cannot both mint one.
func (r *Reconciler) addExporterPassword(ctx context.Context, s *corev1.Secret, p render.Passwords) (render.Passwords, error) {
	var err error
	if p.Exporter, err = render.NewPassword(rand.Reader); err != nil {
		return render.Passwords{}, fmt.Errorf("generating the exporter password: %w", err)
	}
	s.Data[render.KeyExporterPassword] = []byte(p.Exporter)
	if err := r.Update(ctx, s); err != nil {
		return render.Passwords{}, fmt.Errorf("adding %s to Secret %s: %w", render.KeyExporterPassword, s.Name, err)
	}
	return p, nil
}

func createIgnoreExists(ctx context.Context, c client.Client, obj client.Object) error {
	if err := c.Create(ctx, obj); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("creating %T %s: %w", obj, obj.GetName(), err)
	}
	return nil
}
