package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	valkeyv1 "github.com/gomomento/valkey-operator/api/v1alpha1"
)

// A ValkeyImage, ValkeyConfig or ValkeyRole that a config or cluster uses
// is not deleted while it is: each deletion waits with DeletionBlocked and
// a Warning Event naming the users, the cluster keeps resolving and
// serving, and each deletion completes by itself once its last user goes.
func TestDeletionWaitsWhileInUse(t *testing.T) {
	t.Parallel()
	const ns = "protect"
	role := "protect-app"
	createRole(t, role, valkeyv1.ValkeyRoleSpec{Categories: []valkeyv1.CategoryRule{{Name: "read", Access: valkeyv1.RuleAllow}}})
	f := newACLFixture(t, ns, aclVersion,
		[]valkeyv1.AclBinding{binding("app", []valkeyv1.PasswordHash{passwordHash("app-pw")}, role, keys("app:*", valkeyv1.KeyAccessRead))})
	base := f.cluster().Spec.ConfigRef
	image := imageNameOf(base)
	child := &valkeyv1.ValkeyConfig{ObjectMeta: metav1.ObjectMeta{Name: "protect-child"}, Spec: valkeyv1.ValkeyConfigSpec{BaseRef: base}}
	if err := k8sClient.Create(context.Background(), child); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = k8sClient.Delete(context.Background(), child) })

	img, cfg, rl := &valkeyv1.ValkeyImage{}, &valkeyv1.ValkeyConfig{}, &valkeyv1.ValkeyRole{}
	del := func(obj client.Object, name string) {
		t.Helper()
		waitMenuFinalizer(t, obj, name)
		if err := k8sClient.Delete(context.Background(), obj); err != nil {
			t.Fatalf("deleting %s: %v", name, err)
		}
	}
	cluster := ns + "/" + f.name
	del(img, image)
	waitDeletionBlocked(t, img, image, fmt.Sprintf("ValkeyImage %s is in use by ValkeyConfigs %s, %s and ValkeyClusters %s;", image, base, child.Name, cluster))
	// A config being deleted uses nothing any more; what uses it still does.
	del(cfg, base)
	waitDeletionBlocked(t, cfg, base, fmt.Sprintf("ValkeyConfig %s is in use by ValkeyConfigs %s and ValkeyClusters %s;", base, child.Name, cluster))
	waitDeletionBlocked(t, img, image, fmt.Sprintf("ValkeyImage %s is in use by ValkeyConfigs %s and ValkeyClusters %s;", image, child.Name, cluster))
	del(rl, role)
	waitDeletionBlocked(t, rl, role, fmt.Sprintf("ValkeyRole %s is in use by ValkeyClusters %s;", role, cluster))
	assertMenuEvent(t, "ValkeyImage", image, "ValkeyClusters "+cluster)
	assertMenuEvent(t, "ValkeyConfig", base, "ValkeyClusters "+cluster)
	assertMenuEvent(t, "ValkeyRole", role, "ValkeyClusters "+cluster)

	// Held, not gone: the cluster still resolves every reference, and the
	// role's user still logs in.
	f.waitCondition(valkeyv1.CondReferencesResolved, metav1.ConditionTrue, valkeyv1.ReasonResolved, "", 30*time.Second)
	waitActive(t, f.key, 1, 1, time.Minute)
	if err := f.authenticates("app", "app-pw", true); err != nil {
		t.Fatalf("the deleted role's user while its deletion waits: %v", err)
	}

	// The cluster was the role's only user, and one of the others'.
	deleteCluster(t, f.key)
	waitMenuGone(t, rl, role)
	waitDeletionBlocked(t, img, image, fmt.Sprintf("ValkeyImage %s is in use by ValkeyConfigs %s;", image, child.Name))
	waitDeletionBlocked(t, cfg, base, fmt.Sprintf("ValkeyConfig %s is in use by ValkeyConfigs %s;", base, child.Name))

	// The child was the last user of both: the chain unwinds by itself.
	if err := k8sClient.Delete(context.Background(), child); err != nil {
		t.Fatal(err)
	}
	waitMenuGone(t, &valkeyv1.ValkeyConfig{}, child.Name)
	waitMenuGone(t, cfg, base)
	waitMenuGone(t, img, image)
}

