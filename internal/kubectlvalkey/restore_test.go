package kubectlvalkey

import (
	"context"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	valkeyv1 "github.com/gomomento/valkey-operator/api/v1alpha1"
)

// nightly is a backup of the test cluster with two shards.
func nightly(phase valkeyv1.BackupPhase, message string) *valkeyv1.ValkeyBackup {
	return &valkeyv1.ValkeyBackup{
		ObjectMeta: metav1.ObjectMeta{Namespace: testNS, Name: "nightly"},
		Spec: valkeyv1.ValkeyBackupSpec{Cluster: testCluster, Destination: valkeyv1.BackupDestination{
			Bucket: "b", Endpoint: "https://s3.example", CredentialsSecretRef: "c"}},
		Status: valkeyv1.ValkeyBackupStatus{Phase: phase, Message: message, Path: "s3://b/app/cache/nightly/",
			Shards: []valkeyv1.BackupShard{{Index: 0, Keys: 100}, {Index: 1, Keys: 200}}},
	}
}

// source is the backup's source cluster, shaped unlike the backup.
func source() *valkeyv1.ValkeyCluster {
	vc := tlsCluster()
	vc.Spec.Shards, vc.Spec.ReplicasPerShard = 3, 2
	return vc
}

// What restore creates, and what it refuses.
func TestRestoreCreates(t *testing.T) {
	copyKey := client.ObjectKey{Namespace: testNS, Name: "copy"}
	restoreOf := &valkeyv1.ClusterRestore{BackupName: "nightly"}
	existing := &valkeyv1.ValkeyCluster{ObjectMeta: metav1.ObjectMeta{Namespace: testNS, Name: "copy"},
		Spec: valkeyv1.ValkeyClusterSpec{ConfigRef: "other", Shards: 1}}
	cases := []struct {
		name     string
		objs     []client.Object
		args     []string
		want     *valkeyv1.ValkeyClusterSpec // nil: nothing created
		wantOut  string
		wantErr  string
		wantCode int
	}{
		{
			name: "defaults from the source cluster",
			objs: []client.Object{nightly(valkeyv1.BackupCompleted, ""), source()},
			args: []string{"restore", "nightly", "--into", "copy"},
			want: &valkeyv1.ValkeyClusterSpec{ConfigRef: "standard", Shards: 3, ReplicasPerShard: 2,
				TLS: &valkeyv1.TLSSpec{SecretRef: testSecret}, Restore: restoreOf},
			wantOut: `ValkeyCluster app/copy created from ValkeyBackup nightly (defaults from source cluster cache)
  config standard, shards 3, replicasPerShard 2, TLS Secret cache-tls
  backup s3://b/app/cache/nightly/: 2 shards
  note: Secret cache-tls is cache's; unless its certificate also names copy.app.svc.cluster.local and *.copy.app.svc.cluster.local, the cluster stays not Ready (MissingSAN): pass --tls-secret
`,
		},
		{
			name: "flags win over the source cluster",
			objs: []client.Object{nightly(valkeyv1.BackupCompleted, ""), source()},
			args: []string{"restore", "nightly", "--into", "copy", "--config", "large", "--shards", "5", "--replicas", "0", "--tls-secret", "copy-tls"},
			want: &valkeyv1.ValkeyClusterSpec{ConfigRef: "large", Shards: 5, ReplicasPerShard: 0,
				TLS: &valkeyv1.TLSSpec{SecretRef: "copy-tls"}, Restore: restoreOf},
			wantOut: `ValkeyCluster app/copy created from ValkeyBackup nightly (defaults from source cluster cache)
  config large, shards 5, replicasPerShard 0, TLS Secret copy-tls
  backup s3://b/app/cache/nightly/: 2 shards
`,
		},
		{
			name: "without the source cluster, the backup's shard count",
			objs: []client.Object{nightly(valkeyv1.BackupCompleted, "")},
			args: []string{"restore", "nightly", "--into", "copy", "--config", "standard"},
			want: &valkeyv1.ValkeyClusterSpec{ConfigRef: "standard", Shards: 2, ReplicasPerShard: defaultRestoreReplicas, Restore: restoreOf},
			wantOut: `ValkeyCluster app/copy created from ValkeyBackup nightly (source cluster cache no longer exists)
  config standard, shards 2, replicasPerShard 1, TLS none
  backup s3://b/app/cache/nightly/: 2 shards
`,
		},
		{
			name:     "without the source cluster, no config",
			objs:     []client.Object{nightly(valkeyv1.BackupCompleted, "")},
			args:     []string{"restore", "nightly", "--into", "copy"},
			wantErr:  "restore: --config CONFIG required: the backup's source cluster cache no longer exists to take it from",
			wantCode: 2,
		},
		{
			name:     "a Running backup",
			objs:     []client.Object{nightly(valkeyv1.BackupRunning, "streaming 2 shards"), source()},
			args:     []string{"restore", "nightly", "--into", "copy"},
			wantErr:  "ValkeyBackup app/nightly is not Completed (Running: streaming 2 shards): only a Completed backup can be restored",
			wantCode: 1,
		},
		{
			name:     "a Failed backup",
			objs:     []client.Object{nightly(valkeyv1.BackupFailed, "shard 0: AccessDenied"), source()},
			args:     []string{"restore", "nightly", "--into", "copy"},
			wantErr:  "ValkeyBackup app/nightly is not Completed (Failed: shard 0: AccessDenied)",
			wantCode: 1,
		},
		{
			name:     "a backup the operator has not reached",
			objs:     []client.Object{nightly("", ""), source()},
			args:     []string{"restore", "nightly", "--into", "copy"},
			wantErr:  "is not Completed (Pending)",
			wantCode: 1,
		},
		{
			name:     "a missing backup",
			objs:     []client.Object{source()},
			args:     []string{"restore", "nightly", "--into", "copy"},
			wantErr:  "ValkeyBackup app/nightly not found",
			wantCode: 1,
		},
		{
			name:     "an existing target",
			objs:     []client.Object{nightly(valkeyv1.BackupCompleted, ""), source(), existing},
			args:     []string{"restore", "nightly", "--into", "copy"},
			want:     &existing.Spec, // untouched
			wantErr:  "ValkeyCluster app/copy already exists: a restore fills a new cluster; name another with --into",
			wantCode: 1,
		},
		{
			name:     "the source cluster as the target",
			objs:     []client.Object{nightly(valkeyv1.BackupCompleted, ""), source()},
			args:     []string{"restore", "nightly", "--into", testCluster},
			wantErr:  "ValkeyCluster app/cache already exists",
			wantCode: 1,
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := fakeOperator(t, client.ObjectKey{}, nil, tc.objs...)
			var out strings.Builder
			err := runAgainst(c, tc.args, Env{Stdout: &out})
			if ExitCode(err) != tc.wantCode {
				t.Errorf("exit code %d (err %v), want %d", ExitCode(err), err, tc.wantCode)
			}
			if tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)) {
				t.Errorf("err = %v\nwant it to contain %s", err, tc.wantErr)
			}
			if tc.wantOut != "" && out.String() != tc.wantOut {
				t.Errorf("output:\n%s\nwant:\n%s", out.String(), tc.wantOut)
			}
			var got valkeyv1.ValkeyCluster
			switch err := c.Get(context.Background(), copyKey, &got); {
			case tc.want == nil && err == nil:
				t.Errorf("created ValkeyCluster %s: %+v", copyKey, got.Spec)
			case tc.want != nil && err != nil:
				t.Errorf("ValkeyCluster %s not created: %v", copyKey, err)
			case tc.want != nil && !equalSpec(&got.Spec, tc.want):
				t.Errorf("spec = %+v (tls %v, restore %v)\nwant %+v (tls %v, restore %v)", got.Spec, got.Spec.TLS, got.Spec.Restore, *tc.want, tc.want.TLS, tc.want.Restore)
			}
		})
	}
}

