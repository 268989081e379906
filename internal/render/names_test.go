package render

import (
	"bytes"
	"regexp"
	"testing"
	"testing/iotest"
)

func TestNames(t *testing.T) {
	tests := []struct{ got, want string }{
		{serviceName("c"), "c"},
		{OperatorAuthSecretName("c"), "c-operator-auth"},
		{ACLSecretName("c"), "c-acl"},
		{NodeTLSSecretName("my-cluster"), "my-cluster-node-tls"},
		{NodeConfigMapName("c-1a4f2"), "c-1a4f2-config"},
		{PodDisruptionBudgetName("c", 0), "c-shard-0"},
		{PodDisruptionBudgetName("c", 12), "c-shard-12"},
		{PodFQDN("c-1a4f2", "c", "ns", ""), "c-1a4f2.c.ns.svc.cluster.local"},
		{PodFQDN("c-1a4f2", "c", "ns", "example.internal"), "c-1a4f2.c.ns.svc.example.internal"},
		{configFile, "/etc/valkey/conf/valkey.conf"},
		{aclFilePath, "/etc/valkey/acl/users.acl"},
		{primaryAuthFile, "/etc/valkey/auth/primaryauth.conf"},
		{nodesConfFile, "/var/lib/valkey/nodes.conf"},
		{TLSCertFile, "/etc/valkey/tls/tls.crt"},
		{TLSKeyFile, "/etc/valkey/tls/tls.key"},
		{TLSCAFile, "/etc/valkey/tls/ca.crt"},
	}
	for _, tt := range tests {
		if tt.got != tt.want {
			t.Errorf("got %q, want %q", tt.got, tt.want)
		}
	}
}

func TestNewNodeName(t *testing.T) {
	tests := []struct {
		name    string
		random  []byte
		want    string
		wantErr bool
	}{
		{name: "five hex characters", random: []byte{0x1a, 0x4f, 0x2b}, want: "my-cluster-1a4f2"},
		{name: "lowercase", random: []byte{0xAB, 0xCD, 0xEF}, want: "my-cluster-abcde"},
		{name: "short random", random: []byte{0x1a}, wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := NewNodeName("my-cluster", bytes.NewReader(tt.random))
			if (err != nil) != tt.wantErr || got != tt.want {
				t.Fatalf("got %q, %v; want %q, error %v", got, err, tt.want, tt.wantErr)
			}
		})
	}
	if _, err := NewNodeName("c", iotest.ErrReader(iotest.ErrTimeout)); err == nil {
		t.Fatal("want the reader's error")
	}
	name, err := NewNodeName("c", bytes.NewReader(bytes.Repeat([]byte{0xff}, 3)))
	if err != nil || !regexp.MustCompile(`^c-[0-9a-f]{5}$`).MatchString(name) {
		t.Fatalf("got %q, %v", name, err)
	}
}
