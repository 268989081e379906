package render

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gomomento/valkey-operator/api/v1alpha1"
)

func TestNode(t *testing.T) {
	placement := &v1alpha1.Placement{Zones: []string{"a", "b"}, NodeSelector: map[string]string{"pool": "valkey"}}
	tests := []struct {
		name          string
		tls           bool
		joinType      string
		exporter      bool
		exporterImage string // Cluster.ExporterImage
		want          func(n *v1alpha1.ValkeyNode)
	}{
		{name: "bootstrap node has no join type", want: func(*v1alpha1.ValkeyNode) {}},
		{
			name:     "replacement replica",
			joinType: v1alpha1.JoinTypeReplica,
			want:     func(n *v1alpha1.ValkeyNode) { n.Labels["valkey.gomomento.com/join-type"] = "replica" },
		},
		{
			name:     "tls records the node TLS Secret and the tls settings",
			tls:      true,
			joinType: v1alpha1.JoinTypeShard,
			want: func(n *v1alpha1.ValkeyNode) {
				n.Labels["valkey.gomomento.com/join-type"] = "shard"
				n.Spec.TLSSecret = "my-cluster-node-tls"
				n.Spec.ValkeySettings, _ = settings(testResolved.Valkey, true, nil)
				n.Spec.ValkeySettings["repl-diskless-sync-delay"] = "1"
				n.Spec.ValkeySettings["client-output-buffer-limit"] = "replica 134217728 0 0"
			},
		},
		{
			name:     "the exporter, in the shipped image by default",
			exporter: true,
			want:     func(n *v1alpha1.ValkeyNode) { n.Spec.ExporterImage = "oliver006/redis_exporter:v1.45.0" },
		},
		{
			name:          "the exporter in the operator's image",
			exporter:      true,
			exporterImage: "registry.example/redis_exporter:v1.80.0",
			want:          func(n *v1alpha1.ValkeyNode) { n.Spec.ExporterImage = "registry.example/redis_exporter:v1.80.0" },
		},
		{
			name:          "an exporter image alone runs no exporter",
			exporterImage: "registry.example/redis_exporter:v1.80.0",
			want:          func(*v1alpha1.ValkeyNode) {},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := testCluster(tt.tls)
			c.Cluster.Spec.Placement = placement
			c.ExporterImage = tt.exporterImage
			r := *testResolved
			r.Exporter = tt.exporter
			got, err := c.Node(testNodeName, &r, 2, tt.joinType)
			if err != nil {
				t.Fatal(err)
			}
			settings, _ := settings(testResolved.Valkey, false, nil)
			settings["repl-diskless-sync-delay"] = "1"
			settings["client-output-buffer-limit"] = "replica 134217728 0 0"
			want := &v1alpha1.ValkeyNode{
				TypeMeta: metav1.TypeMeta{APIVersion: "valkey.gomomento.com/v1alpha1", Kind: "ValkeyNode"},
				ObjectMeta: metav1.ObjectMeta{
					Name: testNodeName, Namespace: testNamespace,
					Labels: map[string]string{
						"app.kubernetes.io/instance":   testClusterName,
						"app.kubernetes.io/managed-by": "valkey-operator",
					},
					Finalizers:      []string{"valkey.gomomento.com/node-cleanup"},
					OwnerReferences: clusterOwner(),
				},
				Spec: v1alpha1.ValkeyNodeSpec{
					ClusterName:    testClusterName,
					Image:          "valkey/valkey:8.0.1",
					CPU:            "500m",
					Memory:         "1Gi",
					ValkeySettings: settings,
					ShardIndex:     2,
					Placement:      placement,
					Lifecycle:      v1alpha1.LifecycleJoining,
				},
			}
			tt.want(want)
			assertEqual(t, got, want)
			if got.Spec.Placement == placement {
				t.Fatal("placement is not a snapshot")
			}
			if changed, why := Outdated(got.Spec, want.Spec); changed {
				t.Fatalf("a fresh node is outdated: %s", why)
			}
		})
	}
}

func TestNodeRefusesBadSettings(t *testing.T) {
	r := *testResolved
	r.Valkey = map[string]string{"maxmemory": "1gb\r\nuser x on"}
	if _, err := testCluster(false).Node(testNodeName, &r, 0, ""); err == nil {
		t.Fatal("want an error")
	}
}
