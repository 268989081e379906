// Package finalizer adds and removes the operator's finalizers.
package finalizer
