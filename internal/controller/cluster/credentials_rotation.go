package cluster

import (
	"context"
	"crypto/rand"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	valkeyv1 "github.com/gomomento/valkey-operator/api/v1alpha1"
	"github.com/gomomento/valkey-operator/internal/controller/clusterstatus"
	"github.com/gomomento/valkey-operator/internal/controller/nodeconn"
	"github.com/gomomento/valkey-operator/internal/render"
	"github.com/gomomento/valkey-operator/internal/valkey"
)

// rotationStep is what a rotation of the operator's and the replication
// user's passwords needs next. The auth Secret alone says where a rotation
// stands, so each step survives an operator restart.
type rotationStep int

const (
	rotationIdle rotationStep = iota
	// rotationDraw: a rotation is asked for; draw the next passwords. The
	// ACL file then accepts them beside the current ones.
	rotationDraw
	// rotationSwitch: once every node accepts the next passwords, they
	// become current and the old ones previous, still accepted.
	rotationSwitch
	// rotationFinish: once every node replicates with the current
	// password, the previous ones stop being accepted.
	rotationFinish
)

// nextRotationStep decides from the passwords in the auth Secret, the
// cluster's AnnotationRotateCredentials (requested) and the Secret's
// AnnotationCredentialsRotated (the last request served).
func nextRotationStep(p render.Passwords, requested, rotated string) rotationStep {
	switch {
	case p.NextOperator != "":
		return rotationSwitch
	case p.PreviousOperator != "":
		return rotationFinish
	case requested != "" && requested != rotated:
		return rotationDraw
	}
	return rotationIdle
}

// rotationStepOf decides the next step from the auth Secret s.
func rotationStepOf(s *corev1.Secret, requested string) (rotationStep, render.Passwords, error) {
	p, err := render.PasswordsFromSecret(s)
	if err != nil {
		return rotationIdle, p, fmt.Errorf("secret %s: %w", s.Name, err)
	}
	return nextRotationStep(p, requested, s.Annotations[valkeyv1.AnnotationCredentialsRotated]), p, nil
}

// rotateCredentials advances a rotation by at most one step. It reports
// whether one is under way, so the cluster is looked at again soon.
func (r *Reconciler) rotateCredentials(ctx context.Context, vc *valkeyv1.ValkeyCluster, o *observed, conn *nodeconn.Connector) (bool, error) {
	requested := vc.Annotations[valkeyv1.AnnotationRotateCredentials]
	s, st, p, err := r.readRotation(ctx, client.ObjectKey{Namespace: vc.Namespace, Name: render.OperatorAuthSecretName(vc.Name)}, requested)
	if err != nil {
		return false, err
	}
	switch st {
	case rotationDraw:
		return r.drawNextPasswords(ctx, vc, s, p, requested)
	case rotationSwitch:
		return r.switchToNextPasswords(ctx, vc, o, conn, s, p)
	case rotationFinish:
		return r.finishRotation(ctx, vc, o, conn, s, p)
	}
	return false, nil
}

// readRotation reads the auth Secret and decides the next step from it;
// the Secret is nil when there is nothing to do.
func (r *Reconciler) readRotation(ctx context.Context, key client.ObjectKey, requested string) (*corev1.Secret, rotationStep, render.Passwords, error) {
	// The cache answers the common case, no rotation, without a request to
	// the API server; a step is decided again on a fresh read before it acts.
	var cached corev1.Secret
	switch err := r.Get(ctx, key, &cached); {
	case apierrors.IsNotFound(err):
		// Just created (ensurePasswords read it around the cache): there
		// is nothing to rotate yet.
		return nil, rotationIdle, render.Passwords{}, nil
	case err != nil:
		return nil, rotationIdle, render.Passwords{}, fmt.Errorf("reading Secret %s: %w", key.Name, err)
	}
	if st, _, err := rotationStepOf(&cached, requested); err != nil || st == rotationIdle {
		return nil, rotationIdle, render.Passwords{}, err
	}
	s := &corev1.Secret{}
	if err := r.APIReader.Get(ctx, key, s); err != nil {
		return nil, rotationIdle, render.Passwords{}, fmt.Errorf("reading Secret %s: %w", key.Name, err)
	}
	st, p, err := rotationStepOf(s, requested)
	return s, st, p, err
}

// drawNextPasswords stores new passwords as the next ones, which the ACL
// file then accepts beside the current ones.
func (r *Reconciler) drawNextPasswords(ctx context.Context, vc *valkeyv1.ValkeyCluster, s *corev1.Secret, p render.Passwords, requested string) (bool, error) {
	next, err := render.NewPasswords(rand.Reader)
	if err != nil {
		return false, fmt.Errorf("generating passwords: %w", err)
	}
	p.NextOperator, p.NextReplication = next.Operator, next.Replication
	if err := r.writeAuth(ctx, s, p, map[string]string{valkeyv1.AnnotationCredentialsRotating: requested}); err != nil {
		return false, err
	}
	r.Recorder.Eventf(vc, nil, corev1.EventTypeNormal, valkeyv1.ReasonCredentialsRotationStarted, "RotateCredentials",
		"new passwords for %s and %s drawn; every node is made to accept them before they are used", render.OperatorUser, render.ReplicationUser)
	return true, nil
}

