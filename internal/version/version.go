// Package version carries the build's version, set at link time.
package version

// Version is overridden with -ldflags "-X github.com/gomomento/valkey-operator/internal/version.Version=v1.2.3".
var Version = "dev"
