package v1alpha1_test

import (
	"context"
	"testing"

	"sigs.k8s.io/controller-runtime/pkg/client"

	valkeyv1 "github.com/gomomento/valkey-operator/api/v1alpha1"
)

func nodeManifest(name, spec string) string {
	return `apiVersion: valkey.gomomento.com/v1alpha1
kind: ValkeyNode
metadata:
  name: ` + name + `
  namespace: nodes
spec:
` + spec
}

const nodeSpec = "  clusterName: my-cluster\n  image: valkey/valkey:8.0.1\n  shardIndex: 0\n"

func TestValkeyNodeAdmission(t *testing.T) {
	runAdmission(t, []admissionCase{
		{name: "minimal", manifest: nodeManifest("my-cluster-1a4f2", nodeSpec)},
		{name: "every field", manifest: nodeManifest("my-cluster-1a4f2", nodeSpec+`  cpu: 500m
  memory: 1Gi
  valkeySettings: {maxmemory: 800mb}
  tlsSecret: my-cluster-tls
  placement: {zones: [zone-a], zoneSpread: required}
  exporterImage: oliver006/redis_exporter:v1.45.0
  lifecycle: Joining
`)},
		{name: "clusterName missing", manifest: nodeManifest("node-x", "  image: valkey/valkey:8.0.1\n  shardIndex: 0\n"),
			want: []string{"spec.clusterName", "Required value"}},
		{name: "image missing", manifest: nodeManifest("node-x", "  clusterName: c\n  shardIndex: 0\n"),
			want: []string{"spec.image", "Required value"}},
		{name: "shardIndex missing", manifest: nodeManifest("node-x", "  clusterName: c\n  image: valkey/valkey:8.0.1\n"),
			want: []string{"spec.shardIndex", "Required value"}},
		{name: "negative shardIndex", manifest: nodeManifest("node-x", "  clusterName: c\n  image: valkey/valkey:8.0.1\n  shardIndex: -1\n"),
			want: []string{"spec.shardIndex", "greater than or equal to 0"}},
		{name: "lifecycle not an enum value", manifest: nodeManifest("node-x", nodeSpec+"  lifecycle: Dead\n"),
			want: []string{"spec.lifecycle", "Unsupported value"}},
	})
}

func TestValkeyNodeDefaults(t *testing.T) {
	m := nodeManifest("defaults", nodeSpec)
	if err := create(t, m); err != nil {
		t.Fatalf("create: %v", err)
	}
	var n valkeyv1.ValkeyNode
	if err := env.Client.Get(context.Background(), client.ObjectKey{Namespace: "nodes", Name: "defaults"}, &n); err != nil {
		t.Fatalf("get: %v", err)
	}
	if n.Spec.Lifecycle != valkeyv1.LifecycleActive {
		t.Errorf("lifecycle defaulted to %q, want Active", n.Spec.Lifecycle)
	}
	if n.Spec.ValkeySettings == nil {
		t.Errorf("valkeySettings not defaulted to {}")
	}
}

// Every spec field but lifecycle is immutable, except that valkeySettings
// may gain keys and change values (never lose a key).
func TestValkeyNodeSpecImmutableExceptLifecycleAndSettings(t *testing.T) {
	m := nodeManifest("immutable", nodeSpec+"  cpu: 500m\n  valkeySettings: {maxmemory: 800mb}\n  lifecycle: Joining\n")
	if err := create(t, m); err != nil {
		t.Fatalf("create: %v", err)
	}
	cases := []struct {
		name   string
		mutate func(spec map[string]any)
		want   []string
	}{
		{name: "lifecycle may change", mutate: func(s map[string]any) { s["lifecycle"] = "Active" }},
		{name: "clusterName", mutate: func(s map[string]any) { s["clusterName"] = "other" }, want: []string{"spec.clusterName is immutable"}},
		{name: "image", mutate: func(s map[string]any) { s["image"] = "valkey/valkey:9.0.1" }, want: []string{"spec.image is immutable"}},
		{name: "shardIndex", mutate: func(s map[string]any) { s["shardIndex"] = int64(2) }, want: []string{"spec.shardIndex is immutable"}},
		{name: "cpu changed", mutate: func(s map[string]any) { s["cpu"] = "1" }, want: []string{"spec.cpu is immutable"}},
		{name: "cpu removed", mutate: func(s map[string]any) { delete(s, "cpu") }, want: []string{"spec.cpu is immutable"}},
		{name: "memory added", mutate: func(s map[string]any) { s["memory"] = "1Gi" }, want: []string{"spec.memory is immutable"}},
		// The operator records an edit of live settings on the node.
		{name: "valkeySettings value changed", mutate: func(s map[string]any) { s["valkeySettings"] = map[string]any{"maxmemory": "1gb"} }},
		{name: "valkeySettings key added", mutate: func(s map[string]any) {
			s["valkeySettings"] = map[string]any{"maxmemory": "800mb", "maxmemory-policy": "allkeys-lru"}
		}},
		{name: "valkeySettings key removed", mutate: func(s map[string]any) { s["valkeySettings"] = map[string]any{} },
			want: []string{"spec.valkeySettings keys cannot be removed"}},
		{name: "tlsSecret added", mutate: func(s map[string]any) { s["tlsSecret"] = "x" }, want: []string{"spec.tlsSecret is immutable"}},
		{name: "placement added", mutate: func(s map[string]any) { s["placement"] = map[string]any{"zones": []any{"zone-a"}} }, want: []string{"spec.placement is immutable"}},
		{name: "exporterImage added", mutate: func(s map[string]any) { s["exporterImage"] = "oliver006/redis_exporter:v1.45.0" }, want: []string{"spec.exporterImage is immutable"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			assertAdmission(t, update(t, m, tc.mutate), tc.want)
		})
	}
}

// A node's persistence is fixed but for its size, which may grow: the
// operator expands the claim in place.
func TestValkeyNodePersistenceOnlyGrows(t *testing.T) {
	m := nodeManifest("persistent", nodeSpec+"  persistence: {size: 1Gi, storageClassName: fast, appendfsync: always}\n")
	if err := create(t, m); err != nil {
		t.Fatalf("create: %v", err)
	}
	set := func(field string, v any) func(spec map[string]any) {
		return func(s map[string]any) { s["persistence"].(map[string]any)[field] = v }
	}
	cases := []struct {
		name   string
		mutate func(spec map[string]any)
		want   []string
	}{
		{name: "size grows", mutate: set("size", "2Gi")},
		{name: "size shrinks", mutate: set("size", "1Gi"), want: []string{"spec.persistence.size cannot shrink"}},
		{name: "storageClassName", mutate: set("storageClassName", "slow"), want: []string{"spec.persistence.storageClassName is immutable"}},
		{name: "storageClassName removed", mutate: func(s map[string]any) { delete(s["persistence"].(map[string]any), "storageClassName") },
			want: []string{"spec.persistence.storageClassName is immutable"}},
		{name: "appendfsync", mutate: set("appendfsync", "everysec"), want: []string{"spec.persistence.appendfsync is immutable"}},
		{name: "persistence removed", mutate: func(s map[string]any) { delete(s, "persistence") }, want: []string{"spec.persistence cannot be added or removed"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			assertAdmission(t, update(t, m, tc.mutate), tc.want)
		})
	}
}
