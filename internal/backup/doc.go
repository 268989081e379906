// Package backup decides what a ValkeyBackup does, with no client or
// socket: where its objects go, which node each shard is copied from, what
// the manifest says, and which step comes next.
package backup
