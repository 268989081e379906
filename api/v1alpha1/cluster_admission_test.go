package v1alpha1_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	autoscalingv1 "k8s.io/api/autoscaling/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	valkeyv1 "github.com/gomomento/valkey-operator/api/v1alpha1"
)

// seedCluster is the example of the TLS page, verbatim.
const seedCluster = `apiVersion: valkey.gomomento.com/v1alpha1
kind: ValkeyCluster
metadata:
  name: my-cluster
  namespace: my-app
spec:
  configRef: standard
  shards: 3
  replicasPerShard: 1
  tls:
    secretRef: my-cluster-tls
`

func clusterManifest(name, spec string) string {
	return fmt.Sprintf(`apiVersion: valkey.gomomento.com/v1alpha1
kind: ValkeyCluster
metadata:
  name: %s
  namespace: clusters
spec:
%s`, name, spec)
}

const minimalSpec = "  configRef: standard\n  shards: 1\n  replicasPerShard: 0\n"

func TestValkeyClusterAdmission(t *testing.T) {
	runAdmission(t, []admissionCase{
		{name: "seed example", manifest: seedCluster},
		{name: "plaintext minimal", manifest: clusterManifest("c", minimalSpec)},
		{name: "every field", manifest: clusterManifest("c", minimalSpec+`  acl:
  - `+binding("app")+`
  placement:
    zones: [zone-a, zone-b, zone-c]
    zoneSpread: required
    nodeSelector: {pool: valkey}
  tls:
    secretRef: c-tls
  podAnnotations:
    prometheus.io/scrape: "true"
  autoscaling:
    minShards: 1
    maxShards: 4
    scaleOut: {memoryPercent: 80, cpuPercent: 70.5, bandwidthMbps: 500}
    scaleIn: {memoryPercent: 30, cpuPercent: 20}
  networkPolicy:
    enabled: true
    clients:
    - podSelector: {matchLabels: {app: web}}
    - namespaceSelector: {matchLabels: {kubernetes.io/metadata.name: batch}}
      podSelector: {matchLabels: {app: worker}}
    - ipBlock: {cidr: 10.0.0.0/8}
    scrapers:
    - namespaceSelector: {matchLabels: {kubernetes.io/metadata.name: monitoring}}
`)},
		{name: "network policy off", manifest: clusterManifest("c", minimalSpec+"  networkPolicy: {enabled: false}\n")},
		{name: "network policy peer naming nothing", manifest: clusterManifest("c", minimalSpec+"  networkPolicy:\n    clients: [{}]\n"),
			want: []string{"spec.networkPolicy.clients", "each peer names pods, namespaces or an ipBlock"}},
		{name: "network policy ipBlock with a selector", manifest: clusterManifest("c", minimalSpec+
			"  networkPolicy:\n    scrapers:\n    - ipBlock: {cidr: 10.0.0.0/8}\n      podSelector: {}\n"),
			want: []string{"spec.networkPolicy.scrapers", "a peer with an ipBlock names nothing else"}},
		{name: "name too long for pod names", manifest: clusterManifest(strings.Repeat("c", 58), minimalSpec),
			want: []string{"metadata.name must be at most 57 characters"}},
		{name: "name of 57 characters", manifest: clusterManifest(strings.Repeat("c", 57), minimalSpec)},
		{name: "configRef missing", manifest: clusterManifest("c", "  shards: 1\n  replicasPerShard: 0\n"),
			want: []string{"spec.configRef", "Required value"}},
		{name: "shards missing", manifest: clusterManifest("c", "  configRef: standard\n  replicasPerShard: 0\n"),
			want: []string{"spec.shards", "Required value"}},
		{name: "zero shards", manifest: clusterManifest("c", "  configRef: standard\n  shards: 0\n  replicasPerShard: 0\n"),
			want: []string{"spec.shards", "greater than or equal to 1"}},
		{name: "replicasPerShard missing", manifest: clusterManifest("c", "  configRef: standard\n  shards: 1\n"),
			want: []string{"spec.replicasPerShard", "Required value"}},
		{name: "negative replicas", manifest: clusterManifest("c", "  configRef: standard\n  shards: 1\n  replicasPerShard: -1\n"),
			want: []string{"spec.replicasPerShard", "greater than or equal to 0"}},
		{name: "largest shape", manifest: clusterManifest("c", "  configRef: standard\n  shards: 200\n  replicasPerShard: 4\n")},
		{name: "too many shards", manifest: clusterManifest("c", "  configRef: standard\n  shards: 1001\n  replicasPerShard: 0\n"),
			want: []string{"spec.shards", "less than or equal to 1000"}},
		{name: "too many replicas", manifest: clusterManifest("c", "  configRef: standard\n  shards: 1\n  replicasPerShard: 6\n"),
			want: []string{"spec.replicasPerShard", "less than or equal to 5"}},
		{name: "too many nodes", manifest: clusterManifest("c", "  configRef: standard\n  shards: 201\n  replicasPerShard: 4\n"),
			want: []string{"shards x (replicasPerShard + 1) must be at most 1000 nodes"}},
		{name: "autoscaling beyond the node limit", manifest: clusterManifest("c", "  configRef: standard\n  shards: 1\n  replicasPerShard: 1\n  autoscaling:\n    minShards: 1\n    maxShards: 600\n    scaleOut: {cpuPercent: 80}\n"),
			want: []string{"autoscaling.maxShards x (replicasPerShard + 1) must be at most 1000 nodes"}},
		{name: "restore naming nothing", manifest: clusterManifest("c", minimalSpec+"  restore: {}\n"),
			want: []string{"spec.restore", "name exactly one of backupName and source"}},
		{name: "restore naming both", manifest: clusterManifest("c", minimalSpec+"  restore:\n    backupName: b\n    source:\n      path: p\n      store: {bucket: bkt, endpoint: \"https://s3.example.com\", credentialsSecretRef: c}\n"),
			want: []string{"spec.restore", "name exactly one of backupName and source"}},
		{name: "restore path from the root", manifest: clusterManifest("c", minimalSpec+"  restore:\n    source:\n      path: /p\n      store: {bucket: bkt, endpoint: \"https://s3.example.com\", credentialsSecretRef: c}\n"),
			want: []string{"spec.restore.source.path", "path must not start with /"}},
		{name: "tls without secretRef", manifest: clusterManifest("c", minimalSpec+"  tls: {}\n"),
			want: []string{"spec.tls.secretRef", "Required value"}},
		{name: "reserved pod annotation", manifest: clusterManifest("c", minimalSpec+"  podAnnotations:\n    valkey.gomomento.com/shard: \"1\"\n"),
			want: []string{"spec.podAnnotations", "prefix valkey.gomomento.com/ are reserved"}},
		{name: "zoneSpread not an enum value", manifest: clusterManifest("c", minimalSpec+"  placement:\n    zoneSpread: always\n"),
			want: []string{"spec.placement.zoneSpread", "Unsupported value"}},
		{name: "duplicate username", manifest: clusterManifest("c", minimalSpec+"  acl:\n  - "+binding("app")+"\n  - "+binding("app")+"\n"),
			want: []string{"spec.acl", "duplicate username in ACL bindings"}},
		{name: "autoscaling max below min", manifest: clusterManifest("c", minimalSpec+"  autoscaling:\n    minShards: 3\n    maxShards: 2\n    scaleOut: {memoryPercent: 80}\n"),
			want: []string{"spec.autoscaling", "maxShards must be greater than or equal to minShards"}},
		{name: "autoscaling scale-in memory not below scale-out", manifest: clusterManifest("c", minimalSpec+"  autoscaling:\n    minShards: 1\n    maxShards: 2\n    scaleOut: {memoryPercent: 80}\n    scaleIn: {memoryPercent: 80}\n"),
			want: []string{"spec.autoscaling", "scaleIn.memoryPercent must be below scaleOut.memoryPercent"}},
		{name: "autoscaling scale-in cpu not below scale-out", manifest: clusterManifest("c", minimalSpec+"  autoscaling:\n    minShards: 1\n    maxShards: 2\n    scaleOut: {cpuPercent: 50}\n    scaleIn: {cpuPercent: 60}\n"),
			want: []string{"spec.autoscaling", "scaleIn.cpuPercent must be below scaleOut.cpuPercent"}},
		{name: "autoscaling percent above 100", manifest: clusterManifest("c", minimalSpec+"  autoscaling:\n    minShards: 1\n    maxShards: 2\n    scaleOut: {memoryPercent: 180}\n"),
			want: []string{"spec.autoscaling.scaleOut.memoryPercent", "less than or equal to 100"}},
	})
}

