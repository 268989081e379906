// Package valkey talks to one Valkey node at a time on behalf of the
// operator: it dials (plaintext or verified TLS), authenticates as the
// operator's ACL user and issues typed admin commands.
//
// Replies are parsed by pure functions (parseClusterNodes,
// ParseClusterShards, parseClusterInfo, parseInfo, ParseSlotRanges, ...)
// that never touch the network, so they can be tested against captured
// server output.
//
// The operator's ACL user may run only the commands of the Node methods
// the operator calls (internal/render checks its grants against them).
// Other methods (ClusterMyID, ClusterShards, ...) exist for
// callers with other users; with the operator user they fail with a
// NOPERM error (see IsNoPermission).
package valkey
