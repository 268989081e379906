package resolve

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/utils/ptr"

	"github.com/gomomento/valkey-operator/api/v1alpha1"
)

// fakeMenu serves configs, images and roles from maps; names listed in fail
// return a non-NotFound error.
type fakeMenu struct {
	configs map[string]v1alpha1.ValkeyConfigSpec
	images  map[string]v1alpha1.ValkeyImageSpec
	roles   map[string]v1alpha1.ValkeyRoleSpec
	fail    map[string]bool
	apiErr  bool // report missing objects as Kubernetes NotFound errors
}

var errBoom = errors.New("connection refused")

func (m fakeMenu) missing(kind, name string) error {
	if m.apiErr {
		return apierrors.NewNotFound(schema.GroupResource{Group: "valkey.gomomento.com", Resource: kind}, name)
	}
	return fmt.Errorf("%s %q: %w", kind, name, errNotFound)
}

func (m fakeMenu) Config(_ context.Context, name string) (*v1alpha1.ValkeyConfig, error) {
	if m.fail[name] {
		return nil, errBoom
	}
	spec, ok := m.configs[name]
	if !ok {
		return nil, m.missing("valkeyconfigs", name)
	}
	return &v1alpha1.ValkeyConfig{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: spec}, nil
}

func (m fakeMenu) Image(_ context.Context, name string) (*v1alpha1.ValkeyImage, error) {
	if m.fail[name] {
		return nil, errBoom
	}
	spec, ok := m.images[name]
	if !ok {
		return nil, m.missing("valkeyimages", name)
	}
	return &v1alpha1.ValkeyImage{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: spec}, nil
}

func (m fakeMenu) Role(_ context.Context, name string) (*v1alpha1.ValkeyRole, error) {
	if m.fail[name] {
		return nil, errBoom
	}
	spec, ok := m.roles[name]
	if !ok {
		return nil, m.missing("valkeyroles", name)
	}
	return &v1alpha1.ValkeyRole{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: spec}, nil
}

var images = map[string]v1alpha1.ValkeyImageSpec{
	"valkey-8": {Repository: "valkey/valkey", Tag: "8.0.1", Version: "8.0.1"},
	"valkey-9": {Repository: "registry.example/valkey", Tag: "9.0.1", Version: "9.0.1"},
}

func binding(username string) v1alpha1.AclBinding {
	return v1alpha1.AclBinding{
		Username:       username,
		PasswordHashes: []v1alpha1.PasswordHash{"0000000000000000000000000000000000000000000000000000000000000000"},
		Permissions:    []v1alpha1.Permission{{RoleRef: "reader", Keys: []v1alpha1.KeyPattern{{Pattern: "*"}}}},
	}
}

// chainOf builds configs c0 -> c1 -> ... -> c(n-1), the root holding the image.
func chainOf(n int) map[string]v1alpha1.ValkeyConfigSpec {
	configs := map[string]v1alpha1.ValkeyConfigSpec{}
	for i := range n {
		spec := v1alpha1.ValkeyConfigSpec{}
		if i < n-1 {
			spec.BaseRef = fmt.Sprintf("c%d", i+1)
		} else {
			spec.ImageRef = "valkey-8"
		}
		configs[fmt.Sprintf("c%d", i)] = spec
	}
	return configs
}

