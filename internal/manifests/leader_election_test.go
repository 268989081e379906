package manifests

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/gomomento/valkey-operator/internal/operatorcmd"
)

// The leader election Role config/default installs is all leader election
// needs: a process holding nothing else becomes leader, and announces it
// with an Event on the Lease.
func TestLeaderElectionRoleSuffices(t *testing.T) {
	const ns = "leader-election-role"
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	objs := kustomizeBuild(t, repoPath(t, "config", "default"))
	createForReal(t, namespaceObject(ns))
	for _, kind := range []string{"Role", "RoleBinding"} {
		o := find(t, objs, kind, "valkey-operator-leader-election").DeepCopy()
		o.SetNamespace(ns)
		if kind == "RoleBinding" {
			subjects, _, _ := unstructured.NestedSlice(o.Object, "subjects")
			for _, sub := range subjects {
				sub.(map[string]any)["namespace"] = ns
			}
			if err := unstructured.SetNestedSlice(o.Object, subjects, "subjects"); err != nil {
				t.Fatal(err)
			}
		}
		createForReal(t, o)
	}
	sa := convert[rbacv1.RoleBinding](t, find(t, objs, "RoleBinding", "valkey-operator-leader-election")).Subjects[0].Name
	user, err := env.Env.AddUser(envtest.User{
		Name:   "system:serviceaccount:" + ns + ":" + sa,
		Groups: []string{"system:serviceaccounts", "system:serviceaccounts:" + ns, "system:authenticated"},
	}, nil)
	if err != nil {
		t.Fatal(err)
	}
	mgr, err := ctrl.NewManager(user.Config(), ctrl.Options{
		Scheme:                  env.Scheme,
		Metrics:                 metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress:  "0",
		LeaderElection:          true,
		LeaderElectionID:        operatorcmd.LeaderElectionID,
		LeaderElectionNamespace: ns,
	})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	select {
	case <-mgr.Elected():
	case err := <-done:
		t.Fatalf("the manager stopped before leading: %v", err)
	case <-time.After(time.Minute):
		t.Fatal("not leader after a minute with the leader election Role alone")
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		var events corev1.EventList
		if err := env.Client.List(ctx, &events, client.InNamespace(ns)); err != nil {
			t.Fatal(err)
		}
		for _, e := range events.Items {
			if e.Reason == "LeaderElection" && e.InvolvedObject.Kind == "Lease" {
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("no LeaderElection Event on the Lease in %s: %d events", ns, len(events.Items))
		}
		time.Sleep(200 * time.Millisecond)
	}
}

func namespaceObject(name string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetAPIVersion("v1")
	u.SetKind("Namespace")
	u.SetName(name)
	return u
}
