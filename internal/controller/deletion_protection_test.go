package controller_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	valkeyv1 "github.com/gomomento/valkey-operator/api/v1alpha1"
)

// A menu object a config uses waits, deleted, with DeletionBlocked naming
// its users; the message follows a user's deletion, and the chain unwinds
// by itself once the last user goes. An unused one goes at once.
func TestMenuDeletionWaitsForItsUsers(t *testing.T) {
	ctx := context.Background()
	img := &valkeyv1.ValkeyImage{ObjectMeta: metav1.ObjectMeta{Name: "valkey-protect"},
		Spec: valkeyv1.ValkeyImageSpec{Repository: "valkey/valkey", Tag: "8.0.1", Version: "8.0.1"}}
	base := &valkeyv1.ValkeyConfig{ObjectMeta: metav1.ObjectMeta{Name: "base-protect"}, Spec: valkeyv1.ValkeyConfigSpec{ImageRef: img.Name}}
	child := &valkeyv1.ValkeyConfig{ObjectMeta: metav1.ObjectMeta{Name: "child-protect"}, Spec: valkeyv1.ValkeyConfigSpec{BaseRef: base.Name}}
	role := &valkeyv1.ValkeyRole{ObjectMeta: metav1.ObjectMeta{Name: "unused-protect"},
		Spec: valkeyv1.ValkeyRoleSpec{Categories: []valkeyv1.CategoryRule{{Name: "read", Access: valkeyv1.RuleAllow}}}}
	for _, o := range []client.Object{img, base, child, role} {
		if err := k8sClient.Create(ctx, o); err != nil {
			t.Fatalf("creating %s: %v", o.GetName(), err)
		}
	}
	deleteHeld(t, role)
	menuGone(t, &valkeyv1.ValkeyRole{}, role.Name)
	deleteHeld(t, img)
	blocked(t, img, func() []metav1.Condition { return img.Status.Conditions },
		fmt.Sprintf("ValkeyImage %s is in use by ValkeyConfigs %s, %s;", img.Name, base.Name, child.Name))
	// A config being deleted uses nothing any more; what uses it still does.
	deleteHeld(t, base)
	blocked(t, base, func() []metav1.Condition { return base.Status.Conditions },
		fmt.Sprintf("ValkeyConfig %s is in use by ValkeyConfigs %s;", base.Name, child.Name))
	blocked(t, img, func() []metav1.Condition { return img.Status.Conditions },
		fmt.Sprintf("ValkeyImage %s is in use by ValkeyConfigs %s;", img.Name, child.Name))
	// child was the last user of both: the chain unwinds by itself.
	deleteHeld(t, child)
	menuGone(t, &valkeyv1.ValkeyConfig{}, child.Name)
	menuGone(t, &valkeyv1.ValkeyConfig{}, base.Name)
	menuGone(t, &valkeyv1.ValkeyImage{}, img.Name)
}

// deleteHeld waits for the in-use finalizer on the cluster-scoped obj, then
// deletes it.
func deleteHeld(t *testing.T, obj client.Object) {
	t.Helper()
	eventually(t, 30*time.Second, "finalizer on "+obj.GetName(), func() error {
		if err := k8sClient.Get(context.Background(), client.ObjectKeyFromObject(obj), obj); err != nil {
			return err
		}
		if !controllerutil.ContainsFinalizer(obj, valkeyv1.FinalizerInUse) {
			return fmt.Errorf("finalizers %v", obj.GetFinalizers())
		}
		return nil
	})
	if err := k8sClient.Delete(context.Background(), obj); err != nil {
		t.Fatalf("deleting %s: %v", obj.GetName(), err)
	}
}

// blocked waits until the deleted obj is still there with DeletionBlocked
// True (InUse) and a message starting with want; conds reads obj's
// conditions after each Get.
func blocked(t *testing.T, obj client.Object, conds func() []metav1.Condition, want string) {
	t.Helper()
	eventually(t, 30*time.Second, obj.GetName()+" held: "+want, func() error {
		if err := k8sClient.Get(context.Background(), client.ObjectKeyFromObject(obj), obj); err != nil {
			return err
		}
		c := meta.FindStatusCondition(conds(), valkeyv1.CondDeletionBlocked)
		switch {
		case obj.GetDeletionTimestamp().IsZero():
			return fmt.Errorf("not deleted")
		case c == nil || c.Status != metav1.ConditionTrue || c.Reason != valkeyv1.ReasonInUse || !strings.HasPrefix(c.Message, want):
			return fmt.Errorf("%s is %+v", valkeyv1.CondDeletionBlocked, c)
		}
		return nil
	})
}

// menuGone waits until the cluster-scoped obj called name is gone.
func menuGone(t *testing.T, obj client.Object, name string) {
	t.Helper()
	eventually(t, 30*time.Second, name+" gone", func() error {
		if err := k8sClient.Get(context.Background(), client.ObjectKey{Name: name}, obj); !apierrors.IsNotFound(err) {
			return fmt.Errorf("still there (finalizers %v, get: %v)", obj.GetFinalizers(), err)
		}
		return nil
	})
}
