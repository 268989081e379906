package controller

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	valkeyv1 "github.com/gomomento/valkey-operator/api/v1alpha1"
	"github.com/gomomento/valkey-operator/internal/render"
	"github.com/gomomento/valkey-operator/internal/tlssecret"
)

// tlsCheck is the outcome of validating a cluster's TLS Secret.
type tlsCheck struct {
	// Failure is the first failed check, nil when the Secret is valid.
	Failure *tlssecret.Failure
	// Secret is the user's Secret when it is valid.
	Secret *corev1.Secret
	// Info describes the certificate when it could be parsed.
	Info *tlssecret.Info
}

// checkTLS reads and validates the Secret named by spec.tls.secretRef. Only
// an API error other than NotFound is returned as an error: an invalid
// Secret is an outcome, not a failure of the reconcile.
func checkTLS(ctx context.Context, c client.Reader, vc *valkeyv1.ValkeyCluster, domain string) (tlsCheck, error) {
	name := vc.Spec.TLS.SecretRef
	var secret corev1.Secret
	var found *corev1.Secret
	switch err := c.Get(ctx, client.ObjectKey{Namespace: vc.Namespace, Name: name}, &secret); {
	case err == nil:
		found = &secret
	case apierrors.IsNotFound(err):
	default:
		return tlsCheck{}, fmt.Errorf("reading TLS Secret %q: %w", name, err)
	}
	out := tlsCheck{Failure: tlssecret.Validate(tlssecret.Input{
		ClusterName:   vc.Name,
		Namespace:     vc.Namespace,
		ClusterDomain: domain,
		SecretName:    name,
		Secret:        found,
	})}
	if found != nil {
		if info, err := tlssecret.Inspect(name, found); err == nil {
			out.Info = info
		}
	}
	if out.Failure == nil {
		out.Secret = found
	}
	return out, nil
}

// verifiedLeaves reads the fingerprints the TLS reloader recorded on the
// node TLS copy.
func (r *ClusterReconciler) verifiedLeaves(ctx context.Context, rc render.Cluster) ([]string, error) {
	var s corev1.Secret
	err := r.Get(ctx, client.ObjectKey{Namespace: rc.Cluster.Namespace, Name: render.NodeTLSSecretName(rc.Cluster.Name)}, &s)
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading node TLS Secret: %w", err)
	}
	return parsePins(s.Annotations[annotationVerifiedLeaves]), nil
}
