// Package metering advances every cluster's metering record, kept in the
// operator's namespace, with what the cluster ran since the last tick.
package metering
