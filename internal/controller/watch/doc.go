// Package watch holds the event sources and filters shared by the
// controllers: Secret watches that are not in the cache, the mapping of
// an object to the cluster it belongs to, and the pod label filter.
package watch
