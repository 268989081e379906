package e2e

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/minio/minio-go/v7"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	valkeyv1 "github.com/gomomento/valkey-operator/api/v1alpha1"
	"github.com/gomomento/valkey-operator/internal/backup"
	"github.com/gomomento/valkey-operator/internal/s3test"
)

// everyFiveSeconds is a schedule with the optional seconds field, so a
// test sees several due times in a minute.
const everyFiveSeconds = "*/5 * * * * *"

// A schedule backs up a 1x0 cluster every five seconds. With keepLast: 2
// it prunes as it goes: once four backups have been made, the schedule
// suspended and the last one finished, exactly the two newest remain, both
// Completed, and the bucket holds exactly their objects; the newest one
// restores the keys. A bad schedule string says which field is wrong and
// creates nothing until it is fixed; a suspended schedule creates nothing
// until it is resumed.
func TestScheduledBackup(t *testing.T) {
	t.Parallel()
	store := s3test.Start(t)
	store.MakeBucket(t, backupBucket)
	key := newPlainCluster(t, "scheduled-backup", "sb", 1, 0)
	c := clusterClient(t, seedOf(key), nil)
	data := writeTypedKeys(t, c, 200)
	mc := store.Client(t)
	ns := key.Namespace

	t.Run("keepLast prunes the objects and the backups", func(t *testing.T) {
		t.Parallel()
		createBackupCredentials(t, ns, "keep-credentials", store.AccessKey, store.SecretKey)
		sb := createSchedule(t, ns, "every5", key.Name, everyFiveSeconds, "keep-credentials", store.Endpoint, "keep",
			func(s *valkeyv1.ValkeyScheduledBackupSpec) {
				s.Retention = &valkeyv1.BackupRetention{KeepLast: ptr.To[int32](2)}
			})
		made := map[string]bool{}
		eventually(t, 4*time.Minute, "four backups made and two of them pruned", func() error {
			present := map[string]bool{}
			for _, b := range scheduleBackups(t, ns, sb.Name) {
				if b.Status.Phase == valkeyv1.BackupFailed {
					t.Fatalf("backup %s failed: %s", b.Name, b.Status.Message)
				}
				made[b.Name], present[b.Name] = true, true
			}
			if pruned := len(made) - len(present); len(made) < 4 || pruned < 2 {
				return fmt.Errorf("%d made, %d of them pruned", len(made), pruned)
			}
			return nil
		})
		updateSchedule(t, client.ObjectKeyFromObject(sb), func(s *valkeyv1.ValkeyScheduledBackup) { s.Spec.Suspend = true })

		var kept []valkeyv1.ValkeyBackup
		eventually(t, 2*time.Minute, "the two newest backups alone, Completed, with only their objects in the bucket", func() error {
			kept = scheduleBackups(t, ns, sb.Name)
			return keptExactly(t, mc, "keep/", kept, 2)
		})
		for _, b := range kept {
			made[b.Name] = true
		}
		names := sortedNames(made)
		if want := names[len(names)-2:]; kept[0].Name != want[0] || kept[1].Name != want[1] {
			t.Fatalf("kept %s and %s, want the newest of %v", kept[0].Name, kept[1].Name, names)
		}
		s := getSchedule(t, client.ObjectKeyFromObject(sb))
		if s.Status.LastSuccessfulBackup != kept[1].Name || s.Status.NextScheduleTime != nil || s.Status.LastScheduleTime == nil {
			t.Fatalf("status %+v", s.Status)
		}
		newest := kept[1]
		if newest.Spec.Cluster != key.Name || !metav1.IsControlledBy(&newest, s) {
			t.Fatalf("backup %s: spec %+v, owners %+v", newest.Name, newest.Spec, newest.OwnerReferences)
		}
		shard := newest.Status.Shards[0]
		checkRestoredShard(t, c, getObject(t, mc, shard.Object), parseRanges(t, shard.Slots), data, typedKeySlots(t, c, data))
		t.Logf("made %d backups, kept %v", len(names), []string{kept[0].Name, kept[1].Name})

		// The store refuses the credentials when retention shrinks to one:
		// the older backup and its objects stay, the condition carries the
		// store's error, and the pruning is retried once the credentials
		// work again.
		setBackupSecret(t, ns, "keep-credentials", "not-the-secret")
		updateSchedule(t, client.ObjectKeyFromObject(sb), func(s *valkeyv1.ValkeyScheduledBackup) {
			s.Spec.Retention.KeepLast = ptr.To[int32](1)
		})
		eventually(t, time.Minute, "RetentionApplied False with the store's error", func() error {
			s := getSchedule(t, client.ObjectKeyFromObject(sb))
			cond := meta.FindStatusCondition(s.Status.Conditions, valkeyv1.CondRetentionApplied)
			if cond == nil || cond.Status != metav1.ConditionFalse || cond.Reason != valkeyv1.ReasonPruneFailed ||
				!strings.Contains(cond.Message, "pruning backup "+kept[0].Name+": checking bucket "+backupBucket) {
				return fmt.Errorf("condition %+v", cond)
			}
			t.Logf("prune refused: %s", cond.Message)
			return nil
		})
		if err := keptExactly(t, mc, "keep/", scheduleBackups(t, ns, sb.Name), 2); err != nil {
			t.Fatalf("a refused prune deleted something: %v", err)
		}
		setBackupSecret(t, ns, "keep-credentials", store.SecretKey)
		eventually(t, 2*time.Minute, "the older backup pruned once the store accepts the credentials", func() error {
			left := scheduleBackups(t, ns, sb.Name)
			if err := keptExactly(t, mc, "keep/", left, 1); err != nil {
				return err
			}
			if left[0].Name != newest.Name {
				return fmt.Errorf("kept %s, want %s", left[0].Name, newest.Name)
			}
			s := getSchedule(t, client.ObjectKeyFromObject(sb))
			if !meta.IsStatusConditionTrue(s.Status.Conditions, valkeyv1.CondRetentionApplied) {
				return fmt.Errorf("conditions %+v", s.Status.Conditions)
			}
			return nil
		})
	})

	t.Run("a bad schedule names its field and creates nothing until fixed", func(t *testing.T) {
		t.Parallel()
		createBackupCredentials(t, ns, "bad-credentials", store.AccessKey, store.SecretKey)
		sb := createSchedule(t, ns, "bad", key.Name, "*/5 * * * 13 *", "bad-credentials", store.Endpoint, "bad")
		skey := client.ObjectKeyFromObject(sb)
		eventually(t, 30*time.Second, "ScheduleValid False naming the month field", func() error {
			s := getSchedule(t, skey)
			cond := meta.FindStatusCondition(s.Status.Conditions, valkeyv1.CondScheduleValid)
			if cond == nil || cond.Status != metav1.ConditionFalse || cond.Reason != valkeyv1.ReasonScheduleInvalid ||
				!strings.Contains(cond.Message, `field month "13"`) {
				return fmt.Errorf("condition %+v", cond)
			}
			if s.Status.NextScheduleTime != nil {
				return fmt.Errorf("next schedule time %s on an invalid schedule", s.Status.NextScheduleTime)
			}
			t.Logf("invalid: %s", cond.Message)
			return nil
		})
		noBackupsFor(t, sb, 3*5*time.Second)
		updateSchedule(t, skey, func(s *valkeyv1.ValkeyScheduledBackup) { s.Spec.Schedule = everyFiveSeconds })
		eventually(t, 30*time.Second, "ScheduleValid True once fixed", func() error {
			s := getSchedule(t, skey)
			if cond := meta.FindStatusCondition(s.Status.Conditions, valkeyv1.CondScheduleValid); cond == nil || cond.Status != metav1.ConditionTrue {
				return fmt.Errorf("condition %+v", cond)
			}
			return nil
		})
		waitScheduleCompleted(t, sb)
	})

	t.Run("a suspended schedule creates nothing until resumed", func(t *testing.T) {
		t.Parallel()
		createBackupCredentials(t, ns, "suspended-credentials", store.AccessKey, store.SecretKey)
		sb := createSchedule(t, ns, "suspended", key.Name, everyFiveSeconds, "suspended-credentials", store.Endpoint, "suspended",
			func(s *valkeyv1.ValkeyScheduledBackupSpec) { s.Suspend = true })
		skey := client.ObjectKeyFromObject(sb)
		eventually(t, 30*time.Second, "the suspended schedule seen", func() error {
			s := getSchedule(t, skey)
			cond := meta.FindStatusCondition(s.Status.Conditions, valkeyv1.CondScheduleValid)
			if cond == nil || cond.Status != metav1.ConditionTrue || cond.ObservedGeneration != s.Generation || !strings.Contains(cond.Message, "suspended") {
				return fmt.Errorf("condition %+v", cond)
			}
			return nil
		})
		noBackupsFor(t, sb, 3*5*time.Second)
		updateSchedule(t, skey, func(s *valkeyv1.ValkeyScheduledBackup) { s.Spec.Suspend = false })
		waitScheduleCompleted(t, sb)
		if s := getSchedule(t, skey); s.Status.NextScheduleTime == nil {
			t.Fatalf("a resumed schedule has no next schedule time: %+v", s.Status)
		}
	})
}

