// Package restore puts a backup's data into a cluster of any shape. Each
// shard's RDB file is loaded by a scratch server (the loader), fed by the
// operator standing in as its primary (valkey.Feeder), and its keys are
// then copied with DUMP and RESTORE to whichever primary owns their slot
// now. Nothing here parses an RDB file: Valkey itself reads it, so every
// type and encoding the loader's version knows comes back as it was.
//
// The loader runs as a user of its own (its default user), so the
// commands this package sends it are not the operator user's grants.
package restore
