// Package resolve turns a ValkeyCluster's references into the settings its
// nodes run with: the ValkeyConfig baseRef chain and its ValkeyImage, the
// merged ACL bindings and the ValkeyRoles they name.
//
// Resolution is live (it runs on every reconcile) and pure: objects are
// fetched through small lookup interfaces, so the same rules serve the
// reconciler, the tests and any tool that explains a cluster's settings.
package resolve