// update applies mutate to the stored object and returns the update's error.
func update(t *testing.T, manifest string, mutate func(spec map[string]any)) error {
	t.Helper()
	obj := get(t, manifest)
	spec, _, _ := unstructured.NestedMap(obj.Object, "spec")
	mutate(spec)
	if err := unstructured.SetNestedMap(obj.Object, spec, "spec"); err != nil {
		t.Fatalf("setting spec: %v", err)
	}
	return env.Client.Update(context.Background(), obj)
}

func TestValkeyClusterTLSPresenceIsImmutable(t *testing.T) {
	plain := clusterManifest("plain", minimalSpec)
	withTLS := clusterManifest("with-tls", minimalSpec+"  tls:\n    secretRef: with-tls-cert\n")
	for _, m := range []string{plain, withTLS} {
		if err := create(t, m); err != nil {
			t.Fatalf("create: %v", err)
		}
	}
	const msg = "spec.tls cannot be added or removed after creation"

	t.Run("adding tls is rejected", func(t *testing.T) {
		err := update(t, plain, func(spec map[string]any) { spec["tls"] = map[string]any{"secretRef": "late"} })
		assertAdmission(t, err, []string{"spec.tls", msg})
	})
	t.Run("removing tls is rejected", func(t *testing.T) {
		err := update(t, withTLS, func(spec map[string]any) { delete(spec, "tls") })
		assertAdmission(t, err, []string{"spec.tls", msg})
	})
	t.Run("changing secretRef is accepted", func(t *testing.T) {
		err := update(t, withTLS, func(spec map[string]any) { spec["tls"] = map[string]any{"secretRef": "renamed-cert"} })
		assertAdmission(t, err, nil)
		got, _, _ := unstructured.NestedString(get(t, withTLS).Object, "spec", "tls", "secretRef")
		if got != "renamed-cert" {
			t.Fatalf("secretRef = %q after update, want renamed-cert", got)
		}
	})
	t.Run("other edits of a plaintext cluster are accepted", func(t *testing.T) {
		err := update(t, plain, func(spec map[string]any) { spec["shards"] = int64(2) })
		assertAdmission(t, err, nil)
	})
}

