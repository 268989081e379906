package render

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"github.com/gomomento/valkey-operator/api/v1alpha1"
	"github.com/gomomento/valkey-operator/internal/resolve"
)

const (
	testClusterName = "my-cluster"
	testNamespace   = "my-app"
	testNodeName    = "my-cluster-1a4f2"
	testClusterUID  = types.UID("cluster-uid")
	testNodeUID     = types.UID("node-uid")
)

// testCluster is the documented example cluster; tls adds spec.tls.
func testCluster(tls bool) Cluster {
	vc := &v1alpha1.ValkeyCluster{
		ObjectMeta: metav1.ObjectMeta{Name: testClusterName, Namespace: testNamespace, UID: testClusterUID},
		Spec: v1alpha1.ValkeyClusterSpec{
			ConfigRef:        "standard",
			Shards:           3,
			ReplicasPerShard: 1,
			PodAnnotations:   map[string]string{"example.com/team": "batch"},
		},
	}
	if tls {
		vc.Spec.TLS = &v1alpha1.TLSSpec{SecretRef: "my-cluster-tls"}
	}
	return Cluster{Cluster: vc}
}

var testResolved = &resolve.Result{
	Image:     "valkey/valkey:8.0.1",
	ImageName: "valkey-8",
	Version:   "8.0.1",
	CPU:       "500m",
	Memory:    "1Gi",
	Valkey:    map[string]string{"maxmemory": "800mb", "maxmemory-policy": "allkeys-lru"},
	Chain:     []string{"standard"},
}

// testNode is a node as the API server returns it: the builder's output
// with a UID.
func testNode(c Cluster, shard int32) *v1alpha1.ValkeyNode {
	n, err := c.Node(testNodeName, testResolved, shard, v1alpha1.JoinTypeReplica)
	if err != nil {
		panic(err)
	}
	n.UID = testNodeUID
	return n
}

func clusterOwner() []metav1.OwnerReference {
	return []metav1.OwnerReference{{
		APIVersion: "valkey.gomomento.com/v1alpha1", Kind: "ValkeyCluster", Name: testClusterName, UID: testClusterUID,
		Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true),
	}}
}

func nodeOwner() []metav1.OwnerReference {
	return []metav1.OwnerReference{{
		APIVersion: "valkey.gomomento.com/v1alpha1", Kind: "ValkeyNode", Name: testNodeName, UID: testNodeUID,
		Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true),
	}}
}

var managedLabels = map[string]string{
	"app.kubernetes.io/instance":   testClusterName,
	"app.kubernetes.io/managed-by": "valkey-operator",
}
