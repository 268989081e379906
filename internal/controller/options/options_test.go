package options

import (
	"slices"
	"strings"
	"testing"
	"time"
)

func TestOptionsValidate(t *testing.T) {
	tests := []struct {
		name   string
		mutate func(o *Options)
		want   string // substring of the error; empty for none
	}{
		{"defaults", func(*Options) {}, ""},
		{"unknown zone spread", func(o *Options) { o.DefaultZoneSpread = "sometimes" }, `default zone spread "sometimes"`},
		{"empty cluster domain", func(o *Options) { o.ClusterDomain = "" }, "cluster domain must not be empty"},
		{"no cluster worker", func(o *Options) { o.ClusterWorkers = 0 }, "cluster workers 0: must be at least 1"},
		{"empty slot batch", func(o *Options) { o.SlotBatch = 0 }, "slot batch 0: must be at least 1"},
		{"no error backoff", func(o *Options) { o.ErrorBackoffBase = 0 }, "error backoff 0s to 1m0s"},
		{"backoff cap below base", func(o *Options) { o.ErrorBackoffMax = o.ErrorBackoffBase / 2 }, "the base must be positive and at most the maximum"},
		{"sample interval below a second", func(o *Options) { o.SampleInterval = 500 * time.Millisecond }, "sample interval 500ms: must be at least 1s"},
		{"negative credentials settle", func(o *Options) { o.CredentialsSettle = -time.Second }, "credentials settle -1s: must not be negative"},
		{"no exporter image", func(o *Options) { o.ExporterImage = "" }, "exporter image must not be empty"},
		{"no operator namespace", func(o *Options) { o.Namespace = "" }, "operator namespace must not be empty"},
		{"no wave concurrency", func(o *Options) { o.WaveConcurrency = 0 }, "wave concurrency 0: must be at least 1"},
		{"watched namespaces", func(o *Options) { o.WatchNamespaces = []string{"team-a", "team-b"} }, ""},
		{"an empty watched namespace", func(o *Options) { o.WatchNamespaces = []string{"team-a", ""} }, `watch namespaces "team-a,": a namespace name is empty`},
		{"a namespace watched twice", func(o *Options) { o.WatchNamespaces = []string{"team-a", "team-b", "team-a"} }, "team-a is listed twice"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := DefaultOptions()
			tt.mutate(&o)
			err := o.Validate()
			switch {
			case tt.want == "" && err != nil:
				t.Fatalf("unexpected error: %v", err)
			case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
				t.Fatalf("error %v, want one containing %q", err, tt.want)
			}
		})
	}
}

func TestSplitNamespaces(t *testing.T) {
	tests := []struct {
		flag string
		want []string
	}{
		{"", nil},
		{"  ", nil},
		{"team-a", []string{"team-a"}},
		{"team-a, team-b", []string{"team-a", "team-b"}},
		// Kept for Validate to refuse rather than silently dropped.
		{"team-a,,team-b", []string{"team-a", "", "team-b"}},
		{"team-a,", []string{"team-a", ""}},
	}
	for _, tt := range tests {
		if got := SplitNamespaces(tt.flag); !slices.Equal(got, tt.want) {
			t.Errorf("SplitNamespaces(%q) = %q, want %q", tt.flag, got, tt.want)
		}
	}
}

func TestWatches(t *testing.T) {
	all, some := DefaultOptions(), DefaultOptions()
	some.WatchNamespaces = []string{"team-a", "team-b"}
	tests := []struct {
		opts Options
		ns   string
		want bool
	}{
		{all, "anything", true},
		{some, "team-a", true},
		{some, "team-b", true},
		{some, "team-c", false},
		{some, "", false},
	}
	for _, tt := range tests {
		if got := tt.opts.Watches(tt.ns); got != tt.want {
			t.Errorf("watching %q, watches(%q) = %v, want %v", tt.opts.WatchNamespaces, tt.ns, got, tt.want)
		}
	}
}
