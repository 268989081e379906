// Package backup holds the ValkeyBackup, ValkeyScheduledBackup and
// ValkeyRestore controllers: streaming each shard's data to an object
// store, pruning the backups a schedule no longer keeps, and replaying a
// backup into a cluster through scratch loader servers.
package backup
