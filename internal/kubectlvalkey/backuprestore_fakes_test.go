package kubectlvalkey

import (
	"context"
	"reflect"
	"sync"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	valkeyv1 "github.com/gomomento/valkey-operator/api/v1alpha1"
)

// operatorStep changes an object's status as the operator would between
// two reads of the plugin.
type operatorStep func(client.Object)

// fakeOperator is a client whose object key moves through steps, one
// step each time the plugin reads it, written through the status
// subresource as the operator writes it.
func fakeOperator(t *testing.T, key client.ObjectKey, steps []operatorStep, objs ...client.Object) client.Client {
	t.Helper()
	scheme, err := newScheme()
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	return fake.NewClientBuilder().WithScheme(scheme).WithObjects(objs...).
		WithStatusSubresource(&valkeyv1.ValkeyBackup{}, &valkeyv1.ValkeyCluster{}).
		WithInterceptorFuncs(interceptor.Funcs{
			Get: func(ctx context.Context, c client.WithWatch, k client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
				mu.Lock()
				defer mu.Unlock()
				if k == key && len(steps) > 0 {
					cur := reflect.New(reflect.TypeOf(obj).Elem()).Interface().(client.Object)
					switch err := c.Get(ctx, k, cur); {
					case err == nil:
						steps[0](cur)
						steps = steps[1:]
						if err := c.Status().Update(ctx, cur); err != nil {
							t.Errorf("writing the status of %s: %v", k, err)
						}
					case !apierrors.IsNotFound(err):
						return err
					}
				}
				return c.Get(ctx, k, obj, opts...)
			},
		}).Build()
}

func backupPhase(phase valkeyv1.BackupPhase, message string) operatorStep {
	return func(o client.Object) {
		b := o.(*valkeyv1.ValkeyBackup)
		b.Status.Phase, b.Status.Message = phase, message
	}
}

func restorePhase(r valkeyv1.RestoreStatus) operatorStep {
	return func(o client.Object) {
		o.(*valkeyv1.ValkeyCluster).Status.Restore = &r
	}
}

// runAgainst runs a backup or restore command line against c, in testNS.
func runAgainst(c client.Client, args []string, env Env) error {
	ctx := context.Background()
	switch args[0] {
	case "backup":
		req, _, err := parseBackup(args[1:], env)
		if err != nil {
			return err
		}
		return backup(ctx, c, testNS, req, env)
	case "restore":
		req, _, err := parseRestore(args[1:], env)
		if err != nil {
			return err
		}
		return restore(ctx, c, testNS, req, env)
	}
	panic("runAgainst: " + args[0])
}