func equalSpec(a, b *valkeyv1.ValkeyClusterSpec) bool {
	return a.ConfigRef == b.ConfigRef && a.Shards == b.Shards && a.ReplicasPerShard == b.ReplicasPerShard &&
		(a.TLS == nil) == (b.TLS == nil) && (a.TLS == nil || *a.TLS == *b.TLS) &&
		(a.Restore == nil) == (b.Restore == nil) && (a.Restore == nil || a.Restore.BackupName == b.Restore.BackupName && a.Restore.Source == nil)
}

// --wait follows status.restore to its end.
func TestRestoreWait(t *testing.T) {
	cases := []struct {
		name     string
		steps    []operatorStep
		wantOut  string
		wantErr  string
		wantCode int
	}{
		{
			name: "Completed",
			steps: []operatorStep{
				func(client.Object) {}, // not reached by the operator yet
				restorePhase(valkeyv1.RestoreStatus{Phase: valkeyv1.RestorePending, Message: "waiting for the cluster to form"}),
				restorePhase(valkeyv1.RestoreStatus{Phase: valkeyv1.RestoreRunning, Message: "shard 0 of 2", ShardsTotal: 2, Keys: 50}),
				restorePhase(valkeyv1.RestoreStatus{Phase: valkeyv1.RestoreCompleted, ShardsTotal: 2, ShardsDone: 2, Keys: 300}),
			},
			wantOut: "  Pending\n  Pending: waiting for the cluster to form\n  Running: shard 0 of 2\n  Completed\nRestore Completed: 300 keys, 2/2 shards\n",
		},
		{
			name: "Failed",
			steps: []operatorStep{
				restorePhase(valkeyv1.RestoreStatus{Phase: valkeyv1.RestoreRunning}),
				restorePhase(valkeyv1.RestoreStatus{Phase: valkeyv1.RestoreFailed, Message: "shard 1: checksum mismatch", ShardsTotal: 2, ShardsDone: 1}),
			},
			wantOut:  "  Running\n  Failed: shard 1: checksum mismatch\n",
			wantErr:  "restore of ValkeyCluster app/copy Failed: shard 1: checksum mismatch",
			wantCode: 1,
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := fakeOperator(t, client.ObjectKey{Namespace: testNS, Name: "copy"}, tc.steps, nightly(valkeyv1.BackupCompleted, ""), source())
			var out strings.Builder
			err := runAgainst(c, []string{"restore", "nightly", "--into", "copy", "--wait"}, Env{Stdout: &out, PollInterval: time.Millisecond})
			if ExitCode(err) != tc.wantCode {
				t.Errorf("exit code %d (err %v), want %d", ExitCode(err), err, tc.wantCode)
			}
			if tc.wantErr != "" && (err == nil || err.Error() != tc.wantErr) {
				t.Errorf("err = %v\nwant  %s", err, tc.wantErr)
			}
			if !strings.HasSuffix(out.String(), tc.wantOut) {
				t.Errorf("output:\n%s\nwant it to end with:\n%s", out.String(), tc.wantOut)
			}
			if !strings.HasPrefix(out.String(), "ValkeyCluster app/copy created from ValkeyBackup nightly") {
				t.Errorf("output does not start with what was created:\n%s", out.String())
			}
		})
	}
}
