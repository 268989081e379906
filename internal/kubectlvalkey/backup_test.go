package kubectlvalkey

import (
	"context"
	"strings"
	"testing"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"

	valkeyv1 "github.com/gomomento/valkey-operator/api/v1alpha1"
)

// Backup and restore command lines that fail before any cluster access.
func TestBackupRestoreCommandLine(t *testing.T) {
	store := []string{"--bucket", "b", "--endpoint", "https://s3.example", "--credentials", "creds"}
	cases := []struct {
		name    string
		args    []string
		wantErr string
	}{
		{name: "backup without cluster", args: append([]string{"backup"}, store...), wantErr: "want exactly one CLUSTER argument, got 0"},
		{name: "backup without store", args: []string{"backup", "cache"}, wantErr: "--bucket, --endpoint, --credentials required"},
		{name: "backup without credentials", args: []string{"backup", "cache", "--bucket", "b", "--endpoint", "https://s3.example"}, wantErr: "backup: --credentials required"},
		{name: "backup to plain http", args: []string{"backup", "cache", "--bucket", "b", "--endpoint", "http://minio:9000", "--credentials", "c"},
			wantErr: `--endpoint "http://minio:9000" is plain http: add --insecure`},
		{name: "backup to no scheme", args: []string{"backup", "cache", "--bucket", "b", "--endpoint", "s3.example", "--credentials", "c"},
			wantErr: "must start with https://"},
		{name: "backup prefix with a slash", args: append([]string{"backup", "cache", "--prefix", "prod/"}, store...), wantErr: `--prefix "prod/" must not start or end with /`},
		{name: "backup timeout without wait", args: append([]string{"backup", "cache", "--timeout", "1m"}, store...), wantErr: "--timeout bounds --wait: add --wait"},
		{name: "backup zero timeout", args: append([]string{"backup", "cache", "--wait", "--timeout", "0s"}, store...), wantErr: "--timeout must be positive"},
		{name: "restore without backup", args: []string{"restore", "--into", "copy"}, wantErr: "want exactly one BACKUP argument, got 0"},
		{name: "restore without into", args: []string{"restore", "nightly"}, wantErr: "restore: --into NEW_CLUSTER required"},
		{name: "restore to no shards", args: []string{"restore", "nightly", "--into", "copy", "--shards", "0"}, wantErr: "--shards must be at least 1, got 0"},
		{name: "restore negative replicas", args: []string{"restore", "nightly", "--into", "copy", "--replicas=-1"}, wantErr: "--replicas must not be negative"},
		{name: "restore empty config", args: []string{"restore", "nightly", "--into", "copy", "--config", ""}, wantErr: "--config must not be empty"},
		{name: "restore timeout without wait", args: []string{"restore", "nightly", "--into", "copy", "--timeout", "1m"}, wantErr: "--timeout bounds --wait"},
		{name: "restore unknown flag", args: []string{"restore", "nightly", "--into", "copy", "--bogus"}, wantErr: "unknown flag: --bogus"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var stdout, stderr strings.Builder
			err := Run(context.Background(), tc.args, Env{Stdout: &stdout, Stderr: &stderr})
			if got := ExitCode(err); got != 2 {
				t.Errorf("exit code = %d (err %v), want 2", got, err)
			}
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("err = %v, want it to contain %q", err, tc.wantErr)
			}
		})
	}
}

func TestUsageNamesBackupAndRestore(t *testing.T) {
	var out strings.Builder
	if err := Run(context.Background(), []string{"help"}, Env{Stdout: &out}); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"backup CLUSTER --bucket BUCKET --endpoint URL --credentials SECRET", "restore BACKUP --into NEW_CLUSTER"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("usage lacks %q:\n%s", want, out.String())
		}
	}
}

var backupTime = time.Date(2026, 12, 5, 4, 15, 0, 0, time.UTC)