func TestConfig(t *testing.T) {
	tests := []struct {
		name    string
		configs map[string]v1alpha1.ValkeyConfigSpec
		start   string
		apiErr  bool
		fail    map[string]bool
		want    *Result
		reason  string
		message string
		chain   []string
		image   string
		wrapped bool // a lookup failure, passed through wrapped
	}{
		{
			name:    "single config",
			configs: map[string]v1alpha1.ValkeyConfigSpec{"std": {ImageRef: "valkey-8", Resources: &v1alpha1.Resources{CPU: "1", Memory: "1Gi"}, Valkey: map[string]string{"maxmemory": "800mb"}}},
			start:   "std",
			want: &Result{
				Image: "valkey/valkey:8.0.1", ImageName: "valkey-8", Version: "8.0.1",
				CPU: "1", Memory: "1Gi", Valkey: map[string]string{"maxmemory": "800mb"}, Chain: []string{"std"},
			},
		},
		{
			name: "image is the first non-empty imageRef child to root",
			configs: map[string]v1alpha1.ValkeyConfigSpec{
				"child":  {BaseRef: "middle"},
				"middle": {BaseRef: "root", ImageRef: "valkey-9"},
				"root":   {ImageRef: "valkey-8"},
			},
			start: "child",
			want: &Result{
				Image: "registry.example/valkey:9.0.1", ImageName: "valkey-9", Version: "9.0.1",
				Valkey: map[string]string{}, Chain: []string{"child", "middle", "root"},
			},
		},
		{
			name: "cpu and memory resolve independently",
			configs: map[string]v1alpha1.ValkeyConfigSpec{
				"child":  {BaseRef: "middle", Resources: &v1alpha1.Resources{Memory: "2Gi"}},
				"middle": {BaseRef: "root", Resources: &v1alpha1.Resources{CPU: "500m"}},
				"root":   {ImageRef: "valkey-8", Resources: &v1alpha1.Resources{CPU: "4", Memory: "8Gi"}},
			},
			start: "child",
			want: &Result{
				Image: "valkey/valkey:8.0.1", ImageName: "valkey-8", Version: "8.0.1",
				CPU: "500m", Memory: "2Gi", Valkey: map[string]string{}, Chain: []string{"child", "middle", "root"},
			},
		},
		{
			name: "valkey maps merge root to child, child wins, parent keys survive",
			configs: map[string]v1alpha1.ValkeyConfigSpec{
				"child":  {BaseRef: "middle", Valkey: map[string]string{"maxmemory": "3gb"}},
				"middle": {BaseRef: "root", Valkey: map[string]string{"maxmemory": "2gb", "loglevel": "warning"}},
				"root":   {ImageRef: "valkey-8", Valkey: map[string]string{"maxmemory": "1gb", "maxmemory-policy": "allkeys-lru", "loglevel": "notice"}},
			},
			start: "child",
			want: &Result{
				Image: "valkey/valkey:8.0.1", ImageName: "valkey-8", Version: "8.0.1",
				Valkey: map[string]string{"maxmemory": "3gb", "loglevel": "warning", "maxmemory-policy": "allkeys-lru"},
				Chain:  []string{"child", "middle", "root"},
			},
		},
		{
			name: "acl of the first config that sets it; nothing merges",
			configs: map[string]v1alpha1.ValkeyConfigSpec{
				"child":  {BaseRef: "middle"},
				"middle": {BaseRef: "root", ACL: []v1alpha1.AclBinding{binding("app")}},
				"root":   {ImageRef: "valkey-8", ACL: []v1alpha1.AclBinding{binding("admin")}},
			},
			start: "child",
			want: &Result{
				Image: "valkey/valkey:8.0.1", ImageName: "valkey-8", Version: "8.0.1", Valkey: map[string]string{},
				ACL: []v1alpha1.AclBinding{binding("app")}, ACLSet: true, Chain: []string{"child", "middle", "root"},
			},
		},
		{
			name: "an empty acl list is set and clears inherited bindings",
			configs: map[string]v1alpha1.ValkeyConfigSpec{
				"child": {BaseRef: "root", ACL: []v1alpha1.AclBinding{}},
				"root":  {ImageRef: "valkey-8", ACL: []v1alpha1.AclBinding{binding("admin")}},
			},
			start: "child",
			want: &Result{
				Image: "valkey/valkey:8.0.1", ImageName: "valkey-8", Version: "8.0.1", Valkey: map[string]string{},
				ACL: []v1alpha1.AclBinding{}, ACLSet: true, Chain: []string{"child", "root"},
			},
		},
		{
			name: "exporter of the first config that sets enabled, off included",
			configs: map[string]v1alpha1.ValkeyConfigSpec{
				"child":  {BaseRef: "middle", Exporter: &v1alpha1.Exporter{}},
				"middle": {BaseRef: "root", Exporter: &v1alpha1.Exporter{Enabled: ptr.To(false)}},
				"root":   {ImageRef: "valkey-8", Exporter: &v1alpha1.Exporter{Enabled: ptr.To(true)}},
			},
			start: "child",
			want: &Result{
				Image: "valkey/valkey:8.0.1", ImageName: "valkey-8", Version: "8.0.1", Valkey: map[string]string{},
				Chain: []string{"child", "middle", "root"},
			},
		},
		{
			name: "exporter inherited from the root",
			configs: map[string]v1alpha1.ValkeyConfigSpec{
				"child": {BaseRef: "root"},
				"root":  {ImageRef: "valkey-8", Exporter: &v1alpha1.Exporter{Enabled: ptr.To(true)}},
			},
			start: "child",
			want: &Result{
				Image: "valkey/valkey:8.0.1", ImageName: "valkey-8", Version: "8.0.1", Valkey: map[string]string{},
				Exporter: true, Chain: []string{"child", "root"},
			},
		},
		{
			name: "persistence inherited from the root",
			configs: map[string]v1alpha1.ValkeyConfigSpec{
				"child": {BaseRef: "root"},
				"root":  {ImageRef: "valkey-8", Persistence: &v1alpha1.Persistence{Size: resource.MustParse("1Gi"), Appendfsync: v1alpha1.AppendFsyncAlways}},
			},
			start: "child",
			want: &Result{
				Image: "valkey/valkey:8.0.1", ImageName: "valkey-8", Version: "8.0.1", Valkey: map[string]string{},
				Persistence: &v1alpha1.Persistence{Size: resource.MustParse("1Gi"), Appendfsync: v1alpha1.AppendFsyncAlways},
				Chain:       []string{"child", "root"},
			},
		},
		{
			name: "persistence of the first config that sets it, whole",
			configs: map[string]v1alpha1.ValkeyConfigSpec{
				"child":  {BaseRef: "middle", Persistence: &v1alpha1.Persistence{Size: resource.MustParse("5Gi")}},
				"middle": {BaseRef: "root", Persistence: &v1alpha1.Persistence{Size: resource.MustParse("1Gi"), StorageClassName: "fast", Appendfsync: v1alpha1.AppendFsyncAlways}},
				"root":   {ImageRef: "valkey-8"},
			},
			start: "child",
			want: &Result{
				Image: "valkey/valkey:8.0.1", ImageName: "valkey-8", Version: "8.0.1", Valkey: map[string]string{},
				Persistence: &v1alpha1.Persistence{Size: resource.MustParse("5Gi")},
				Chain:       []string{"child", "middle", "root"},
			},
		},
		{
			name:    "no acl anywhere is not set",
			configs: map[string]v1alpha1.ValkeyConfigSpec{"std": {ImageRef: "valkey-8"}},
			start:   "std",
			want: &Result{
				Image: "valkey/valkey:8.0.1", ImageName: "valkey-8", Version: "8.0.1", Valkey: map[string]string{}, Chain: []string{"std"},
			},
		},
		{
			name:    "a chain of ten resolves",
			configs: chainOf(10),
			start:   "c0",
			want: &Result{
				Image: "valkey/valkey:8.0.1", ImageName: "valkey-8", Version: "8.0.1", Valkey: map[string]string{},
				Chain: []string{"c0", "c1", "c2", "c3", "c4", "c5", "c6", "c7", "c8", "c9"},
			},
		},
		{
			name:    "a chain of eleven fails",
			configs: chainOf(11),
			start:   "c0",
			reason:  ReasonConfigChainTooDeep,
			message: "config inheritance depth exceeds 10 (cycle?)",
			chain:   []string{"c0", "c1", "c2", "c3", "c4", "c5", "c6", "c7", "c8", "c9"},
		},
		{
			name: "a cycle fails",
			configs: map[string]v1alpha1.ValkeyConfigSpec{
				"a": {BaseRef: "b", ImageRef: "valkey-8"},
				"b": {BaseRef: "a"},
			},
			start:   "a",
			reason:  ReasonConfigChainTooDeep,
			message: "config inheritance depth exceeds 10 (cycle?)",
			chain:   []string{"a", "b", "a", "b", "a", "b", "a", "b", "a", "b"},
		},
		{
			name:    "the named config is missing",
			configs: map[string]v1alpha1.ValkeyConfigSpec{},
			start:   "std",
			reason:  ReasonConfigNotFound,
			message: `ValkeyConfig "std" not found`,
			chain:   []string{"std"},
		},
		{
			name:    "a missing base, reported as a Kubernetes NotFound",
			configs: map[string]v1alpha1.ValkeyConfigSpec{"child": {BaseRef: "gone", ImageRef: "valkey-8"}},
			start:   "child",
			apiErr:  true,
			reason:  ReasonConfigNotFound,
			message: `ValkeyConfig "gone" not found`,
			chain:   []string{"child", "gone"},
		},
		{
			name: "no imageRef anywhere",
			configs: map[string]v1alpha1.ValkeyConfigSpec{
				"child": {BaseRef: "root"},
				"root":  {},
			},
			start:   "child",
			reason:  ReasonNoImageRef,
			message: `no image_ref in config chain ending at "child"`,
			chain:   []string{"child", "root"},
		},
		{
			name:    "missing image",
			configs: map[string]v1alpha1.ValkeyConfigSpec{"std": {ImageRef: "valkey-7"}},
			start:   "std",
			reason:  ReasonImageNotFound,
			message: `ValkeyImage "valkey-7" not found`,
			chain:   []string{"std"},
			image:   "valkey-7",
		},
		{
			name:    "a failed config lookup is not a resolution error",
			configs: map[string]v1alpha1.ValkeyConfigSpec{"std": {ImageRef: "valkey-8"}},
			start:   "std",
			fail:    map[string]bool{"std": true},
			wrapped: true,
		},
		{
			name:    "a failed image lookup is not a resolution error",
			configs: map[string]v1alpha1.ValkeyConfigSpec{"std": {ImageRef: "valkey-8"}},
			start:   "std",
			fail:    map[string]bool{"valkey-8": true},
			wrapped: true,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Config(context.Background(), fakeMenu{configs: tt.configs, images: images, fail: tt.fail, apiErr: tt.apiErr}, tt.start)
			if tt.wrapped {
				var rerr *Error
				if !errors.Is(err, errBoom) || errors.As(err, &rerr) {
					t.Fatalf("err = %v, want the lookup error wrapped and no *Error", err)
				}
				return
			}
			if tt.want != nil {
				if err != nil {
					t.Fatalf("unexpected error: %v", err)
				}
				if !reflect.DeepEqual(got, tt.want) {
					t.Fatalf("got  %+v\nwant %+v", got, tt.want)
				}
				return
			}
			var rerr *Error
			if !errors.As(err, &rerr) {
				t.Fatalf("err = %v, want *Error", err)
			}
			if rerr.Reason != tt.reason || rerr.Error() != tt.message {
				t.Fatalf("got %s %q, want %s %q", rerr.Reason, rerr.Error(), tt.reason, tt.message)
			}
			if !reflect.DeepEqual(rerr.Chain, tt.chain) || rerr.Image != tt.image {
				t.Fatalf("chain %q image %q, want %q %q", rerr.Chain, rerr.Image, tt.chain, tt.image)
			}
		})
	}
}

func TestConfigDoesNotAliasTheMenu(t *testing.T) {
	menu := fakeMenu{
		configs: map[string]v1alpha1.ValkeyConfigSpec{"std": {
			ImageRef: "valkey-8",
			Valkey:   map[string]string{"maxmemory": "1gb"},
			ACL:      []v1alpha1.AclBinding{binding("app")},
		}},
		images: images,
	}
	got, err := Config(context.Background(), menu, "std")
	if err != nil {
		t.Fatal(err)
	}
	got.Valkey["maxmemory"] = "2gb"
	got.ACL[0].PasswordHashes[0] = "changed"
	spec := menu.configs["std"]
	if spec.Valkey["maxmemory"] != "1gb" || spec.ACL[0].PasswordHashes[0] == "changed" {
		t.Fatal("the result shares memory with the ValkeyConfig")
	}
}
