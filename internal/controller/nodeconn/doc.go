// Package nodeconn is how a controller reaches a cluster's Valkey nodes:
// the connector (the operator user's password, the CA and the verified
// leaves it dials with), the pin annotation's format, and which pods are
// running and can answer.
package nodeconn