// What backup creates, from the flags and the clock.
func TestBackupCreates(t *testing.T) {
	allFlags := []string{"backup", "cache", "-n", testNS, "--bucket", "valkey-backups", "--endpoint", "http://minio:9000", "--insecure",
		"--credentials", "store-creds", "--prefix", "prod", "--region", "eu-west-1", "--ca-secret", "store-ca"}
	cases := []struct {
		name     string
		args     []string
		wantName string
		wantDest valkeyv1.BackupDestination
		wantOut  string
	}{
		{
			name:     "every flag, default name",
			args:     allFlags,
			wantName: "cache-20261205t041500z",
			wantDest: valkeyv1.BackupDestination{Bucket: "valkey-backups", Prefix: "prod", Endpoint: "http://minio:9000", Insecure: true,
				Region: "eu-west-1", CredentialsSecretRef: "store-creds", CASecretRef: "store-ca"},
			wantOut: "ValkeyBackup app/cache-20261205t041500z created: cluster cache to bucket valkey-backups at http://minio:9000, prefix prod\n",
		},
		{
			name:     "required flags, given name",
			args:     []string{"backup", "--name", "nightly", "cache", "--bucket", "b", "--endpoint", "https://s3.example", "--credentials", "c"},
			wantName: "nightly",
			wantDest: valkeyv1.BackupDestination{Bucket: "b", Endpoint: "https://s3.example", CredentialsSecretRef: "c"},
			wantOut:  "ValkeyBackup app/nightly created: cluster cache to bucket b at https://s3.example\n",
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := fakeOperator(t, client.ObjectKey{}, nil, tlsCluster())
			var out strings.Builder
			// Local time, to show the name is dated in UTC.
			now := backupTime.In(time.FixedZone("UTC+9", 9*3600))
			if err := runAgainst(c, tc.args, Env{Stdout: &out, Now: func() time.Time { return now }}); err != nil {
				t.Fatal(err)
			}
			var b valkeyv1.ValkeyBackup
			if err := c.Get(context.Background(), client.ObjectKey{Namespace: testNS, Name: tc.wantName}, &b); err != nil {
				t.Fatalf("the backup was not created as %s: %v", tc.wantName, err)
			}
			if b.Spec.Cluster != testCluster || b.Spec.Destination != tc.wantDest {
				t.Errorf("spec = %+v, want cluster %s and destination %+v", b.Spec, testCluster, tc.wantDest)
			}
			if out.String() != tc.wantOut {
				t.Errorf("output %q, want %q", out.String(), tc.wantOut)
			}
		})
	}
}

func TestBackupOfAMissingClusterCreatesNothing(t *testing.T) {
	c := fakeOperator(t, client.ObjectKey{}, nil, tlsCluster())
	err := runAgainst(c, []string{"backup", "orders", "--bucket", "b", "--endpoint", "https://s3.example", "--credentials", "c"}, Env{})
	if err == nil || err.Error() != "ValkeyCluster app/orders not found: no backup created" || ExitCode(err) != 1 {
		t.Fatalf("err = %v (exit %d), want the missing cluster named, exit 1", err, ExitCode(err))
	}
	var list valkeyv1.ValkeyBackupList
	if err := c.List(context.Background(), &list); err != nil {
		t.Fatal(err)
	}
	if len(list.Items) != 0 {
		t.Errorf("created %d ValkeyBackups for a missing cluster", len(list.Items))
	}
}

