// Package aclplan decides what the ACL reloader does and reports: it reads
// a rendered ACL file and a node's ACL LIST into users normalised the way
// Valkey stores them, names the users on which they differ, plans the
// ACL SETUSER and ACL DELUSER calls for a node that cannot take ACL LOAD,
// and turns one pass over a cluster into the ACLApplied condition and when
// to look again. It talks to neither Kubernetes nor Valkey, so every rule
// has a table test; internal/controller acts on what it decides.
package aclplan
