package e2e

import (
	"bytes"
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	valkeyv1 "github.com/gomomento/valkey-operator/api/v1alpha1"
	"github.com/gomomento/valkey-operator/internal/render"
)

// The operator's own credentials survive accidents. A plain deletion of
// {cluster}-operator-auth is turned into a restore with the same passwords
// (the running nodes know no others). A Secret removed past its finalizer
// is reported, not replaced by new passwords, and once the user puts it
// back the cluster carries on by itself. Every key stays readable.
// Not parallel: the second case stops the operator while it removes the
// Secret, so that nothing restores it in between.
func TestOperatorCredentialsSurviveDeletion(t *testing.T) {
	ctx := context.Background()
	key := newPlainCluster(t, "credentials", "cache", 1, 1)
	c := clusterClient(t, seedOf(key), nil)
	before := writeKeys(t, c, "before", 1000)
	secretKey := client.ObjectKey{Namespace: key.Namespace, Name: render.OperatorAuthSecretName(key.Name)}
	readSecret := func() (*corev1.Secret, error) {
		var s corev1.Secret
		return &s, k8sClient.Get(ctx, secretKey, &s)
	}
	orig, err := readSecret()
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(orig.Finalizers, valkeyv1.FinalizerCredentials) {
		t.Fatalf("Secret %s has finalizers %v, want %s", secretKey.Name, orig.Finalizers, valkeyv1.FinalizerCredentials)
	}
	sameData := func(s *corev1.Secret) error {
		for k, v := range orig.Data {
			if !bytes.Equal(s.Data[k], v) {
				return fmt.Errorf("key %s differs from the original", k)
			}
		}
		return nil
	}

	t.Run("deleted", func(t *testing.T) {
		if err := k8sClient.Delete(ctx, orig.DeepCopy()); err != nil {
			t.Fatal(err)
		}
		assertWarning(t, key, valkeyv1.ReasonCredentialsDeleted, secretKey.Name)
		eventually(t, time.Minute, secretKey.Name+" recreated with the same passwords", func() error {
			s, err := readSecret()
			if err != nil {
				return err
			}
			if s.UID == orig.UID || !s.DeletionTimestamp.IsZero() {
				return fmt.Errorf("still the original Secret")
			}
			return sameData(s)
		})
		assertEvent(t, key, valkeyv1.ReasonCredentialsRestored, secretKey.Name)
		var restore corev1.Secret
		if err := k8sClient.Get(ctx, client.ObjectKey{Namespace: key.Namespace, Name: render.OperatorAuthRestoreSecretName(key.Name)}, &restore); !apierrors.IsNotFound(err) {
			t.Errorf("restore copy still there after the restore: %v", err)
		}
		// The operator still reaches every node: a replica is added.
		updateCluster(t, key, func(vc *valkeyv1.ValkeyCluster) { vc.Spec.ReplicasPerShard = 2 })
		waitConverged(t, key, 1, 2, 3*time.Minute)
		checkAll(t, c, before)
	})

	t.Run("gone past its finalizer", func(t *testing.T) {
		stopOperator()
		restarted := false
		t.Cleanup(func() {
			// Every later test needs an operator, whatever failed here.
			if !restarted {
				restartOperator(t)
			}
		})
		s, err := readSecret()
		if err != nil {
			t.Fatal(err)
		}
		backup := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: s.Namespace, Name: s.Name, Labels: s.Labels}, Type: s.Type, Data: s.Data}
		s.Finalizers = nil
		if err := k8sClient.Update(ctx, s); err != nil {
			t.Fatal(err)
		}
		if err := k8sClient.Delete(ctx, s); err != nil {
			t.Fatal(err)
		}
		restartOperator(t)
		restarted = true

		eventually(t, time.Minute, "CredentialsLost reported", func() error {
			cond := condition(getCluster(t, key), valkeyv1.CondReady)
			if cond == nil || cond.Reason != valkeyv1.ReasonCredentialsLost {
				return fmt.Errorf("Ready = %+v", cond)
			}
			return nil
		})
		assertWarning(t, key, valkeyv1.ReasonCredentialsLost, secretKey.Name)
		if _, err := readSecret(); !apierrors.IsNotFound(err) {
			t.Fatalf("a Secret %s exists again before the user restored it: %v", secretKey.Name, err)
		}
		checkAll(t, c, before)

		if err := k8sClient.Create(ctx, backup); err != nil {
			t.Fatal(err)
		}
		updateCluster(t, key, func(vc *valkeyv1.ValkeyCluster) { vc.Spec.ReplicasPerShard = 1 })
		waitConverged(t, key, 1, 1, 3*time.Minute)
		if got, err := readSecret(); err != nil || sameData(got) != nil || !slices.Contains(got.Finalizers, valkeyv1.FinalizerCredentials) {
			t.Errorf("restored Secret: %v; finalizer back: %v", err, got != nil && slices.Contains(got.Finalizers, valkeyv1.FinalizerCredentials))
		}
		checkAll(t, c, before)
	})
}
