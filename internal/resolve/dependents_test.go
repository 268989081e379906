package resolve

import (
	"reflect"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gomomento/valkey-operator/api/v1alpha1"
)

func useConfig(name, base, image string, roles ...string) v1alpha1.ValkeyConfig {
	c := v1alpha1.ValkeyConfig{ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: v1alpha1.ValkeyConfigSpec{BaseRef: base, ImageRef: image}}
	if roles != nil {
		c.Spec.ACL = bindingsOf(roles...)
	}
	return c
}

func useCluster(ns, name, config string, roles ...string) v1alpha1.ValkeyCluster {
	return v1alpha1.ValkeyCluster{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: v1alpha1.ValkeyClusterSpec{ConfigRef: config, ACL: bindingsOf(roles...)}}
}

func bindingsOf(roles ...string) []v1alpha1.AclBinding {
	out := []v1alpha1.AclBinding{}
	for _, r := range roles {
		out = append(out, v1alpha1.AclBinding{Username: "u-" + r, Permissions: []v1alpha1.Permission{{RoleRef: r}}})
	}
	return out
}

func deleted(c v1alpha1.ValkeyConfig) v1alpha1.ValkeyConfig {
	now := metav1.Now()
	c.SetDeletionTimestamp(&now)
	return c
}

func TestDependents(t *testing.T) {
	cycleA, cycleB := useConfig("a", "b", ""), useConfig("b", "a", "")
	menu := MenuUse{
		Configs: []v1alpha1.ValkeyConfig{
			useConfig("root", "", "img", "reader"),
			useConfig("child", "root", ""),
			useConfig("other", "root", "img2", "writer"),
			useConfig("cleared", "root", "", []string{}...),
			deleted(useConfig("gone", "", "img")),
			cycleA, cycleB,
		},
		Clusters: []v1alpha1.ValkeyCluster{
			useCluster("ns1", "c1", "child"),
			useCluster("ns2", "c2", "other", "admin"),
			useCluster("ns1", "c3", "missing", "reader"),
			useCluster("ns1", "c4", "a"),
		},
	}
	tests := []struct {
		name string
		got  Dependents
		want Dependents
	}{
		{"image through the chain, not past an override",
			menu.ImageUsers("img"),
			Dependents{Configs: []string{"child", "cleared", "root"}, Clusters: []string{"ns1/c1"}}},
		{"image a child overrides with",
			menu.ImageUsers("img2"),
			Dependents{Configs: []string{"other"}, Clusters: []string{"ns2/c2"}}},
		{"image nobody names", menu.ImageUsers("unused"), Dependents{}},
		{"config as a baseRef and along the chains of clusters",
			menu.ConfigUsers("root"),
			Dependents{Configs: []string{"child", "cleared", "other"}, Clusters: []string{"ns1/c1", "ns2/c2"}}},
		{"config a cluster names directly",
			menu.ConfigUsers("child"),
			Dependents{Clusters: []string{"ns1/c1"}}},
		{"a deleted config is no user of its base",
			MenuUse{Configs: []v1alpha1.ValkeyConfig{useConfig("root", "", "img"), deleted(useConfig("leaf", "root", ""))}}.ConfigUsers("root"),
			Dependents{}},
		{"a cycle ends without hanging",
			menu.ConfigUsers("b"),
			Dependents{Configs: []string{"a"}, Clusters: []string{"ns1/c4"}}},
		{"role bound by a config, inherited by a cluster, bound by a cluster whose config is missing",
			menu.RoleUsers("reader"),
			Dependents{Configs: []string{"root"}, Clusters: []string{"ns1/c1", "ns1/c3"}}},
		{"role bound by the cluster itself",
			menu.RoleUsers("admin"),
			Dependents{Clusters: []string{"ns2/c2"}}},
		{"role bound by a config a cluster inherits from",
			menu.RoleUsers("writer"),
			Dependents{Configs: []string{"other"}, Clusters: []string{"ns2/c2"}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if !reflect.DeepEqual(tc.got, tc.want) {
				t.Fatalf("got %+v, want %+v", tc.got, tc.want)
			}
			if tc.got.None() != (len(tc.want.Configs)+len(tc.want.Clusters) == 0) {
				t.Fatalf("None() = %v for %+v", tc.got.None(), tc.got)
			}
		})
	}
}

func TestDependentsMessage(t *testing.T) {
	tests := []struct {
		users Dependents
		want  string
	}{
		{Dependents{Configs: []string{"a", "b"}},
			"ValkeyImage img is in use by ValkeyConfigs a, b; its deletion completes once nothing uses it"},
		{Dependents{Clusters: []string{"ns/c"}},
			"ValkeyImage img is in use by ValkeyClusters ns/c; its deletion completes once nothing uses it"},
		{Dependents{Configs: []string{"a"}, Clusters: []string{"ns/c", "ns/d"}},
			"ValkeyImage img is in use by ValkeyConfigs a and ValkeyClusters ns/c, ns/d; its deletion completes once nothing uses it"},
	}
	for _, tc := range tests {
		if got := tc.users.Message("ValkeyImage", "img"); got != tc.want {
			t.Errorf("Message(%+v) = %q, want %q", tc.users, got, tc.want)
		}
	}
}
