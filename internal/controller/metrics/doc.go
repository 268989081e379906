// Package metrics declares and registers every Prometheus metric the
// operator exports, and the helpers that record and forget a cluster's.
package metrics
