package v1alpha1_test

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/gomomento/valkey-operator/internal/testenv"
)

// One apiserver for the package: every test here is about admission.
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

// parse turns a manifest into an object the client can send.
func parse(t *testing.T, manifest string) *unstructured.Unstructured {
	t.Helper()
	obj := &unstructured.Unstructured{}
	if err := yaml.Unmarshal([]byte(manifest), &obj.Object); err != nil {
		t.Fatalf("bad manifest in test: %v\n%s", err, manifest)
	}
	return obj
}

// create sends the manifest and returns the admission error, if any. The
// object is removed again when the test ends so names can repeat across cases.
func create(t *testing.T, manifest string) error {
	t.Helper()
	obj := parse(t, manifest)
	if ns := obj.GetNamespace(); ns != "" {
		ensureNamespace(t, ns)
	}
	err := env.Client.Create(context.Background(), obj)
	if err == nil {
		t.Cleanup(func() { _ = env.Client.Delete(context.Background(), obj) })
	}
	return err
}

var namespaces = map[string]bool{}

func ensureNamespace(t *testing.T, ns string) {
	t.Helper()
	if namespaces[ns] {
		return
	}
	obj := parse(t, "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: "+ns)
	if err := env.Client.Create(context.Background(), obj); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatalf("creating namespace %s: %v", ns, err)
	}
	namespaces[ns] = true
}

// admissionCase is one manifest and what admission must say about it. An
// empty want means the object must be accepted; otherwise the rejection must
// contain every string in want (the field path or the rule's message).
type admissionCase struct {
	name     string
	manifest string
	want     []string
}

func runAdmission(t *testing.T, cases []admissionCase) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := create(t, tc.manifest)
			assertAdmission(t, err, tc.want)
		})
	}
}

func assertAdmission(t *testing.T, err error, want []string) {
	t.Helper()
	if len(want) == 0 {
		if err != nil {
			t.Fatalf("expected the object to be accepted, got: %v", err)
		}
		return
	}
	if err == nil {
		t.Fatalf("expected a rejection mentioning %q, but the object was accepted", want)
	}
	if !apierrors.IsInvalid(err) && !apierrors.IsBadRequest(err) {
		t.Fatalf("expected a validation error, got %T: %v", err, err)
	}
	for _, w := range want {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("rejection does not mention %q:\n%v", w, err)
		}
	}
}

// get reads an object back as the apiserver stored it.
func get(t *testing.T, manifest string) *unstructured.Unstructured {
	t.Helper()
	obj := parse(t, manifest)
	out := &unstructured.Unstructured{}
	out.SetGroupVersionKind(obj.GroupVersionKind())
	if err := env.Client.Get(context.Background(), client.ObjectKeyFromObject(obj), out); err != nil {
		t.Fatalf("reading %s back: %v", obj.GetName(), err)
	}
	return out
}

// repeat builds a YAML flow list of n items made by item(i).
func repeat(n int, item func(i int) string) string {
	parts := make([]string, n)
	for i := range parts {
		parts[i] = item(i)
	}
	return "[" + strings.Join(parts, ", ") + "]"
}
