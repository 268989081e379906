package controller

import (
	"maps"
	"reflect"
	"slices"
	"testing"

	valkeyv1 "github.com/gomomento/valkey-operator/api/v1alpha1"
	"github.com/gomomento/valkey-operator/internal/controller/options"
	"github.com/gomomento/valkey-operator/internal/render"
)

func TestCacheOptions(t *testing.T) {
	managed := render.ManagedSelector().String()
	tests := []struct {
		name   string
		mutate func(o *options.Options)
		// wantNamespaces are the cache's default namespaces; nil is every one.
		wantNamespaces []string
		// wantLabels maps each kind given its own settings to its label
		// selector ("" for none).
		wantLabels map[string]string
		// wantMetering is where metering records are cached; nil is the default.
		wantMetering []string
	}{
		{
			name:       "every namespace, filtered",
			mutate:     func(*options.Options) {},
			wantLabels: map[string]string{"Secret": managed, "Pod": managed, "PersistentVolumeClaim": managed},
		},
		{
			name:       "every namespace, unfiltered",
			mutate:     func(o *options.Options) { o.FilterCache = false },
			wantLabels: map[string]string{},
		},
		{
			name:           "watched namespaces keep the filter",
			mutate:         func(o *options.Options) { o.WatchNamespaces = []string{"team-a", "team-b"} },
			wantNamespaces: []string{"team-a", "team-b"},
			wantLabels:     map[string]string{"Secret": managed, "Pod": managed, "PersistentVolumeClaim": managed, "ValkeyMeteringRecord": ""},
			wantMetering:   []string{options.DefaultNamespace},
		},
		{
			name: "the operator's namespace among the watched",
			mutate: func(o *options.Options) {
				o.WatchNamespaces = []string{"team-a", "ops"}
				o.Namespace = "ops"
			},
			wantNamespaces: []string{"ops", "team-a"},
			wantLabels:     map[string]string{"Secret": managed, "Pod": managed, "PersistentVolumeClaim": managed, "ValkeyMeteringRecord": ""},
			wantMetering:   []string{"ops"},
		},
		{
			name: "watched namespaces, unfiltered",
			mutate: func(o *options.Options) {
				o.FilterCache = false
				o.WatchNamespaces = []string{"team-a"}
			},
			wantNamespaces: []string{"team-a"},
			wantLabels:     map[string]string{"ValkeyMeteringRecord": ""},
			wantMetering:   []string{options.DefaultNamespace},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := options.DefaultOptions()
			tt.mutate(&o)
			got := CacheOptions(o)
			if ns := slices.Sorted(maps.Keys(got.DefaultNamespaces)); !slices.Equal(ns, tt.wantNamespaces) {
				t.Errorf("default namespaces %v, want %v", ns, tt.wantNamespaces)
			}
			labels := map[string]string{}
			var metering []string
			for obj, by := range got.ByObject {
				kind := reflect.TypeOf(obj).Elem().Name()
				labels[kind] = ""
				if by.Label != nil {
					labels[kind] = by.Label.String()
				}
				if _, ok := obj.(*valkeyv1.ValkeyMeteringRecord); ok {
					metering = slices.Sorted(maps.Keys(by.Namespaces))
				} else if by.Namespaces != nil {
					t.Errorf("%s: namespaces %v, want the default ones", kind, by.Namespaces)
				}
			}
			if !maps.Equal(labels, tt.wantLabels) {
				t.Errorf("label selectors by kind %v, want %v", labels, tt.wantLabels)
			}
			if !slices.Equal(metering, tt.wantMetering) {
				t.Errorf("metering records cached in %v, want %v", metering, tt.wantMetering)
			}
		})
	}
}