// keptExactly checks that backups are want Completed ones, oldest first,
// and that the bucket under prefix holds exactly their shard files and
// manifests.
func keptExactly(t testing.TB, mc *minio.Client, prefix string, backups []valkeyv1.ValkeyBackup, want int) error {
	t.Helper()
	if len(backups) != want {
		return fmt.Errorf("%d backups remain (%v), want %d", len(backups), backupNames(backups), want)
	}
	var wantObjects []string
	for _, b := range backups {
		if b.Status.Phase != valkeyv1.BackupCompleted {
			return fmt.Errorf("backup %s is %s", b.Name, b.Status.Phase)
		}
		base := backup.Base(b.Spec.Destination.Prefix, b.Namespace, b.Spec.Cluster, b.Name)
		for i := range b.Status.Shards {
			wantObjects = append(wantObjects, backup.ShardObject(base, i))
		}
		wantObjects = append(wantObjects, backup.ManifestObject(base))
	}
	slices.Sort(wantObjects)
	got := bucketObjects(t, mc, prefix)
	if !slices.Equal(got, wantObjects) {
		return fmt.Errorf("the bucket holds %v, want %v", got, wantObjects)
	}
	return nil
}

func createSchedule(t testing.TB, ns, name, cluster, schedule, credentials, endpoint, prefix string,
	edits ...func(*valkeyv1.ValkeyScheduledBackupSpec)) *valkeyv1.ValkeyScheduledBackup {
	t.Helper()
	sb := &valkeyv1.ValkeyScheduledBackup{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: valkeyv1.ValkeyScheduledBackupSpec{Cluster: cluster, Schedule: schedule, Destination: valkeyv1.BackupDestination{
			Bucket: backupBucket, Prefix: prefix, Endpoint: endpoint, Insecure: true, CredentialsSecretRef: credentials,
		}},
	}
	for _, edit := range edits {
		edit(&sb.Spec)
	}
	if err := k8sClient.Create(context.Background(), sb); err != nil {
		t.Fatalf("creating ValkeyScheduledBackup %s: %v", name, err)
	}
	t.Cleanup(func() { _ = k8sClient.Delete(context.Background(), sb) })
	return sb
}

