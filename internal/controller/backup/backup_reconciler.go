package backup

import (
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gomomento/valkey-operator/internal/controller/nodeconn"
	"github.com/gomomento/valkey-operator/internal/controller/options"
)

// backupReconciler takes each ValkeyBackup once: it waits for the cluster
// to be Active, checks the destination, streams every shard's snapshot to
// the bucket at once and writes the manifest last.
type backupReconciler struct {
	client.Client
	// APIReader reads the destination's Secrets, which the cache does not
	// hold.
	APIReader client.Reader
	Options   options.Options
	Dialer    nodeconn.DialFunc
	now       func() time.Time
}
