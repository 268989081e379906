package controller

import (
	"k8s.io/apimachinery/pkg/runtime"

	valkeyv1 "github.com/gomomento/valkey-operator/api/v1alpha1"
	"github.com/gomomento/valkey-operator/internal/controller/apischeme"
	"github.com/gomomento/valkey-operator/internal/controller/metering"
	"github.com/gomomento/valkey-operator/internal/controller/metrics"
	"github.com/gomomento/valkey-operator/internal/controller/options"
)

// The names below are what the operator's commands, the playground and the
// end-to-end tests start the controllers with; they live in the packages
// every controller imports, and are re-exported here so callers need only
// this package.

// Options are the operator's process-wide settings.
type Options = options.Options

// DefaultNamespace is the operator's namespace when none is given.
const DefaultNamespace = options.DefaultNamespace

// DefaultOptions are the settings the flags default to.
func DefaultOptions() Options { return options.DefaultOptions() }

// SplitNamespaces parses a comma-separated namespace list as given on the
// command line.
func SplitNamespaces(s string) []string { return options.SplitNamespaces(s) }

// NewScheme is the scheme the manager and the operator's clients use.
func NewScheme() (*runtime.Scheme, error) { return apischeme.NewScheme() }

// MeteringRecordName is the name of a cluster's metering record.
func MeteringRecordName(vc *valkeyv1.ValkeyCluster) string { return metering.RecordName(vc) }

// MetricLabels maps each metric the operator exports to its labels.
func MetricLabels() map[string][]string { return metrics.MetricLabels() }