func getSchedule(t testing.TB, key client.ObjectKey) *valkeyv1.ValkeyScheduledBackup {
	t.Helper()
	var sb valkeyv1.ValkeyScheduledBackup
	if err := k8sClient.Get(context.Background(), key, &sb); err != nil {
		t.Fatal(err)
	}
	return &sb
}

func updateSchedule(t testing.TB, key client.ObjectKey, mutate func(*valkeyv1.ValkeyScheduledBackup)) {
	t.Helper()
	if err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		var sb valkeyv1.ValkeyScheduledBackup
		if err := k8sClient.Get(context.Background(), key, &sb); err != nil {
			return err
		}
		mutate(&sb)
		return k8sClient.Update(context.Background(), &sb)
	}); err != nil {
		t.Fatalf("updating ValkeyScheduledBackup %s: %v", key, err)
	}
}

// scheduleBackups are the ValkeyBackups of a schedule, oldest first (their
// names end with their due time).
func scheduleBackups(t testing.TB, ns, schedule string) []valkeyv1.ValkeyBackup {
	t.Helper()
	var list valkeyv1.ValkeyBackupList
	if err := k8sClient.List(context.Background(), &list, client.InNamespace(ns),
		client.MatchingLabels{valkeyv1.LabelScheduledBackup: schedule}); err != nil {
		t.Fatal(err)
	}
	slices.SortFunc(list.Items, func(a, b valkeyv1.ValkeyBackup) int { return strings.Compare(a.Name, b.Name) })
	return list.Items
}

