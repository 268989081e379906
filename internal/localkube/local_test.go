package localkube

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/gomomento/valkey-operator/internal/localkube/localkubetest"
)

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

const testCRD = `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: widgets.example.localkube.io
spec:
  group: example.localkube.io
  names: {kind: Widget, listKind: WidgetList, plural: widgets, singular: widget}
  scope: Namespaced
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}
`

// TestRunLocal is `valkey-local up` in-process: its own control plane and
// runtime, CRDs installed, a kubeconfig that works, OnReady called, and
// nothing left once its context ends.
func TestRunLocal(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a second control plane")
	}
	dir := t.TempDir()
	crds := t.TempDir()
	if err := os.WriteFile(filepath.Join(crds, "widgets.yaml"), []byte(testCRD), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(testCtx)
	defer cancel()
	var out syncBuffer
	ready := make(chan *rest.Config, 1)
	done := make(chan error, 1)
	go func() {
		done <- RunLocal(ctx, LocalOptions{
			Dir:               dir,
			CRDDirectoryPaths: []string{crds},
			Out:               &out,
			// Its pods must not collide with the suite's runtime.
			Runtime: Options{PodCIDR: "127.11.0.0/24", NodeNamePrefix: "other-node-"},
			// As in a real cluster: every pod gets a projected token volume.
			ControlPlane: ControlPlaneOptions{ServiceAccountAdmission: true},
			OnReady: func(_ context.Context, cfg *rest.Config) error {
				ready <- cfg
				return nil
			},
		})
	}()
	select {
	case <-ready:
	case err := <-done:
		t.Fatalf("RunLocal ended before ready: %v", err)
	case <-time.After(2 * time.Minute):
		t.Fatal("RunLocal not ready after 2 minutes")
	}
	kubeconfig := filepath.Join(dir, "kubeconfig")
	if !strings.Contains(out.String(), "kubectl --kubeconfig") {
		t.Errorf("no usage hint in the output:\n%s", out.String())
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	cs := kubernetes.NewForConfigOrDie(cfg)
	nodes, err := cs.CoreV1().Nodes().List(testCtx, metav1.ListOptions{})
	if err != nil || len(nodes.Items) != 3 || !strings.HasPrefix(nodes.Items[0].Name, "other-node-") {
		t.Fatalf("nodes through %s: %v, %v", kubeconfig, nodes, err)
	}
	ext := apiextensionsclient.NewForConfigOrDie(cfg)
	crd, err := ext.ApiextensionsV1().CustomResourceDefinitions().Get(testCtx, "widgets.example.localkube.io", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("CRD not installed: %v", err)
	}
	established := false
	for _, c := range crd.Status.Conditions {
		established = established || (c.Type == apiextensionsv1.Established && c.Status == apiextensionsv1.ConditionTrue)
	}
	if !established {
		t.Errorf("CRD not established: %v", crd.Status.Conditions)
	}
	pod, err := cs.CoreV1().Pods("default").Create(testCtx, valkeyPod("default", "local-0"), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	hasToken := false
	for _, v := range pod.Spec.Volumes {
		hasToken = hasToken || (v.Projected != nil && strings.HasPrefix(v.Name, "kube-api-access-"))
	}
	if !hasToken {
		t.Errorf("ServiceAccount admission did not add a token volume: %v", pod.Spec.Volumes)
	}
	eventually(t, testTimeout, func() (bool, string) {
		p, err := cs.CoreV1().Pods("default").Get(testCtx, "local-0", metav1.GetOptions{})
		return err == nil && podReady(p) && strings.HasPrefix(p.Status.PodIP, "127.11.0."), "pod of the local cluster not ready"
	})

	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("RunLocal: %v", err)
		}
	case <-time.After(time.Minute):
		t.Fatal("RunLocal did not stop")
	}
	if _, err := os.Stat(kubeconfig); !os.IsNotExist(err) {
		t.Errorf("kubeconfig left behind: %v", err)
	}
	localkubetest.AssertNoLeakedProcesses(t, dir)
}
