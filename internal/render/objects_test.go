package render

import (
	"errors"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/gomomento/valkey-operator/internal/resolve"
)

func TestService(t *testing.T) {
	labels := map[string]string{
		"app.kubernetes.io/instance":   testClusterName,
		"app.kubernetes.io/managed-by": "valkey-operator",
		"app.kubernetes.io/part-of":    "valkey",
	}
	want := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: testClusterName, Namespace: testNamespace, Labels: labels, OwnerReferences: clusterOwner()},
		Spec: corev1.ServiceSpec{
			ClusterIP:                "None",
			Selector:                 map[string]string{"app.kubernetes.io/instance": testClusterName},
			PublishNotReadyAddresses: true,
			Ports: []corev1.ServicePort{
				{Name: "valkey", Protocol: corev1.ProtocolTCP, Port: 6379, TargetPort: intstr.FromInt32(6379)},
				{Name: "valkey-bus", Protocol: corev1.ProtocolTCP, Port: 16379, TargetPort: intstr.FromInt32(16379)},
			},
		},
	}
	for _, tls := range []bool{false, true} {
		assertEqual(t, testCluster(tls).Service(), want)
	}
}

func TestACLSecret(t *testing.T) {
	c := testCluster(false)
	got, err := c.ACLSecret([]resolve.User{teamBatch}, testPasswords, "9.0.1", false)
	if err != nil {
		t.Fatal(err)
	}
	file, _ := ACLFile([]resolve.User{teamBatch}, testPasswords, "9.0.1", false)
	want := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "my-cluster-acl", Namespace: testNamespace, Labels: managedLabels, OwnerReferences: clusterOwner()},
		Type:       corev1.SecretTypeOpaque,
		Data:       map[string][]byte{"users.acl": []byte(file)},
	}
	assertEqual(t, got, want)

	if _, err := c.ACLSecret(nil, testPasswords, "latest", false); err == nil || !strings.Contains(err.Error(), "my-app/my-cluster") {
		t.Fatalf("err = %v, want an error naming the cluster", err)
	}
}

func TestNodeTLSSecret(t *testing.T) {
	source := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "my-cluster-tls", Namespace: testNamespace, Labels: map[string]string{"user": "label"}},
		Type:       corev1.SecretTypeTLS,
		Data: map[string][]byte{
			"tls.crt": []byte("cert"), "tls.key": []byte("key"), "ca.crt": []byte("ca"),
			"extra": []byte("not copied"),
		},
	}
	want := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "my-cluster-node-tls", Namespace: testNamespace, Labels: managedLabels, OwnerReferences: clusterOwner()},
		Type:       corev1.SecretTypeTLS,
		Data:       map[string][]byte{"tls.crt": []byte("cert"), "tls.key": []byte("key"), "ca.crt": []byte("ca")},
	}
	assertEqual(t, testCluster(true).NodeTLSSecret(source), want)
}

func TestNodeConfigMap(t *testing.T) {
	base := "aclfile /etc/valkey/acl/users.acl\n" +
		"client-output-buffer-limit replica 134217728 0 0\n" +
		"cluster-config-file /var/lib/valkey/nodes.conf\n" +
		"cluster-enabled yes\n" +
		"cluster-node-timeout 5000\n" +
		"dir /var/lib/valkey\n" +
		"maxmemory 800mb\n" +
		"maxmemory-policy allkeys-lru\n"
	tests := []struct {
		name   string
		tls    bool
		domain string
		want   string
	}{
		{
			name: "plaintext",
			want: base +
				"port 6379\n" +
				"primaryuser _momento_repl\n" +
				"protected-mode no\n" +
				"repl-diskless-sync-delay 1\n" +
				"save \"\"\n" +
				"include /etc/valkey/auth/primaryauth.conf\n",
		},
		{
			name:   "tls announces the pod's name under the cluster domain",
			tls:    true,
			domain: "example.internal",
			want: "aclfile /etc/valkey/acl/users.acl\n" +
				"client-output-buffer-limit replica 134217728 0 0\n" +
				"cluster-announce-hostname my-cluster-1a4f2.my-cluster.my-app.svc.example.internal\n" +
				"cluster-config-file /var/lib/valkey/nodes.conf\n" +
				"cluster-enabled yes\n" +
				"cluster-node-timeout 5000\n" +
				"cluster-preferred-endpoint-type hostname\n" +
				"dir /var/lib/valkey\n" +
				"maxmemory 800mb\n" +
				"maxmemory-policy allkeys-lru\n" +
				"port 0\n" +
				"primaryuser _momento_repl\n" +
				"protected-mode no\n" +
				"repl-diskless-sync-delay 1\n" +
				"save \"\"\n" +
				"tls-auth-clients no\n" +
				"tls-ca-cert-file /etc/valkey/tls/ca.crt\n" +
				"tls-cert-file /etc/valkey/tls/tls.crt\n" +
				"tls-cluster yes\n" +
				"tls-key-file /etc/valkey/tls/tls.key\n" +
				"tls-port 6379\n" +
				"tls-replication yes\n" +
				"include /etc/valkey/auth/primaryauth.conf\n",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := testCluster(tt.tls)
			c.ClusterDomain = tt.domain
			got, err := c.NodeConfigMap(testNode(c, 0))
			if err != nil {
				t.Fatal(err)
			}
			want := &corev1.ConfigMap{
				ObjectMeta: metav1.ObjectMeta{Name: "my-cluster-1a4f2-config", Namespace: testNamespace, Labels: managedLabels, OwnerReferences: nodeOwner()},
				Data:       map[string]string{"valkey.conf": tt.want},
			}
			assertEqual(t, got, want)
		})
	}
}

func TestNodeObjectsRefuseAnotherClustersNode(t *testing.T) {
	c := testCluster(false)
	node := testNode(c, 0)
	node.Spec.ClusterName = "other"
	if _, err := c.NodeConfigMap(node); err == nil {
		t.Fatal("NodeConfigMap: want an error")
	}
	if _, err := c.Pod(node); err == nil {
		t.Fatal("Pod: want an error")
	}
}

func TestNodeConfigMapRefusesInjection(t *testing.T) {
	c := testCluster(false)
	node := testNode(c, 0)
	node.Spec.ValkeySettings = map[string]string{"maxmemory": "1gb\nuser evil on nopass ~* +@all"}
	_, err := c.NodeConfigMap(node)
	var serr *settingError
	if !errors.As(err, &serr) || serr.Key != "maxmemory" {
		t.Fatalf("err = %v, want a settingError for maxmemory", err)
	}
}
