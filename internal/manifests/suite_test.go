package manifests

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"helm.sh/helm/v4/pkg/chart/common"
	"helm.sh/helm/v4/pkg/chart/common/util"
	chartv2 "helm.sh/helm/v4/pkg/chart/v2"
	"helm.sh/helm/v4/pkg/chart/v2/loader"
	"helm.sh/helm/v4/pkg/engine"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"

	"github.com/gomomento/valkey-operator/internal/testbin"
	"github.com/gomomento/valkey-operator/internal/testenv"
)

// One apiserver for the package: every test here is a dry run against it.
var env *testenv.Env

func TestMain(m *testing.M) {
	var err error
	env, err = testenv.Start()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	code := m.Run()
	if err := env.Stop(); err != nil {
		fmt.Fprintln(os.Stderr, "stopping control plane:", err)
	}
	os.Exit(code)
}

func repoPath(t *testing.T, elem ...string) string {
	t.Helper()
	root, err := testbin.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	return filepath.Join(append([]string{root}, elem...)...)
}

// decodeYAML splits a multi-document stream into objects, skipping empty
// documents (a template whose condition is false renders only comments).
func decodeYAML(data []byte) ([]*unstructured.Unstructured, error) {
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
	var out []*unstructured.Unstructured
	for {
		var m map[string]any
		if err := dec.Decode(&m); err != nil {
			if errors.Is(err, io.EOF) {
				return out, nil
			}
			return nil, err
		}
		if len(m) == 0 {
			continue
		}
		out = append(out, &unstructured.Unstructured{Object: m})
	}
}

// kustomizeBuild is `kustomize build dir` with the default options, which
// keep every file a kustomization loads inside its own root.
func kustomizeBuild(t *testing.T, dir string) []*unstructured.Unstructured {
	t.Helper()
	k := krusty.MakeKustomizer(krusty.MakeDefaultOptions())
	rm, err := k.Run(filesys.MakeFsOnDisk(), dir)
	if err != nil {
		t.Fatalf("kustomize build %s: %v", dir, err)
	}
	data, err := rm.AsYaml()
	if err != nil {
		t.Fatal(err)
	}
	objs, err := decodeYAML(data)
	if err != nil {
		t.Fatalf("decoding kustomize output: %v", err)
	}
	return objs
}

func loadChart(t *testing.T) *chartv2.Chart {
	t.Helper()
	ch, err := loader.Load(repoPath(t, "charts", "valkey-operator"))
	if err != nil {
		t.Fatalf("loading the chart: %v", err)
	}
	return ch
}

// helmTemplate renders the chart's templates as `helm template` does, with
// values layered over values.yaml. The error is returned for the tests of
// values the chart refuses.
func helmTemplate(t *testing.T, namespace string, values string) ([]*unstructured.Unstructured, error) {
	t.Helper()
	ch := loadChart(t)
	vals, err := common.ReadValues([]byte(values))
	if err != nil {
		t.Fatalf("bad values in test: %v", err)
	}
	rv, err := util.ToRenderValues(ch, vals, common.ReleaseOptions{
		Name: "valkey-operator", Namespace: namespace, IsInstall: true, Revision: 1,
	}, common.DefaultCapabilities)
	if err != nil {
		return nil, err
	}
	files, err := engine.Engine{Strict: true}.RenderWithContext(context.Background(), ch, rv)
	if err != nil {
		return nil, err
	}
	names := make([]string, 0, len(files))
	for name := range files {
		names = append(names, name)
	}
	sort.Strings(names)
	var out []*unstructured.Unstructured
	for _, name := range names {
		if !strings.HasSuffix(name, ".yaml") {
			continue
		}
		objs, err := decodeYAML([]byte(files[name]))
		if err != nil {
			t.Fatalf("decoding %s: %v\n%s", name, err, files[name])
		}
		out = append(out, objs...)
	}
	return out, nil
}

func mustHelmTemplate(t *testing.T, namespace, values string) []*unstructured.Unstructured {
	t.Helper()
	objs, err := helmTemplate(t, namespace, values)
	if err != nil {
		t.Fatalf("rendering the chart: %v", err)
	}
	return objs
}

