package backup

import (
	"fmt"

	valkeyv1 "github.com/gomomento/valkey-operator/api/v1alpha1"
)

// PruneTarget says where a pruned backup's objects are and how to reach
// them: the destination to connect with and the key prefix to empty. An
// empty prefix means the backup wrote nothing (it failed before
// streaming), so only the ValkeyBackup is deleted.
//
// The objects are where the backup wrote them, its own endpoint and
// bucket; while the schedule still names that bucket its destination is
// used instead, as its credentials may have been rotated since. The prefix
// is the one the backup's spec gives, and status.path must agree: a
// prefix read from a status anyone with write access to it can edit could
// otherwise empty somebody else's backups.
func PruneTarget(namespace, name, cluster, statusPath string, own, schedule valkeyv1.BackupDestination) (valkeyv1.BackupDestination, string, error) {
	if statusPath == "" {
		return own, "", nil
	}
	base := Base(own.Prefix, namespace, cluster, name)
	if want := Location(own.Bucket, base); statusPath != want {
		return own, "", fmt.Errorf("backup %s: status.path %s is not where it writes (%s); its objects are left alone", name, statusPath, want)
	}
	if schedule.Endpoint == own.Endpoint && schedule.Bucket == own.Bucket {
		return schedule, base, nil
	}
	return own, base, nil
}
