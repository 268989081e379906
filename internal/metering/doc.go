// Package metering is the arithmetic of the usage meter: which figure a
// node is billed at, and how a record accumulates it over time. It is pure:
// the metering controller reads the nodes and writes the records.
package metering
