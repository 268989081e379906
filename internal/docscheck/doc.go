// Package docscheck holds tests that keep docs/ in step with the code:
// every condition type, reason and planner action kind a user can meet in
// a ValkeyCluster's status must be explained in docs/troubleshooting.md,
// every page is listed in docs/index.md, and every link between pages
// reaches a page and heading that exist.
package docscheck