// chartCRDs are the files Helm installs from crds/ before the templates.
func chartCRDs(t *testing.T) []*unstructured.Unstructured {
	t.Helper()
	var out []*unstructured.Unstructured
	for _, crd := range loadChart(t).CRDObjects() {
		objs, err := decodeYAML(crd.File.Data)
		if err != nil {
			t.Fatalf("decoding %s: %v", crd.Name, err)
		}
		out = append(out, objs...)
	}
	return out
}

// restrictedNamespace creates a namespace for real, as a dry run of a
// namespaced object needs one, enforcing the restricted Pod Security
// Standard so that the pod dry runs also pass that admission.
func restrictedNamespace(t *testing.T, name string) {
	t.Helper()
	ns := &corev1.Namespace{}
	ns.Name = name
	ns.Labels = map[string]string{"pod-security.kubernetes.io/enforce": "restricted"}
	if err := env.Client.Create(context.Background(), ns); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatalf("creating namespace %s: %v", name, err)
	}
}

// createForReal creates obj, or leaves it when it exists.
func createForReal(t *testing.T, obj *unstructured.Unstructured) {
	t.Helper()
	if err := env.Client.Create(context.Background(), obj.DeepCopy()); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatalf("creating %s: %v", describe(obj), err)
	}
}

// dryRunApply sends every object as a server-side apply in dry-run mode:
// the apiserver decodes, defaults and validates it (schema, CEL, RBAC
// escalation rules) and persists nothing. Apply works for objects that exist
// (the CRDs testenv installed) as well as for new ones.
func dryRunApply(t *testing.T, objs []*unstructured.Unstructured) {
	t.Helper()
	for _, obj := range objs {
		ac := client.ApplyConfigurationFromUnstructured(obj.DeepCopy())
		if err := env.Client.Apply(context.Background(), ac,
			client.DryRunAll, client.FieldOwner("manifests-test"), client.ForceOwnership); err != nil {
			t.Errorf("dry-run apply of %s: %v", describe(obj), err)
		}
	}
}

// dryRunPodOf creates the Deployment's pod template as a Pod in a dry run,
// which is where Pod Security admission enforces (a Deployment only warns).
func dryRunPodOf(t *testing.T, dep *unstructured.Unstructured) {
	t.Helper()
	tmpl, found, err := unstructured.NestedMap(dep.Object, "spec", "template")
	if err != nil || !found {
		t.Fatalf("%s has no pod template: %v", describe(dep), err)
	}
	pod := &unstructured.Unstructured{Object: tmpl}
	pod.SetAPIVersion("v1")
	pod.SetKind("Pod")
	pod.SetNamespace(dep.GetNamespace())
	pod.SetName(dep.GetName() + "-dry-run")
	if err := env.Client.Create(context.Background(), pod, client.DryRunAll); err != nil {
		t.Errorf("dry-run create of the operator pod in %s: %v", dep.GetNamespace(), err)
	}
}

func describe(obj *unstructured.Unstructured) string {
	if ns := obj.GetNamespace(); ns != "" {
		return fmt.Sprintf("%s %s/%s", obj.GetKind(), ns, obj.GetName())
	}
	return fmt.Sprintf("%s %s", obj.GetKind(), obj.GetName())
}

func key(obj *unstructured.Unstructured) string {
	return obj.GetKind() + "/" + obj.GetName()
}

func find(t *testing.T, objs []*unstructured.Unstructured, kind, name string) *unstructured.Unstructured {
	t.Helper()
	for _, o := range objs {
		if o.GetKind() == kind && o.GetName() == name {
			return o
		}
	}
	t.Fatalf("no %s %s among %v", kind, name, keys(objs))
	return nil
}

func keys(objs []*unstructured.Unstructured) []string {
	out := make([]string, 0, len(objs))
	for _, o := range objs {
		out = append(out, key(o))
	}
	sort.Strings(out)
	return out
}

func convert[T any](t *testing.T, obj *unstructured.Unstructured) *T {
	t.Helper()
	var out T
	if err := runtime.DefaultUnstructuredConverter.FromUnstructuredWithValidation(obj.Object, &out, true); err != nil {
		t.Fatalf("converting %s: %v", describe(obj), err)
	}
	return &out
}
