package cluster

import (
	"context"

	"sigs.k8s.io/controller-runtime/pkg/client"

	valkeyv1 "github.com/gomomento/valkey-operator/api/v1alpha1"
)

// menu reads the platform team's menu objects for the resolver, live on
// every reconcile so creating a missing object unblocks a cluster at once.
type menu struct{ c client.Reader }

func (m menu) Config(ctx context.Context, name string) (*valkeyv1.ValkeyConfig, error) {
	var cfg valkeyv1.ValkeyConfig
	if err := m.c.Get(ctx, client.ObjectKey{Name: name}, &cfg); err != nil {
		return nil, err
	}
	return &cfg, nil
}

func (m menu) Image(ctx context.Context, name string) (*valkeyv1.ValkeyImage, error) {
	var img valkeyv1.ValkeyImage
	if err := m.c.Get(ctx, client.ObjectKey{Name: name}, &img); err != nil {
		return nil, err
	}
	return &img, nil
}

func (m menu) Role(ctx context.Context, name string) (*valkeyv1.ValkeyRole, error) {
	var role valkeyv1.ValkeyRole
	if err := m.c.Get(ctx, client.ObjectKey{Name: name}, &role); err != nil {
		return nil, err
	}
	return &role, nil
}
