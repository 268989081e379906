// Package kubectlvalkey is the logic of the kubectl-valkey plugin: reading a
// ValkeyCluster and its objects through the user's kubeconfig, printing its
// status, proving its TLS setup from the client's side, and backing it up
// to or restoring it from object storage through ValkeyBackups and
// spec.restore.
//
// Network access goes through an injectable dial function and resolver, so
// the same checks run in a pod, from a routable network, through a
// port-forward, or against the local test runtime.
package kubectlvalkey