// switchToNextPasswords makes the next passwords current once every node
// accepts them, keeping the old ones accepted as the previous.
func (r *Reconciler) switchToNextPasswords(ctx context.Context, vc *valkeyv1.ValkeyCluster, o *observed, conn *nodeconn.Connector, s *corev1.Secret, p render.Passwords) (bool, error) {
	if why := r.notAccepting(ctx, o, conn, p); why != "" {
		clusterstatus.LogFrom(ctx).V(1).Info("credentials rotation waiting", "for", why)
		return true, nil
	}
	p.PreviousOperator, p.PreviousReplication = p.Operator, p.Replication
	p.Operator, p.Replication = p.NextOperator, p.NextReplication
	p.NextOperator, p.NextReplication = "", ""
	if err := r.writeAuth(ctx, s, p, map[string]string{valkeyv1.AnnotationCredentialsSwitchedAt: time.Now().UTC().Format(time.RFC3339)}); err != nil {
		return false, err
	}
	r.Recorder.Eventf(vc, nil, corev1.EventTypeNormal, valkeyv1.ReasonCredentialsSwitched, "RotateCredentials",
		"every node accepts the new passwords; the operator and new replicas use them, the previous ones are still accepted")
	return true, nil
}

// finishRotation drops the previous passwords once the switch has settled
// and every node replicates with the current one.
func (r *Reconciler) finishRotation(ctx context.Context, vc *valkeyv1.ValkeyCluster, o *observed, conn *nodeconn.Connector, s *corev1.Secret, p render.Passwords) (bool, error) {
	switched, err := time.Parse(time.RFC3339, s.Annotations[valkeyv1.AnnotationCredentialsSwitchedAt])
	if err == nil && time.Since(switched) < r.Options.CredentialsSettle {
		return true, nil
	}
	if why := r.setPrimaryAuth(ctx, o, conn, p.Replication); why != "" {
		clusterstatus.LogFrom(ctx).V(1).Info("credentials rotation waiting", "for", why)
		return true, nil
	}
	served := s.Annotations[valkeyv1.AnnotationCredentialsRotating]
	p.PreviousOperator, p.PreviousReplication = "", ""
	if err := r.writeAuth(ctx, s, p, map[string]string{
		valkeyv1.AnnotationCredentialsRotated:    served,
		valkeyv1.AnnotationCredentialsRotating:   "",
		valkeyv1.AnnotationCredentialsSwitchedAt: "",
	}); err != nil {
		return false, err
	}
	r.Recorder.Eventf(vc, nil, corev1.EventTypeNormal, valkeyv1.ReasonCredentialsRotated, "RotateCredentials",
		"every node replicates with the new passwords; the previous ones are no longer accepted")
	return false, nil
}

// writeAuth stores p in the auth Secret read as s, with annotations set
// (an empty value removes one). The update carries s's resourceVersion:
// a Secret changed meanwhile is read again on the next reconcile.
func (r *Reconciler) writeAuth(ctx context.Context, s *corev1.Secret, p render.Passwords, annotations map[string]string) error {
	s.Data = render.OperatorAuthData(p)
	for k, v := range annotations {
		if v == "" {
			delete(s.Annotations, k)
			continue
		}
		if s.Annotations == nil {
			s.Annotations = map[string]string{}
		}
		s.Annotations[k] = v
	}
	if err := r.Update(ctx, s); err != nil {
		return fmt.Errorf("updating Secret %s: %w", s.Name, err)
	}
	return nil
}

// notAccepting returns why not every running node accepts the next
// passwords yet ("" when all do). A node not running yet will mount the
// ACL file that already names them.
func (r *Reconciler) notAccepting(ctx context.Context, o *observed, conn *nodeconn.Connector, p render.Passwords) string {
	for _, name := range o.names() {
		if err, ok := o.unreachable[name]; ok {
			return fmt.Sprintf("node %s unreachable: %v", name, err)
		}
		pod := o.pods[name]
		if pod == nil || pod.Status.Phase != corev1.PodRunning || pod.Status.PodIP == "" {
			continue
		}
		for _, u := range []struct{ user, password string }{
			{render.OperatorUser, p.NextOperator},
			{render.ReplicationUser, p.NextReplication},
		} {
			t := conn.Target(name, pod.Status.PodIP)
			t.Username, t.Password = u.user, u.password
			n, err := valkey.Dial(ctx, t)
			if err == nil {
				err = n.Ping(ctx)
				n.Close()
			}
			if err != nil {
				return fmt.Sprintf("node %s to accept the new password of %s: %v", name, u.user, err)
			}
		}
	}
	return ""
}

// setPrimaryAuth makes every node replicate with password from now on (a
// replica authenticates when it connects to its primary); it returns why
// it could not ("" when done). Every node must run: one starting now could
// have mounted the previous password.
func (r *Reconciler) setPrimaryAuth(ctx context.Context, o *observed, conn *nodeconn.Connector, password string) string {
	for _, name := range o.names() {
		pod := o.pods[name]
		if pod == nil || pod.Status.Phase != corev1.PodRunning || pod.Status.PodIP == "" {
			return fmt.Sprintf("node %s to run", name)
		}
		if err, ok := o.unreachable[name]; ok {
			return fmt.Sprintf("node %s unreachable: %v", name, err)
		}
		n, err := conn.Dial(ctx, name, pod.Status.PodIP)
		if err == nil {
			err = n.ConfigSet(ctx, "primaryauth", password)
			n.Close()
		}
		if err != nil {
			return fmt.Sprintf("node %s to take the new replication password: %v", name, err)
		}
	}
	return ""
}
