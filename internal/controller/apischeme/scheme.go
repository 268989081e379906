package apischeme

import (
	"fmt"

	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"

	valkeyv1 "github.com/gomomento/valkey-operator/api/v1alpha1"
)

// NewScheme returns the kinds the operator reads and writes.
func NewScheme() (*runtime.Scheme, error) {
	s := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(s); err != nil {
		return nil, fmt.Errorf("adding core kinds: %w", err)
	}
	if err := valkeyv1.AddToScheme(s); err != nil {
		return nil, fmt.Errorf("adding valkey kinds: %w", err)
	}
	return s, nil
}
