package render

import (
	"bytes"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestNewPasswords(t *testing.T) {
	random := slices.Concat(bytes.Repeat([]byte{0x01}, 64), bytes.Repeat([]byte{0xfe}, 64), bytes.Repeat([]byte{0x7a}, 64))
	p, err := NewPasswords(bytes.NewReader(random))
	if err != nil {
		t.Fatal(err)
	}
	if p.Operator != strings.Repeat("01", 64) || p.Replication != strings.Repeat("fe", 64) || p.Exporter != strings.Repeat("7a", 64) {
		t.Fatalf("got %+v", p)
	}
	if _, err := NewPasswords(bytes.NewReader(random[:150])); err == nil {
		t.Fatal("want an error when randomness runs out")
	}
}

func TestPasswordsFromSecret(t *testing.T) {
	good := testPasswords
	secret := func(mutate func(map[string][]byte)) *corev1.Secret {
		s := testCluster(false).OperatorAuthSecret(good)
		mutate(s.Data)
		return s
	}
	tests := []struct {
		name    string
		secret  *corev1.Secret
		want    Passwords
		wantErr string
	}{
		{name: "round trip", secret: secret(func(map[string][]byte) {}), want: good},
		{
			name:   "a Secret from before the exporter's user",
			secret: secret(func(d map[string][]byte) { delete(d, KeyExporterPassword) }),
			want:   Passwords{Operator: good.Operator, Replication: good.Replication},
		},
		{
			name:    "a malformed exporter password",
			secret:  secret(func(d map[string][]byte) { d[KeyExporterPassword] = []byte("aaaa") }),
			wantErr: `key "exporter-password" is not 128 lowercase hex characters`,
		},
		{
			name: "a rotation before its switch",
			secret: secret(func(d map[string][]byte) {
				d[keyNextOperatorPassword] = []byte(strings.Repeat("c", 128))
				d[keyNextReplicationPassword] = []byte(strings.Repeat("d", 128))
			}),
			want: Passwords{Operator: good.Operator, Replication: good.Replication, Exporter: good.Exporter,
				NextOperator: strings.Repeat("c", 128), NextReplication: strings.Repeat("d", 128)},
		},
		{
			name: "a rotation after its switch",
			secret: secret(func(d map[string][]byte) {
				d[keyPreviousOperatorPassword] = []byte(strings.Repeat("c", 128))
				d[keyPreviousReplicationPassword] = []byte(strings.Repeat("d", 128))
			}),
			want: Passwords{Operator: good.Operator, Replication: good.Replication, Exporter: good.Exporter,
				PreviousOperator: strings.Repeat("c", 128), PreviousReplication: strings.Repeat("d", 128)},
		},
		{
			name:    "half a rotation",
			secret:  secret(func(d map[string][]byte) { d[keyNextOperatorPassword] = []byte(strings.Repeat("c", 128)) }),
			wantErr: `keys "next-operator-password" and "next-repl-password" must be set together`,
		},
		{
			name: "both sides of a rotation",
			secret: secret(func(d map[string][]byte) {
				for _, k := range []string{keyNextOperatorPassword, keyNextReplicationPassword, keyPreviousOperatorPassword, keyPreviousReplicationPassword} {
					d[k] = []byte(strings.Repeat("c", 128))
				}
			}),
			wantErr: "a rotation cannot have both next and previous passwords",
		},
		{
			name:    "a malformed next password",
			secret:  secret(func(d map[string][]byte) { d[keyNextReplicationPassword] = []byte("aaaa") }),
			wantErr: `key "next-repl-password" is not 128 lowercase hex characters`,
		},
		{
			name:    "missing operator password",
			secret:  secret(func(d map[string][]byte) { delete(d, KeyOperatorPassword) }),
			wantErr: `missing key "operator-password"`,
		},
		{
			name:    "missing replication password",
			secret:  secret(func(d map[string][]byte) { delete(d, keyReplicationPassword) }),
			wantErr: `missing key "repl-password"`,
		},
		{
			name:    "a line break would reach primaryauth.conf",
			secret:  secret(func(d map[string][]byte) { d[keyReplicationPassword] = []byte(strings.Repeat("a", 127) + "\n") }),
			wantErr: `key "repl-password" is not 128 lowercase hex characters`,
		},
		{
			name:    "uppercase",
			secret:  secret(func(d map[string][]byte) { d[KeyOperatorPassword] = []byte(strings.Repeat("A", 128)) }),
			wantErr: `key "operator-password" is not 128 lowercase hex characters`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := PasswordsFromSecret(tt.secret)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want %q", err, tt.wantErr)
				}
				if strings.Contains(err.Error(), "aaaa") || strings.Contains(err.Error(), "AAAA") {
					t.Fatal("the error reveals the password")
				}
				return
			}
			if err != nil || got != tt.want {
				t.Fatalf("got %+v, %v", got, err)
			}
		})
	}
}

func TestOperatorAuthSecret(t *testing.T) {
	got := testCluster(false).OperatorAuthSecret(testPasswords)
	want := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{
			Name: "my-cluster-operator-auth", Namespace: testNamespace,
			Labels: managedLabels, OwnerReferences: clusterOwner(),
			Finalizers: []string{"valkey.gomomento.com/credentials"},
		},
		Type: corev1.SecretTypeOpaque,
		Data: map[string][]byte{
			"operator-password": []byte(testPasswords.Operator),
			"repl-password":     []byte(testPasswords.Replication),
			"exporter-password": []byte(testPasswords.Exporter),
			"primaryauth.conf":  []byte("primaryauth " + testPasswords.Replication + "\n"),
		},
	}
	assertEqual(t, got, want)
}

// The restore copy holds the same data under its own name, without the
// finalizer: it is only ever deleted by the operator or with its cluster.
func TestOperatorAuthRestoreSecret(t *testing.T) {
	c := testCluster(false)
	got, orig := c.OperatorAuthRestoreSecret(testPasswords), c.OperatorAuthSecret(testPasswords)
	if got.Name != "my-cluster-operator-auth-restore" || len(got.Finalizers) != 0 {
		t.Errorf("restore Secret %s with finalizers %v", got.Name, got.Finalizers)
	}
	assertEqual(t, got.Data, orig.Data)
}
