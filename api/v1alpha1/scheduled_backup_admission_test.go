package v1alpha1_test

import (
	"strings"
	"testing"
)

func scheduledBackupManifest(name, spec string) string {
	return `apiVersion: valkey.gomomento.com/v1alpha1
kind: ValkeyScheduledBackup
metadata:
  name: ` + name + `
  namespace: backups
spec:
` + spec
}

const scheduledBackupSpec = `  cluster: orders
  schedule: "15 4 * * *"
  destination:
    endpoint: https://s3.eu-west-1.amazonaws.com
    bucket: valkey-backups
    credentialsSecretRef: backup-credentials
`

// The schedule string itself is checked by the operator (ScheduleValid),
// which can say which field is wrong; admission checks the shape.
func TestValkeyScheduledBackupAdmission(t *testing.T) {
	runAdmission(t, []admissionCase{
		{name: "minimal", manifest: scheduledBackupManifest("minimal", scheduledBackupSpec)},
		{name: "every field", manifest: scheduledBackupManifest("every-field", scheduledBackupSpec+`    prefix: prod
  retention:
    keepLast: 7
    maxAge: 168h
  suspend: true
`)},
		{name: "a bad cron string is admitted", manifest: scheduledBackupManifest("bad-cron", strings.Replace(scheduledBackupSpec, "15 4 * * *", "61 * * * *", 1))},
		{name: "schedule missing", manifest: scheduledBackupManifest("no-schedule", strings.Replace(scheduledBackupSpec, "  schedule: \"15 4 * * *\"\n", "", 1)),
			want: []string{"spec.schedule", "Required value"}},
		{name: "cluster missing", manifest: scheduledBackupManifest("no-cluster", strings.Replace(scheduledBackupSpec, "  cluster: orders\n", "", 1)),
			want: []string{"spec.cluster", "Required value"}},
		{name: "keepLast zero", manifest: scheduledBackupManifest("keep-zero", scheduledBackupSpec+"  retention:\n    keepLast: 0\n"),
			want: []string{"spec.retention.keepLast", "greater than or equal to 1"}},
		{name: "empty retention", manifest: scheduledBackupManifest("retention-empty", scheduledBackupSpec+"  retention: {}\n"),
			want: []string{"retention needs keepLast, maxAge or both"}},
		{name: "destination checked as a backup's", manifest: scheduledBackupManifest("prefix-slash", scheduledBackupSpec+"    prefix: prod/\n"),
			want: []string{"prefix must not start or end with /"}},
		{name: "name too long for the backups' label", manifest: scheduledBackupManifest(strings.Repeat("n", 64), scheduledBackupSpec),
			want: []string{"name must be at most 63 characters"}},
	})
}