// waitMenuFinalizer waits until the operator has put its in-use finalizer
// on the cluster-scoped obj called name.
func waitMenuFinalizer(t testing.TB, obj client.Object, name string) {
	t.Helper()
	eventually(t, 30*time.Second, fmt.Sprintf("finalizer %s on %s", valkeyv1.FinalizerInUse, name), func() error {
		if err := k8sClient.Get(context.Background(), client.ObjectKey{Name: name}, obj); err != nil {
			return err
		}
		if !controllerutil.ContainsFinalizer(obj, valkeyv1.FinalizerInUse) {
			return fmt.Errorf("finalizers %v", obj.GetFinalizers())
		}
		return nil
	})
}

// waitDeletionBlocked waits until the deleted obj called name is still
// there with DeletionBlocked True (InUse) and a message starting with want.
func waitDeletionBlocked(t testing.TB, obj client.Object, name, want string) {
	t.Helper()
	eventually(t, 30*time.Second, fmt.Sprintf("%s held: %s", name, want), func() error {
		if err := k8sClient.Get(context.Background(), client.ObjectKey{Name: name}, obj); err != nil {
			return err
		}
		if obj.GetDeletionTimestamp().IsZero() {
			return fmt.Errorf("not deleted")
		}
		var conds []metav1.Condition
		switch o := obj.(type) {
		case *valkeyv1.ValkeyImage:
			conds = o.Status.Conditions
		case *valkeyv1.ValkeyConfig:
			conds = o.Status.Conditions
		case *valkeyv1.ValkeyRole:
			conds = o.Status.Conditions
		}
		c := meta.FindStatusCondition(conds, valkeyv1.CondDeletionBlocked)
		if c == nil {
			return fmt.Errorf("no %s condition", valkeyv1.CondDeletionBlocked)
		}
		if c.Status != metav1.ConditionTrue || c.Reason != valkeyv1.ReasonInUse || !strings.HasPrefix(c.Message, want) {
			return fmt.Errorf("%s=%s (%s: %s)", c.Type, c.Status, c.Reason, c.Message)
		}
		return nil
	})
}

// waitMenuGone waits until the cluster-scoped obj called name is gone.
func waitMenuGone(t testing.TB, obj client.Object, name string) {
	t.Helper()
	eventually(t, time.Minute, name+" gone", func() error {
		err := k8sClient.Get(context.Background(), client.ObjectKey{Name: name}, obj)
		if apierrors.IsNotFound(err) {
			return nil
		}
		if err != nil {
			return err
		}
		return fmt.Errorf("still there, finalizers %v", obj.GetFinalizers())
	})
}

// assertMenuEvent waits for the Warning InUse Event on the cluster-scoped
// object kind/name whose note contains note. Such an object's Events land
// in the default namespace.
func assertMenuEvent(t testing.TB, kind, name, note string) {
	t.Helper()
	eventually(t, 30*time.Second, fmt.Sprintf("Event %s on %s %s", valkeyv1.ReasonInUse, kind, name), func() error {
		var list eventsv1.EventList
		if err := k8sClient.List(context.Background(), &list, client.InNamespace(metav1.NamespaceDefault)); err != nil {
			return err
		}
		for _, e := range list.Items {
			if e.Regarding.Kind == kind && e.Regarding.Name == name && e.Reason == valkeyv1.ReasonInUse &&
				e.Type == "Warning" && strings.Contains(e.Note, note) {
				return nil
			}
		}
		return fmt.Errorf("none yet among %d", len(list.Items))
	})
}
