// Package apischeme builds the runtime scheme of every API type the
// operator reads or writes: its own and the Kubernetes ones it manages.
package apischeme
