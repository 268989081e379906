package e2e

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	valkeyv1 "github.com/gomomento/valkey-operator/api/v1alpha1"
)

// splitOperator is one namespace-scoped operator of a fleet split in two.
type splitOperator struct {
	name       string
	manager    string   // its --field-manager
	namespaces []string // its --watch-namespaces
	proc       *operatorProcess
}

// A fleet split across two namespace-scoped operators on one control
// plane, as docs/install.md describes: each watches its own namespaces,
// keeps its own Lease and metering records, and writes under its own
// field manager. Every cluster of both halves becomes Active, each
// operator reconciles, and no namespaced object in one operator's
// namespaces carries a write of the other (managedFields): were either to
// act outside its namespaces, its manager would show there.
// Not parallel: it stops the operator every other test relies on, which
// would otherwise reconcile these namespaces too.
func TestNamespacedOperatorsSplitAFleet(t *testing.T) {
	const perNamespace = 10 // four namespaces, 40 clusters of 1x0
	argv, kubeconfig := operatorProcessesInstead(t, shippedOperator)
	ops := []*splitOperator{
		{name: "a", manager: "valkey-operator-a", namespaces: []string{"split-a1", "split-a2"}},
		{name: "b", manager: "valkey-operator-b", namespaces: []string{"split-b1", "split-b2"}},
	}
	for _, op := range ops {
		own := "split-operator-" + op.name
		createNamespace(t, own)
		for _, ns := range op.namespaces {
			createNamespace(t, ns)
		}
		args := append(slices.Clone(argv), "--watch-namespaces", strings.Join(op.namespaces, ","),
			"--operator-namespace", own, "--field-manager", op.manager)
		// Its Lease lives in its own namespace: one Lease for both would
		// leave one of them waiting forever.
		op.proc = startOperatorProcess(t, args, kubeconfig, own, op.name)
	}
	// Before the operators stop (cleanups run last first), so neither the
	// suite's operator nor the next test inherits these clusters.
	t.Cleanup(func() {
		var all []string
		for _, op := range ops {
			all = append(all, op.namespaces...)
		}
		deleteClustersAndWait(t, 5*time.Minute, all...)
	})

	var keys []client.ObjectKey
	for _, op := range ops {
		// A config of each operator's own: menu objects are cluster-scoped
		// and shared (see docs/install.md), and this test is about the
		// namespaced objects.
		cfg := createMenu(t, "split-"+op.name)
		for _, ns := range op.namespaces {
			for i := range perNamespace {
				keys = append(keys, createCluster(t, ns, fmt.Sprintf("c%d", i), cfg, 1, 0))
			}
		}
	}
	start := time.Now()
	eventually(t, 10*time.Minute, fmt.Sprintf("%d clusters Active", len(keys)), func() error {
		var pending []string
		for _, op := range ops {
			for _, ns := range op.namespaces {
				var list valkeyv1.ValkeyClusterList
				if err := k8sClient.List(context.Background(), &list, client.InNamespace(ns)); err != nil {
					return err
				}
				for _, vc := range list.Items {
					if vc.Status.State != valkeyv1.StateActive || vc.Status.SlotsAssigned != 16384 {
						pending = append(pending, ns+"/"+vc.Name)
					}
				}
			}
		}
		if len(pending) > 0 {
			return fmt.Errorf("%d of %d not Active yet, e.g. %s", len(pending), len(keys), pending[0])
		}
		return nil
	})
	t.Logf("%d clusters Active %s after the last create", len(keys), time.Since(start).Round(time.Second))

	for _, op := range ops {
		if op.proc.reconciles() == 0 {
			t.Errorf("operator %s reconciled no cluster", op.name)
		}
		// The load a fleet is split by, as docs/metrics.md lists it.
		for _, series := range []string{`workqueue_depth{controller="valkeycluster"`,
			`controller_runtime_reconcile_time_seconds_count{controller="valkeycluster"}`, "rest_client_requests_total"} {
			if _, ok := op.proc.metric(series); !ok {
				t.Errorf("operator %s serves no %s", op.name, series)
			}
		}
	}
	for i, op := range ops {
		other := ops[1-i]
		for _, ns := range op.namespaces {
			assertWrittenOnlyBy(t, ns, op.manager, other.manager)
		}
	}
}

// assertWrittenOnlyBy checks every ValkeyCluster, ValkeyNode, Pod, Secret,
// Service, ConfigMap and Event in ns: none carries a write of stranger
// (the operator of other namespaces), and every cluster and every object
// labeled as the operator's carries one of manager (the operator did its
// work here, under the name the check looks for).
func assertWrittenOnlyBy(t *testing.T, ns, manager, stranger string) {
	t.Helper()
	lists := map[string]client.ObjectList{
		"ValkeyCluster": &valkeyv1.ValkeyClusterList{}, "ValkeyNode": &valkeyv1.ValkeyNodeList{},
		"Pod": &corev1.PodList{}, "Secret": &corev1.SecretList{}, "Service": &corev1.ServiceList{},
		"ConfigMap": &corev1.ConfigMapList{}, "Event": &eventsv1.EventList{},
	}
	for kind, list := range lists {
		if err := k8sClient.List(context.Background(), list, client.InNamespace(ns)); err != nil {
			t.Fatal(err)
		}
		objs, err := metaOf(list)
		if err != nil {
			t.Fatal(err)
		}
		if len(objs) == 0 && kind != "Event" {
			t.Errorf("%s: no %s at all", ns, kind)
		}
		for _, o := range objs {
			managers := managersOf(o)
			switch {
			case slices.Contains(managers, stranger):
				t.Errorf("%s %s/%s was written by %s, which does not watch %s (managers %v)", kind, ns, o.GetName(), stranger, ns, managers)
			case !slices.Contains(managers, manager) && (kind == "ValkeyCluster" || o.GetLabels()[valkeyv1.LabelManagedBy] == valkeyv1.LabelManagedByValue):
				// A cluster gets its finalizer and status from its
				// operator; everything labeled as the operator's was
				// created by it.
				t.Errorf("%s %s/%s carries no write of its operator %s (managers %v)", kind, ns, o.GetName(), manager, managers)
			}
		}
	}
}

// metaOf returns the items of a list as objects with metadata.
func metaOf(list client.ObjectList) ([]metav1.Object, error) {
	var out []metav1.Object
	switch l := list.(type) {
	case *valkeyv1.ValkeyClusterList:
		for i := range l.Items {
			out = append(out, &l.Items[i])
		}
	case *valkeyv1.ValkeyNodeList:
		for i := range l.Items {
			out = append(out, &l.Items[i])
		}
	case *corev1.PodList:
		for i := range l.Items {
			out = append(out, &l.Items[i])
		}
	case *corev1.SecretList:
		for i := range l.Items {
			out = append(out, &l.Items[i])
		}
	case *corev1.ServiceList:
		for i := range l.Items {
			out = append(out, &l.Items[i])
		}
	case *corev1.ConfigMapList:
		for i := range l.Items {
			out = append(out, &l.Items[i])
		}
	case *eventsv1.EventList:
		for i := range l.Items {
			out = append(out, &l.Items[i])
		}
	default:
		return nil, fmt.Errorf("no items of %T", list)
	}
	return out, nil
}

func managersOf(o metav1.Object) []string {
	var out []string
	for _, e := range o.GetManagedFields() {
		out = append(out, e.Manager)
	}
	return out
}
