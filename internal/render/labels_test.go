package render

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// The operator caches only the Secrets and Pods ManagedSelector selects:
// every one it renders must be, or it would lose sight of its own objects.
func TestManagedSelectorSelectsEveryRenderedSecretAndPod(t *testing.T) {
	for _, tls := range []bool{false, true} {
		c := testCluster(tls)
		acl, err := c.ACLSecret(nil, Passwords{}, "8.0.1", false)
		if err != nil {
			t.Fatal(err)
		}
		node := testNode(c, 1)
		node.Spec.ExporterImage = DefaultExporterImage
		pod, err := c.Pod(node)
		if err != nil {
			t.Fatal(err)
		}
		for _, o := range []client.Object{acl, c.OperatorAuthSecret(Passwords{}), c.NodeTLSSecret(&corev1.Secret{}), pod} {
			if !ManagedSelector().Matches(labels.Set(o.GetLabels())) {
				t.Errorf("%T %s (tls %v) with labels %v is not selected by %s", o, o.GetName(), tls, o.GetLabels(), ManagedSelector())
			}
		}
	}
	if ManagedSelector().Matches(labels.Set{"app.kubernetes.io/instance": testClusterName}) {
		t.Error("the selector matches an object without the managed-by label")
	}
}
