package render

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestControllingCluster(t *testing.T) {
	notController := clusterOwner()
	notController[0].Controller = nil
	otherGroup := clusterOwner()
	otherGroup[0].APIVersion = "example.com/v1"
	tests := []struct {
		name   string
		owners []metav1.OwnerReference
		want   bool
	}{
		{"a node of the cluster", clusterOwner(), true},
		{"a pod of a node", nodeOwner(), false},
		{"owned, not controlled", notController, false},
		{"a kind of the same name in another group", otherGroup, false},
		{"no owner", nil, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := &metav1.ObjectMeta{Namespace: testNamespace, Name: "x", OwnerReferences: tt.owners}
			vc := ControllingCluster(o)
			if (vc != nil) != tt.want {
				t.Fatalf("ControllingCluster = %v, want a cluster: %v", vc, tt.want)
			}
			if vc != nil && (vc.Namespace != testNamespace || vc.Name != testClusterName || vc.UID != testClusterUID) {
				t.Fatalf("ControllingCluster = %s/%s %s, want %s/%s %s", vc.Namespace, vc.Name, vc.UID, testNamespace, testClusterName, testClusterUID)
			}
		})
	}
}
