package v1alpha1_test

import "testing"

func backupManifest(name, spec string) string {
	return `apiVersion: valkey.gomomento.com/v1alpha1
kind: ValkeyBackup
metadata:
  name: ` + name + `
  namespace: backups
spec:
` + spec
}

const backupSpec = `  cluster: orders
  destination:
    endpoint: https://s3.eu-west-1.amazonaws.com
    bucket: valkey-backups
    credentialsSecretRef: backup-credentials
`

func TestValkeyBackupAdmission(t *testing.T) {
	runAdmission(t, []admissionCase{
		{name: "minimal", manifest: backupManifest("minimal", backupSpec)},
		{name: "every field", manifest: backupManifest("every-field", backupSpec+`    prefix: prod/eu
    region: eu-west-1
    caSecretRef: store-ca
    insecure: true
`)},
		{name: "bucket missing", manifest: backupManifest("no-bucket", "  cluster: orders\n  destination:\n    endpoint: https://s3.example.com\n    credentialsSecretRef: c\n"),
			want: []string{"spec.destination.bucket", "Required value"}},
		{name: "cluster missing", manifest: backupManifest("no-cluster", "  destination:\n    endpoint: https://s3.example.com\n    bucket: b12\n    credentialsSecretRef: c\n"),
			want: []string{"spec.cluster", "Required value"}},
		{name: "credentials missing", manifest: backupManifest("no-creds", "  cluster: orders\n  destination:\n    endpoint: https://s3.example.com\n    bucket: b12\n"),
			want: []string{"spec.destination.credentialsSecretRef", "Required value"}},
		{name: "endpoint with a path", manifest: backupManifest("endpoint-path", "  cluster: orders\n  destination:\n    endpoint: https://s3.example.com/bucket\n    bucket: b12\n    credentialsSecretRef: c\n"),
			want: []string{"spec.destination.endpoint", "should match"}},
		{name: "endpoint without a scheme", manifest: backupManifest("endpoint-scheme", "  cluster: orders\n  destination:\n    endpoint: s3.example.com\n    bucket: b12\n    credentialsSecretRef: c\n"),
			want: []string{"spec.destination.endpoint", "should match"}},
		{name: "prefix with a leading slash", manifest: backupManifest("prefix-slash", backupSpec+"    prefix: /prod\n"),
			want: []string{"prefix must not start or end with /"}},
	})
}

// A backup is taken once: its spec cannot change.
func TestValkeyBackupSpecIsImmutable(t *testing.T) {
	m := backupManifest("immutable", backupSpec)
	if err := create(t, m); err != nil {
		t.Fatalf("create: %v", err)
	}
	for _, tc := range []struct {
		name   string
		mutate func(map[string]any)
	}{
		{name: "cluster", mutate: func(s map[string]any) { s["cluster"] = "other" }},
		{name: "bucket", mutate: func(s map[string]any) { s["destination"].(map[string]any)["bucket"] = "other-bucket" }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assertAdmission(t, update(t, m, tc.mutate), []string{"spec is immutable"})
		})
	}
}