// spec.restore is read when a cluster is created: adding one to a live
// cluster, changing or removing it is refused.
func TestValkeyClusterRestoreIsImmutable(t *testing.T) {
	plain := clusterManifest("no-restore", minimalSpec)
	restored := clusterManifest("restored", minimalSpec+"  restore:\n    backupName: nightly\n")
	for _, m := range []string{plain, restored} {
		if err := create(t, m); err != nil {
			t.Fatalf("create: %v", err)
		}
	}
	const msg = "spec.restore is read when the cluster is created"
	for name, tc := range map[string]struct {
		manifest string
		mutate   func(spec map[string]any)
	}{
		"adding":   {plain, func(spec map[string]any) { spec["restore"] = map[string]any{"backupName": "nightly"} }},
		"changing": {restored, func(spec map[string]any) { spec["restore"] = map[string]any{"backupName": "other"} }},
		"removing": {restored, func(spec map[string]any) { delete(spec, "restore") }},
	} {
		t.Run(name, func(t *testing.T) {
			assertAdmission(t, update(t, tc.manifest, tc.mutate), []string{"spec.restore", msg})
		})
	}
	t.Run("other edits of a restored cluster are accepted", func(t *testing.T) {
		assertAdmission(t, update(t, restored, func(spec map[string]any) { spec["shards"] = int64(2) }), nil)
	})
}

// The seed's cluster, edited as the TLS page describes, through the typed API.
func TestSeedClusterSecretRefRotation(t *testing.T) {
	if err := create(t, seedCluster); err != nil {
		t.Fatalf("the seed example must be accepted verbatim: %v", err)
	}
	ctx := context.Background()
	var vc valkeyv1.ValkeyCluster
	key := client.ObjectKey{Namespace: "my-app", Name: "my-cluster"}
	if err := env.Client.Get(ctx, key, &vc); err != nil {
		t.Fatalf("get: %v", err)
	}
	if vc.Spec.TLS == nil || vc.Spec.TLS.SecretRef != "my-cluster-tls" || vc.Spec.Shards != 3 || vc.Spec.ReplicasPerShard != 1 {
		t.Fatalf("stored spec differs from the manifest: %+v", vc.Spec)
	}
	vc.Spec.TLS.SecretRef = "my-cluster-tls-2"
	if err := env.Client.Update(ctx, &vc); err != nil {
		t.Fatalf("changing tls.secretRef must be accepted: %v", err)
	}
	vc.Spec.TLS = nil
	err := env.Client.Update(ctx, &vc)
	assertAdmission(t, err, []string{"spec.tls cannot be added or removed after creation"})
}

// The scale subresource drives spec.shards, so HPA or KEDA can target a cluster.
func TestValkeyClusterScaleSubresource(t *testing.T) {
	m := clusterManifest("scalable", "  configRef: standard\n  shards: 3\n  replicasPerShard: 1\n")
	if err := create(t, m); err != nil {
		t.Fatalf("create: %v", err)
	}
	ctx := context.Background()
	vc := &valkeyv1.ValkeyCluster{}
	if err := env.Client.Get(ctx, client.ObjectKey{Namespace: "clusters", Name: "scalable"}, vc); err != nil {
		t.Fatalf("get: %v", err)
	}
	scale := &autoscalingv1.Scale{}
	if err := env.Client.SubResource("scale").Get(ctx, vc, scale); err != nil {
		t.Fatalf("get scale: %v", err)
	}
	if scale.Spec.Replicas != 3 {
		t.Fatalf("scale.spec.replicas = %d, want 3", scale.Spec.Replicas)
	}
	scale.Spec.Replicas = 5
	if err := env.Client.SubResource("scale").Update(ctx, vc, client.WithSubResourceBody(scale)); err != nil {
		t.Fatalf("update scale: %v", err)
	}
	if err := env.Client.Get(ctx, client.ObjectKeyFromObject(vc), vc); err != nil {
		t.Fatalf("get: %v", err)
	}
	if vc.Spec.Shards != 5 {
		t.Fatalf("spec.shards = %d after scaling, want 5", vc.Spec.Shards)
	}
	scale.Spec.Replicas = 0
	err := env.Client.SubResource("scale").Update(ctx, vc, client.WithSubResourceBody(scale))
	assertAdmission(t, err, []string{"spec.shards"})
}
