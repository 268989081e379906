package v1alpha1_test

import (
	"fmt"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

func configManifest(spec string) string {
	return fmt.Sprintf(`apiVersion: valkey.gomomento.com/v1alpha1
kind: ValkeyConfig
metadata:
  name: standard
spec:
%s`, spec)
}

const hashA = "5e884898da28047151d0e56f8dc6292773603d0d6aabbdd62a11ef721d1542d8"

func binding(username string) string {
	return fmt.Sprintf(`{username: %s, passwordHashes: [%s], permissions: [{roleRef: reader, keys: [{pattern: "app:*"}]}]}`, username, hashA)
}

func TestValkeyConfigAdmission(t *testing.T) {
	runAdmission(t, []admissionCase{
		{name: "empty spec", manifest: configManifest("  {}\n")},
		{name: "full", manifest: configManifest(`  imageRef: valkey-8
  baseRef: base
  resources:
    cpu: 500m
    memory: 1Gi
  valkey:
    maxmemory: 800mb
    maxmemory-policy: allkeys-lru
  acl:
  - ` + binding("app") + `
  exporter:
    enabled: true
`)},
		{name: "persistence", manifest: configManifest("  persistence:\n    size: 1Gi\n    storageClassName: fast\n    appendfsync: always\n")},
		{name: "persistence with the default write mode", manifest: configManifest("  persistence:\n    size: 10Gi\n")},
		{name: "persistence of zero size", manifest: configManifest("  persistence:\n    size: \"0\"\n"),
			want: []string{"spec.persistence.size", "persistence.size must be greater than zero"}},
		{name: "persistence of zero size in another unit", manifest: configManifest("  persistence:\n    size: 0Gi\n"),
			want: []string{"persistence.size must be greater than zero"}},
		{name: "persistence of negative size", manifest: configManifest("  persistence:\n    size: -1Gi\n"),
			want: []string{"persistence.size must be greater than zero"}},
		{name: "persistence without a size", manifest: configManifest("  persistence:\n    appendfsync: always\n"),
			want: []string{"spec.persistence.size", "Required value"}},
		{name: "unknown write mode", manifest: configManifest("  persistence:\n    size: 1Gi\n    appendfsync: \"no\"\n"),
			want: []string{"spec.persistence.appendfsync", "supported values: \"always\", \"everysec\""}},
		{name: "appendonly beside persistence", manifest: configManifest("  persistence:\n    size: 1Gi\n  valkey:\n    appendonly: \"no\"\n"),
			want: []string{"appendonly, appendfsync, dir and save are set by spec.persistence"}},
		{name: "appendfsync beside persistence", manifest: configManifest("  persistence:\n    size: 1Gi\n  valkey:\n    AppendFsync: \"no\"\n"),
			want: []string{"set by spec.persistence"}},
		{name: "dir beside persistence", manifest: configManifest("  persistence:\n    size: 1Gi\n  valkey:\n    dir: /tmp\n"),
			want: []string{"set by spec.persistence"}},
		{name: "save beside persistence", manifest: configManifest("  persistence:\n    size: 1Gi\n  valkey:\n    save: 60 1\n"),
			want: []string{"set by spec.persistence"}},
		{name: "appendonly without persistence is as before", manifest: configManifest("  valkey:\n    appendonly: \"yes\"\n")},
		{name: "cpu not a quantity", manifest: configManifest("  resources:\n    cpu: lots\n"),
			want: []string{"spec.resources.cpu", "cpu must be a Kubernetes quantity"}},
		{name: "memory not a quantity", manifest: configManifest("  resources:\n    memory: 1 gig\n"),
			want: []string{"spec.resources.memory", "memory must be a Kubernetes quantity"}},
		{name: "requirepass refused", manifest: configManifest("  valkey:\n    requirepass: secret\n"),
			want: []string{"spec.valkey", "authentication, ACL and include directives are managed by the operator"}},
		{name: "primaryauth refused", manifest: configManifest("  valkey:\n    primaryauth: secret\n"),
			want: []string{"spec.valkey", "managed by the operator"}},
		{name: "masterauth alias refused", manifest: configManifest("  valkey:\n    masterauth: secret\n"),
			want: []string{"spec.valkey", "managed by the operator"}},
		{name: "aclfile refused", manifest: configManifest("  valkey:\n    aclfile: /tmp/users.acl\n"),
			want: []string{"spec.valkey", "managed by the operator"}},
		{name: "user refused", manifest: configManifest("  valkey:\n    user: bob on nopass\n"),
			want: []string{"spec.valkey", "managed by the operator"}},
		{name: "include refused", manifest: configManifest("  valkey:\n    include: /etc/other.conf\n"),
			want: []string{"spec.valkey", "managed by the operator"}},
		{name: "directive case does not matter", manifest: configManifest("  valkey:\n    RequirePass: secret\n"),
			want: []string{"spec.valkey", "managed by the operator"}},
		{name: "tls directives refused", manifest: configManifest("  valkey:\n    tls-port: \"6380\"\n"),
			want: []string{"spec.valkey", "tls-* directives are managed by the operator"}},
		{name: "directive name with a space", manifest: configManifest("  valkey:\n    \"include /x\": other.conf\n"),
			want: []string{"spec.valkey", "directive names must match"}},
		{name: "duplicate username", manifest: configManifest("  acl:\n  - " + binding("app") + "\n  - " + binding("app") + "\n"),
			want: []string{"spec.acl", "duplicate username in ACL bindings"}},
		{name: "too many bindings", manifest: configManifest("  acl: " + repeat(65, func(i int) string { return binding(fmt.Sprintf("user%d", i)) }) + "\n"),
			want: []string{"spec.acl", "Too many"}},
		{name: "maxmemory at the memory limit", manifest: configManifest("  resources:\n    memory: 1Gi\n  valkey:\n    maxmemory: 1gb\n")},
		{name: "maxmemory 0 is left to the status", manifest: configManifest("  resources:\n    memory: 1Gi\n  valkey:\n    maxmemory: \"0\"\n")},
		{name: "maxmemory without a limit in the same config", manifest: configManifest("  valkey:\n    maxmemory: 64gb\n")},
		{name: "a maxmemory Valkey cannot read is left to the status", manifest: configManifest("  resources:\n    memory: 1Gi\n  valkey:\n    maxmemory: 2tb\n")},
		{name: "maxmemory above the memory limit", manifest: configManifest("  resources:\n    memory: 1Gi\n  valkey:\n    maxmemory: 1025mb\n"),
			want: []string{"spec", "valkey maxmemory exceeds resources.memory"}},
		{name: "maxmemory in bytes above the limit", manifest: configManifest("  resources:\n    memory: 1G\n  valkey:\n    maxmemory: \"1000000001\"\n"),
			want: []string{"valkey maxmemory exceeds resources.memory"}},
		{name: "k is a thousand, kb 1024", manifest: configManifest("  resources:\n    memory: 1000k\n  valkey:\n    maxmemory: 1000kb\n"),
			want: []string{"valkey maxmemory exceeds resources.memory"}},
		{name: "units in upper case", manifest: configManifest("  resources:\n    memory: 1Gi\n  valkey:\n    maxmemory: 2GB\n"),
			want: []string{"valkey maxmemory exceeds resources.memory"}},
		{name: "another spelling of the key is left to the status", manifest: configManifest("  resources:\n    memory: 1Gi\n  valkey:\n    MaxMemory: 2gb\n")},
		{name: "baseRef names itself", manifest: configManifest("  baseRef: standard\n"),
			want: []string{"spec.baseRef must not name the config itself"}},
	})
}

// An empty acl list is kept, so it can clear inherited bindings.
func TestValkeyConfigEmptyACLIsKept(t *testing.T) {
	m := configManifest("  imageRef: valkey-8\n  acl: []\n")
	if err := create(t, m); err != nil {
		t.Fatalf("create: %v", err)
	}
	stored := get(t, m)
	acl, found, err := unstructured.NestedSlice(stored.Object, "spec", "acl")
	if err != nil || !found {
		t.Fatalf("spec.acl was dropped (found=%v, err=%v)", found, err)
	}
	if len(acl) != 0 {
		t.Fatalf("spec.acl = %v, want []", acl)
	}
}

// persistence.size may grow, never shrink: a volume cannot be made
// smaller, so the edit is refused with the sizes it was asked for.
func TestValkeyConfigPersistenceSizeOnlyGrows(t *testing.T) {
	m := configManifest("  persistence:\n    size: 2Gi\n")
	if err := create(t, m); err != nil {
		t.Fatalf("create: %v", err)
	}
	setSize := func(size any) func(spec map[string]any) {
		return func(s map[string]any) { s["persistence"].(map[string]any)["size"] = size }
	}
	cases := []struct {
		name   string
		mutate func(spec map[string]any)
		want   []string
	}{
		{name: "a shrink", mutate: setSize("1Gi"),
			want: []string{"spec.persistence.size", "persistence.size cannot shrink from 2Gi to 1Gi: a volume cannot be made smaller, only larger"}},
		{name: "a shrink in bytes", mutate: setSize(int64(1 << 20)),
			want: []string{"persistence.size cannot shrink from 2Gi to 1048576"}},
		{name: "the same size in another unit", mutate: setSize("2048Mi")},
		{name: "growth", mutate: setSize("3Gi")},
		{name: "below the grown size", mutate: setSize("2Gi"), want: []string{"cannot shrink from 3Gi to 2Gi"}},
		{name: "removing persistence is not a shrink", mutate: func(s map[string]any) { delete(s, "persistence") }},
		{name: "adding it back at any size", mutate: func(s map[string]any) { s["persistence"] = map[string]any{"size": "1Gi"} }},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			assertAdmission(t, update(t, m, tc.mutate), tc.want)
		})
	}
}
