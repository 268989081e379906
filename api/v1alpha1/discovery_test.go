package v1alpha1_test

import (
	"context"
	"slices"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/client-go/discovery"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// What kubectl shows: scope, short names, status and scale subresources,
// printer columns.
func TestDiscoveryAndPrinterColumns(t *testing.T) {
	dc, err := discovery.NewDiscoveryClientForConfig(env.Config)
	if err != nil {
		t.Fatal(err)
	}
	list, err := dc.ServerResourcesForGroupVersion("valkey.gomomento.com/v1alpha1")
	if err != nil {
		t.Fatal(err)
	}
	type want struct {
		namespaced bool
		shortName  string
	}
	wants := map[string]want{
		"valkeyimages":           {false, "vki"},
		"valkeyconfigs":          {false, "vkcfg"},
		"valkeyroles":            {false, "vkr"},
		"valkeyclusters":         {true, "vkc"},
		"valkeynodes":            {true, "vkn"},
		"valkeyscheduledbackups": {true, "vksb"},
	}
	seen := map[string]bool{}
	for _, r := range list.APIResources {
		seen[r.Name] = true
		if w, ok := wants[r.Name]; ok {
			if r.Namespaced != w.namespaced {
				t.Errorf("%s namespaced = %v, want %v", r.Name, r.Namespaced, w.namespaced)
			}
			if !slices.Contains(r.ShortNames, w.shortName) {
				t.Errorf("%s short names = %v, want %s", r.Name, r.ShortNames, w.shortName)
			}
		}
	}
	for name := range wants {
		if !seen[name] {
			t.Errorf("resource %s not served", name)
		}
		if !seen[name+"/status"] {
			t.Errorf("resource %s has no status subresource", name)
		}
	}
	if !seen["valkeyclusters/scale"] {
		t.Errorf("valkeyclusters has no scale subresource")
	}

	columns := map[string][]string{
		"valkeyimages.valkey.gomomento.com":           {"Repository", "Tag", "Version"},
		"valkeyconfigs.valkey.gomomento.com":          {"ImageRef", "BaseRef"},
		"valkeyroles.valkey.gomomento.com":            {"Age"},
		"valkeyclusters.valkey.gomomento.com":         {"Config", "Shards", "Replicas", "State"},
		"valkeynodes.valkey.gomomento.com":            {"Cluster", "Image", "Lifecycle"},
		"valkeyscheduledbackups.valkey.gomomento.com": {"Cluster", "Schedule", "Last Backup", "Next", "Age"},
	}
	for crdName, want := range columns {
		var crd apiextensionsv1.CustomResourceDefinition
		if err := env.Client.Get(context.Background(), client.ObjectKey{Name: crdName}, &crd); err != nil {
			t.Fatalf("get CRD %s: %v", crdName, err)
		}
		var got []string
		for _, c := range crd.Spec.Versions[0].AdditionalPrinterColumns {
			got = append(got, c.Name)
		}
		for _, w := range want {
			if !slices.Contains(got, w) {
				t.Errorf("%s printer columns %v lack %s", crdName, got, w)
			}
		}
	}
}