// noBackupsFor checks, for the whole of d, that the schedule has created
// no backup and recorded none.
func noBackupsFor(t testing.TB, sb *valkeyv1.ValkeyScheduledBackup, d time.Duration) {
	t.Helper()
	for end := time.Now().Add(d); time.Now().Before(end); time.Sleep(500 * time.Millisecond) {
		if bs := scheduleBackups(t, sb.Namespace, sb.Name); len(bs) > 0 {
			t.Fatalf("schedule %s created %v", sb.Name, backupNames(bs))
		}
		if s := getSchedule(t, client.ObjectKeyFromObject(sb)); s.Status.LastScheduleTime != nil || s.Status.LastBackupName != "" {
			t.Fatalf("schedule %s recorded a backup: %+v", sb.Name, s.Status)
		}
	}
}

// waitScheduleCompleted waits for a Completed backup of the schedule that
// its status names.
func waitScheduleCompleted(t testing.TB, sb *valkeyv1.ValkeyScheduledBackup) {
	t.Helper()
	eventually(t, 2*time.Minute, "a Completed backup of "+sb.Name, func() error {
		s := getSchedule(t, client.ObjectKeyFromObject(sb))
		if s.Status.LastSuccessfulBackup == "" {
			return fmt.Errorf("status %+v", s.Status)
		}
		for _, b := range scheduleBackups(t, sb.Namespace, sb.Name) {
			if b.Name == s.Status.LastSuccessfulBackup && b.Status.Phase == valkeyv1.BackupCompleted {
				return nil
			}
		}
		return fmt.Errorf("no Completed backup named %s", s.Status.LastSuccessfulBackup)
	})
}

func setBackupSecret(t testing.TB, ns, name, secret string) {
	t.Helper()
	if err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		var s corev1.Secret
		if err := k8sClient.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, &s); err != nil {
			return err
		}
		s.Data["secretAccessKey"] = []byte(secret)
		return k8sClient.Update(context.Background(), &s)
	}); err != nil {
		t.Fatalf("updating Secret %s: %v", name, err)
	}
}

func bucketObjects(t testing.TB, mc *minio.Client, prefix string) []string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var out []string
	for o := range mc.ListObjects(ctx, backupBucket, minio.ListObjectsOptions{Prefix: prefix, Recursive: true}) {
		if o.Err != nil {
			t.Fatalf("listing %s: %v", prefix, o.Err)
		}
		out = append(out, o.Key)
	}
	slices.Sort(out)
	return out
}

func backupNames(bs []valkeyv1.ValkeyBackup) []string {
	out := make([]string, len(bs))
	for i, b := range bs {
		out[i] = b.Name
	}
	return out
}

func sortedNames(set map[string]bool) []string {
	out := make([]string, 0, len(set))
	for n := range set {
		out = append(out, n)
	}
	slices.Sort(out)
	return out
}
