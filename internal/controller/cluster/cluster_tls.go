package cluster

import (
	"context"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	valkeyv1 "github.com/gomomento/valkey-operator/api/v1alpha1"
	"github.com/gomomento/valkey-operator/internal/controller/clusterstatus"
	"github.com/gomomento/valkey-operator/internal/controller/nodeconn"
	"github.com/gomomento/valkey-operator/internal/render"
	"github.com/gomomento/valkey-operator/internal/tlssecret"
)

// reconcileTLS validates the user's Secret and refreshes the nodes' copy
// of it. An invalid Secret, or a valid one whose ca.crt would split the
// nodes between two CAs, makes the cluster Invalid and leaves only healing
// to do, which reaches the nodes with the CA they run with.
func (r *Reconciler) reconcileTLS(ctx context.Context, s *clusterScope) (phaseResult, error) {
	vc := s.vc
	if vc.Spec.TLS == nil {
		return nextPhase, nil
	}
	var err error
	// The user's Secret is not in the cache, which holds only the
	// operator's own Secrets.
	if s.tls, err = checkTLS(ctx, r.APIReader, vc, r.Options.ClusterDomain); err != nil {
		return phaseResult{}, err
	}
	if s.tls.Failure == nil {
		if err := r.holdCARotation(ctx, s.rc, &s.tls); err != nil {
			return phaseResult{}, err
		}
	}
	if f := s.tls.Failure; f != nil {
		// Announced once the status is built (noteInvalid).
		s.found.tls = &tlsFinding{failure: f}
		if s.nodeCA, err = r.mountedCA(ctx, s.rc); err != nil || s.nodeCA == nil || !formed(vc) {
			// Nothing runs yet that could need healing, or no copy of the
			// material the nodes run with to reach them.
			return requeueAfter(r.Options.SteadyResync), err
		}
		return nextPhase, nil
	}
	if vc.Status.State == valkeyv1.StateInvalid {
		// Back to where it was (clusterStatus resumes it).
		r.Recorder.Eventf(vc, nil, corev1.EventTypeNormal, valkeyv1.ReasonValid, "ValidateTLS", "TLS Secret %q is valid again", vc.Spec.TLS.SecretRef)
	}
	s.found.tls = &tlsFinding{report: r.announceTLS(vc, s.tls), info: s.tls.Info}
	if err := r.ensureNodeTLSSecret(ctx, s.rc, s.tls.Secret); err != nil {
		return phaseResult{}, err
	}
	return nextPhase, nil
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

// nodeTLSCopy reads the operator's copy of the TLS material, the one every
// node mounts; nil when there is none yet.
func (r *Reconciler) nodeTLSCopy(ctx context.Context, rc render.Cluster) (*corev1.Secret, error) {
	var s corev1.Secret
	err := r.Get(ctx, client.ObjectKey{Namespace: rc.Cluster.Namespace, Name: render.NodeTLSSecretName(rc.Cluster.Name)}, &s)
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading node TLS Secret: %w", err)
	}
	return &s, nil
}

// verifiedLeaves reads the fingerprints the TLS reloader recorded on the
// node TLS copy.
func (r *Reconciler) verifiedLeaves(ctx context.Context, rc render.Cluster) ([]string, error) {
	s, err := r.nodeTLSCopy(ctx, rc)
	if s == nil {
		return nil, err
	}
	return nodeconn.ParsePins(s.Annotations[valkeyv1.AnnotationVerifiedLeaves]), nil
}

// announceTLS decides what a valid Secret's warnings make of the TLS
// conditions, and sends an Event for each warning they did not carry yet.
func (r *Reconciler) announceTLS(vc *valkeyv1.ValkeyCluster, tls tlsCheck) tlsReport {
	rep := reportTLS(vc, tls.Info, time.Now())
	for _, w := range rep.announce {
		r.Recorder.Eventf(vc, nil, corev1.EventTypeWarning, w.Reason, "ValidateTLS", "%s", w.Message)
	}
	return rep
}

// reportTLS decides the TLS conditions of a valid Secret at now, and which
// warnings are news against the conditions vc already has. An expiring leaf
// is announced by its condition alone; an expired one also by an Event.
func reportTLS(vc *valkeyv1.ValkeyCluster, info *tlssecret.Info, now time.Time) tlsReport {
	rep := tlsReport{valid: fmt.Sprintf("TLS Secret %q is valid", vc.Spec.TLS.SecretRef)}
	if info == nil {
		return rep
	}
	// TLSValid lists every usage warning, so a warning already in it was
	// announced when it first appeared, whichever others came with it.
	var carried string
	if c := meta.FindStatusCondition(vc.Status.Conditions, valkeyv1.CondTLSValid); c != nil && c.Status == metav1.ConditionTrue {
		carried = c.Message
	}
	for _, w := range tlssecret.Warnings(info, now) {
		switch w.Reason {
		case tlssecret.ReasonCertificateExpiringSoon, tlssecret.ReasonCertificateExpired:
			rep.expiring = true
			rep.expiry = w.Message
			if w.Reason == tlssecret.ReasonCertificateExpired && !clusterstatus.IsConditionMessage(vc, valkeyv1.CondCertificateExpiringSoon, w.Message) {
				rep.announce = append(rep.announce, w)
			}
		default:
			rep.valid += "; " + w.Message
			if !strings.Contains(carried, w.Message) {
				rep.announce = append(rep.announce, w)
			}
		}
	}
	if !rep.expiring {
		rep.expiry = "certificate valid until " + info.Leaf.NotAfter.UTC().Format(time.RFC3339)
	}
	return rep
}

// mountedCA is the CA of the operator's copy of the TLS material, the one
// every node has mounted; nil when there is none yet.
func (r *Reconciler) mountedCA(ctx context.Context, rc render.Cluster) ([]byte, error) {
	s, err := r.nodeTLSCopy(ctx, rc)
	if s == nil {
		return nil, err
	}
	return s.Data[tlssecret.KeyCA], nil
}

// holdCARotation turns a valid Secret into a failure when its ca.crt does
// not trust what the nodes serve or may still serve: copied, it would
// reach the nodes one by one, and those that reloaded would reject those
// that have not. Held, the copy keeps the material every node shares,
// which is also what replacements mount, until ca.crt bundles both CAs.
func (r *Reconciler) holdCARotation(ctx context.Context, rc render.Cluster, tls *tlsCheck) error {
	mounted, err := r.nodeTLSCopy(ctx, rc)
	if err != nil || mounted == nil {
		return err
	}
	leaves := tlssecret.CABundleMissing(
		&tlssecret.Material{Cert: mounted.Data[tlssecret.KeyCert], CA: mounted.Data[tlssecret.KeyCA]},
		tlssecret.Material{Cert: tls.Secret.Data[tlssecret.KeyCert], CA: tls.Secret.Data[tlssecret.KeyCA]},
		nodeconn.ParsePins(mounted.Annotations[valkeyv1.AnnotationVerifiedLeaves]))
	if len(leaves) == 0 {
		return nil
	}
	tls.Failure = &tlssecret.Failure{
		Reason:  valkeyv1.ReasonCABundleRequired,
		Message: tlssecret.CABundleRequiredMessage(tls.Secret.Name, leaves),
	}
	tls.Secret = nil
	return nil
}
