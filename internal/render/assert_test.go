package render

import (
	"testing"

	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/util/diff"
)

// assertEqual compares Kubernetes objects semantically (quantities by value).
func assertEqual(t *testing.T, got, want any) {
	t.Helper()
	if !apiequality.Semantic.DeepEqual(got, want) {
		t.Fatalf("mismatch (-want +got):\n%s", diff.Diff(want, got))
	}
}
