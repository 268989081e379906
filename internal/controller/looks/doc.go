// Package looks keeps each node's latest INFO answer, so one INFO per node
// and interval serves every controller that reads it.
package looks
