package cluster

import (
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	valkeyv1 "github.com/gomomento/valkey-operator/api/v1alpha1"
	"github.com/gomomento/valkey-operator/internal/resolve"
	"github.com/gomomento/valkey-operator/internal/topology"
	"github.com/gomomento/valkey-operator/internal/valkey"
)

func TestVersionMismatch(t *testing.T) {
	node := func(name, image string) *valkeyv1.ValkeyNode {
		return &valkeyv1.ValkeyNode{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: valkeyv1.ValkeyNodeSpec{Image: image}}
	}
	v := func(s string) valkey.Version {
		out, err := valkey.ParseVersion(s)
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	res := &resolve.Result{ImageName: "valkey-9", Image: "valkey/valkey:9.1.2", Version: "8.0.1"}
	nodes := map[string]*valkeyv1.ValkeyNode{
		"old-a": node("old-a", "valkey/valkey:8.0.1"),
		"new-b": node("new-b", "valkey/valkey:9.1.2"),
		"new-c": node("new-c", "valkey/valkey:9.1.2"),
	}
	tests := []struct {
		name     string
		res      *resolve.Result
		versions map[string]valkey.Version
		want     string
	}{
		{"no node of the image answers yet", res, map[string]valkey.Version{"old-a": v("8.0.1")}, ""},
		{"a new node runs what its image declares", &resolve.Result{ImageName: "valkey-9", Image: "valkey/valkey:9.1.2", Version: "9.1.2"},
			map[string]valkey.Version{"old-a": v("8.0.1"), "new-b": v("9.1.2")}, ""},
		{"the first new node to answer runs another version", res,
			map[string]valkey.Version{"old-a": v("8.0.1"), "new-b": v("9.1.2")},
			"ValkeyImage valkey-9 (valkey/valkey:9.1.2) declares Valkey 8.0.1, but node new-b runs 9.1.2; no node is created until they agree"},
		{"every new node is named, sorted", res,
			map[string]valkey.Version{"new-c": v("9.1.2"), "new-b": v("9.1.2")},
			"ValkeyImage valkey-9 (valkey/valkey:9.1.2) declares Valkey 8.0.1, but node new-b runs 9.1.2, node new-c runs 9.1.2; no node is created until they agree"},
		{"an old node is not judged by the new image", &resolve.Result{ImageName: "valkey-8", Image: "valkey/valkey:8.0.1", Version: "8.0.2"},
			map[string]valkey.Version{"new-b": v("9.1.2")}, ""},
		{"a version a node answers for a node no longer listed", res, map[string]valkey.Version{"gone": v("9.1.2")}, ""},
		{"no resolved image", nil, map[string]valkey.Version{"new-b": v("9.1.2")}, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := versionMismatch(nodes, tc.versions, tc.res); got != tc.want {
				t.Fatalf("got %q\nwant %q", got, tc.want)
			}
		})
	}
}

// The version check's message and reason: a node that runs another
// version than its image declares comes first, then a downgrade the data
// blocks; without a resolved image there is nothing to check.
func TestVersionCheck(t *testing.T) {
	now := time.Date(2026, 12, 5, 8, 0, 0, 0, time.UTC)
	res := &resolve.Result{ImageName: "valkey-8", Image: "valkey/valkey:8.0.1", Version: "8.0.1"}
	node := func(name, image string) *valkeyv1.ValkeyNode {
		return &valkeyv1.ValkeyNode{ObjectMeta: metav1.ObjectMeta{Name: name, CreationTimestamp: metav1.NewTime(now.Add(-2 * time.Minute))},
			Spec: valkeyv1.ValkeyNodeSpec{Image: image}}
	}
	o := func(fresh string) *observed {
		return &observed{
			nodes: map[string]*valkeyv1.ValkeyNode{"old": node("old", "valkey/valkey:9.1.2"), "fresh": node("fresh", res.Image)},
			members: []topology.Member{
				{Name: "old", View: &topology.View{ID: "id-old", Role: topology.RolePrimary}},
				{Name: "fresh", View: &topology.View{ID: "id-fresh", Role: topology.RoleReplica, PrimaryID: "id-old"}},
			},
			versions: map[string]valkey.Version{"old": {Major: 9, Minor: 1, Patch: 2}, "fresh": mustVersion(t, fresh)},
		}
	}
	tests := []struct {
		name   string
		o      *observed
		res    *resolve.Result
		prefix string
		reason string
	}{
		{"another version than declared comes first", o("8.0.2"), res,
			"ValkeyImage valkey-8 (valkey/valkey:8.0.1) declares Valkey 8.0.1, but node fresh runs 8.0.2", valkeyv1.ReasonVersionMismatch},
		{"a downgrade the data blocks", o("8.0.1"), res,
			"downgrade held: node fresh (Valkey 8.0.1) has not loaded the data of its primary old (Valkey 9.1.2)", valkeyv1.ReasonDowngradeBlocked},
		{"no resolved image, nothing to check", o("8.0.2"), nil, "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, reason := versionCheck(tt.o, tt.res, now)
			if (got == "") != (tt.prefix == "") || !strings.HasPrefix(got, tt.prefix) || (got != "" && reason != tt.reason) {
				t.Fatalf("got %q (%s)\nwant %q... (%s)", got, reason, tt.prefix, tt.reason)
			}
		})
	}
}

func mustVersion(t *testing.T, s string) valkey.Version {
	t.Helper()
	v, err := valkey.ParseVersion(s)
	if err != nil {
		t.Fatal(err)
	}
	return v
}
