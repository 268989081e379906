// Package controller wires the operator's controllers into a manager: the
// scheme, the cache's filters, the RBAC markers, and Setup, which registers
// the controllers of the sub-packages (cluster, node, reload, autoscaler,
// metering, backup, protection) with their watches and options.
package controller
