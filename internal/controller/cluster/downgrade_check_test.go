package cluster

import (
	"cmp"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	valkeyv1 "github.com/gomomento/valkey-operator/api/v1alpha1"
	"github.com/gomomento/valkey-operator/internal/topology"
	"github.com/gomomento/valkey-operator/internal/valkey"
)

func TestDowngradeBlocked(t *testing.T) {
	now := time.Date(2026, 12, 5, 8, 0, 0, 0, time.UTC)
	v8, v9 := valkey.Version{Major: 8, Patch: 1}, valkey.Version{Major: 9, Minor: 1, Patch: 2}
	member := func(name, id string, role topology.Role, primary string, holds bool) topology.Member {
		return topology.Member{Name: name, View: &topology.View{ID: id, Role: role, PrimaryID: primary, HoldsData: holds}}
	}
	nodes := func(age time.Duration) map[string]*valkeyv1.ValkeyNode {
		out := map[string]*valkeyv1.ValkeyNode{}
		for _, n := range []string{"old", "fresh"} {
			out[n] = &valkeyv1.ValkeyNode{ObjectMeta: metav1.ObjectMeta{Name: n, CreationTimestamp: metav1.NewTime(now.Add(-age))},
				Spec: valkeyv1.ValkeyNodeSpec{Image: "valkey/valkey:8.0.1"}}
		}
		return out
	}
	tests := []struct {
		name     string
		members  []topology.Member
		versions map[string]valkey.Version
		age      time.Duration
		// image is the one the cluster asks for, the fresh node's unless set.
		image string
		want  string
	}{
		{"an older replica that never synced, past the grace", []topology.Member{
			member("old", "id-old", topology.RolePrimary, "", false), member("fresh", "id-fresh", topology.RoleReplica, "id-old", false),
		}, map[string]valkey.Version{"old": v9, "fresh": v8}, 2 * time.Minute, "",
			"downgrade held: node fresh (Valkey 8.0.1) has not loaded the data of its primary old (Valkey 9.1.2) in 1m0s"},
		{"still within its grace", []topology.Member{
			member("old", "id-old", topology.RolePrimary, "", false), member("fresh", "id-fresh", topology.RoleReplica, "id-old", false),
		}, map[string]valkey.Version{"old": v9, "fresh": v8}, 30 * time.Second, "", ""},
		{"it synced: the data was readable", []topology.Member{
			member("old", "id-old", topology.RolePrimary, "", false), member("fresh", "id-fresh", topology.RoleReplica, "id-old", true),
		}, map[string]valkey.Version{"old": v9, "fresh": v8}, 2 * time.Minute, "", ""},
		{"an upgrade that syncs slowly is not a downgrade", []topology.Member{
			member("old", "id-old", topology.RolePrimary, "", false), member("fresh", "id-fresh", topology.RoleReplica, "id-old", false),
		}, map[string]valkey.Version{"old": v8, "fresh": v9}, 2 * time.Minute, "", ""},
		{"the image set back: the stuck replica is the roll's to retire", []topology.Member{
			member("old", "id-old", topology.RolePrimary, "", false), member("fresh", "id-fresh", topology.RoleReplica, "id-old", false),
		}, map[string]valkey.Version{"old": v9, "fresh": v8}, 2 * time.Minute, "valkey/valkey:9.1.2", ""},
		{"a version not known yet decides nothing", []topology.Member{
			member("old", "id-old", topology.RolePrimary, "", false), member("fresh", "id-fresh", topology.RoleReplica, "id-old", false),
		}, map[string]valkey.Version{"old": v9}, 2 * time.Minute, "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			image := cmp.Or(tt.image, "valkey/valkey:8.0.1")
			got := downgradeBlocked(tt.members, nodes(tt.age), tt.versions, image, now)
			if (tt.want == "") != (got == "") || !strings.HasPrefix(got, tt.want) {
				t.Errorf("got  %q\nwant %q...", got, tt.want)
			}
		})
	}
}
