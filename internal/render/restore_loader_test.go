package render

import (
	"slices"
	"strings"
	"testing"

	"github.com/gomomento/valkey-operator/api/v1alpha1"
)

// A loader is never taken for one of the cluster's nodes (no instance
// label, so neither the Service nor the operator's node lists select it),
// its password is only in its Secret, and it runs what the cluster's
// nodes run, in their restricted security context.
func TestRestoreLoaderPod(t *testing.T) {
	c := testCluster(false)
	node := testNode(c, 0)
	pod, err := c.RestoreLoaderPod(2, node)
	if err != nil {
		t.Fatal(err)
	}
	if pod.Name != "my-cluster-restore-2" || pod.Namespace != testNamespace {
		t.Errorf("loader %s/%s", pod.Namespace, pod.Name)
	}
	if _, ok := pod.Labels[v1alpha1.LabelInstance]; ok {
		t.Errorf("loader carries %s: the cluster's Service would send clients to it", v1alpha1.LabelInstance)
	}
	if pod.Labels[v1alpha1.LabelRestoreOf] != testClusterName || pod.Labels[v1alpha1.LabelManagedBy] != v1alpha1.LabelManagedByValue {
		t.Errorf("labels %v", pod.Labels)
	}
	if len(pod.OwnerReferences) != 1 || pod.OwnerReferences[0].UID != testClusterUID {
		t.Errorf("owner %v, want the cluster", pod.OwnerReferences)
	}
	ctr := pod.Spec.Containers[0]
	if ctr.Image != node.Spec.Image {
		t.Errorf("image %s, want the node's %s", ctr.Image, node.Spec.Image)
	}
	args := strings.Join(ctr.Args, " ")
	for _, want := range []string{"--repl-diskless-load on-empty-db", "--appendonly no", "--bind $(POD_IP)"} {
		if !strings.Contains(args, want) {
			t.Errorf("args %q lack %q", args, want)
		}
	}
	if strings.Contains(args, "requirepass") {
		t.Errorf("the password is on the command line: %q", args)
	}
	if !slices.Contains(ctr.Args, "") || ctr.Args[slices.Index(ctr.Args, "--save")+1] != "" {
		t.Errorf("the loader may save: %q", ctr.Args)
	}
	if !*ctr.SecurityContext.ReadOnlyRootFilesystem || *ctr.SecurityContext.AllowPrivilegeEscalation {
		t.Errorf("security context %+v", ctr.SecurityContext)
	}
	s := c.RestoreLoaderSecret("pw")
	if string(s.Data[KeyLoaderConf]) != "requirepass pw\n" || string(s.Data[KeyLoaderPassword]) != "pw" || s.Name != RestoreLoaderSecretName(testClusterName) {
		t.Errorf("secret %s: %q", s.Name, s.Data[KeyLoaderConf])
	}
	other := testNode(c, 0)
	other.Spec.ClusterName = "other"
	if _, err := c.RestoreLoaderPod(0, other); err == nil {
		t.Error("a node of another cluster gave a loader")
	}
}