// --wait follows the backup through the operator's phases to its end.
func TestBackupWait(t *testing.T) {
	key := client.ObjectKey{Namespace: testNS, Name: "nightly"}
	completed := func(o client.Object) {
		b := o.(*valkeyv1.ValkeyBackup)
		b.Status = valkeyv1.ValkeyBackupStatus{
			Phase: valkeyv1.BackupCompleted,
			Path:  "s3://b/app/cache/nightly/",
			Bytes: 3072,
			Shards: []valkeyv1.BackupShard{
				{Index: 1, Node: "cache-7e8f9", Keys: 200, Bytes: 2048},
				{Index: 0, Node: "cache-1a2b3", Keys: 100, Bytes: 1024},
			},
		}
	}
	cases := []struct {
		name     string
		steps    []operatorStep
		timeout  string
		wantOut  string
		wantErr  string
		wantCode int
	}{
		{
			name:  "Completed",
			steps: []operatorStep{backupPhase("", ""), backupPhase(valkeyv1.BackupPending, "waiting for the cluster to be Active"), backupPhase(valkeyv1.BackupRunning, ""), backupPhase(valkeyv1.BackupRunning, ""), completed},
			wantOut: `ValkeyBackup app/nightly created: cluster cache to bucket b at https://s3.example
  Pending
  Pending: waiting for the cluster to be Active
  Running
  Completed
Path: s3://b/app/cache/nightly/
SHARD  NODE         KEYS  BYTES
0      cache-1a2b3  100   1024
1      cache-7e8f9  200   2048
total  2 shards     300   3072
`,
		},
		{
			name:     "Failed",
			steps:    []operatorStep{backupPhase(valkeyv1.BackupRunning, ""), backupPhase(valkeyv1.BackupFailed, "shard 1: writing s3://b/app/cache/nightly/shard-1.rdb:\nAccessDenied")},
			wantOut:  "  Running\n  Failed: shard 1: writing s3://b/app/cache/nightly/shard-1.rdb: AccessDenied\n",
			wantErr:  "ValkeyBackup app/nightly Failed: shard 1: writing s3://b/app/cache/nightly/shard-1.rdb: AccessDenied",
			wantCode: 1,
		},
		{
			name:     "never ends",
			steps:    []operatorStep{backupPhase(valkeyv1.BackupRunning, "streaming 2 shards")},
			timeout:  "50ms",
			wantOut:  "  Running: streaming 2 shards\n",
			wantErr:  "gave up waiting for ValkeyBackup app/nightly after 50ms (Running: streaming 2 shards); the operator goes on with it",
			wantCode: 1,
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := fakeOperator(t, key, tc.steps, tlsCluster())
			args := []string{"backup", "cache", "--name", "nightly", "--bucket", "b", "--endpoint", "https://s3.example", "--credentials", "c", "--wait"}
			if tc.timeout != "" {
				args = append(args, "--timeout", tc.timeout)
			}
			var out strings.Builder
			err := runAgainst(c, args, Env{Stdout: &out, PollInterval: time.Millisecond})
			if ExitCode(err) != tc.wantCode {
				t.Errorf("exit code %d (err %v), want %d", ExitCode(err), err, tc.wantCode)
			}
			if tc.wantErr != "" && (err == nil || err.Error() != tc.wantErr) {
				t.Errorf("err = %v\nwant  %s", err, tc.wantErr)
			}
			if !strings.HasSuffix(out.String(), tc.wantOut) {
				t.Errorf("output:\n%s\nwant it to end with:\n%s", out.String(), tc.wantOut)
			}
		})
	}
}

// A one-shard backup, whose shard left its size out: the total is the
// operator's sum.
func TestWriteBackupResultOneShard(t *testing.T) {
	b := &valkeyv1.ValkeyBackup{Status: valkeyv1.ValkeyBackupStatus{Path: "s3://b/x/", Bytes: 512,
		Shards: []valkeyv1.BackupShard{{Index: 0, Node: "cache-1a2b3", Keys: 7}}}}
	var out strings.Builder
	if err := writeBackupResult(&out, b); err != nil {
		t.Fatal(err)
	}
	want := `Path: s3://b/x/
SHARD  NODE         KEYS  BYTES
0      cache-1a2b3  7     0
total  1 shard      7     512
`
	if out.String() != want {
		t.Errorf("got:\n%s\nwant:\n%s", out.String(), want)
	}
}
