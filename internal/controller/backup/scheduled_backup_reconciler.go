package backup

import (
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"
)

// scheduledBackupReconciler creates a schedule's backups at its due times
// and prunes those out of retention. It wakes at the next due time (or
// expiry, or retry), and whenever one of its backups changes.
type scheduledBackupReconciler struct {
	client.Client
	// APIReader reads the destination's Secrets, which the cache does not
	// hold.
	APIReader client.Reader
	now       func() time.Time
}
