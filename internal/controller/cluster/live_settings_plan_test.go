package cluster

import (
	"slices"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	valkeyv1 "github.com/gomomento/valkey-operator/api/v1alpha1"
	"github.com/gomomento/valkey-operator/internal/render"
)

func TestPlanLiveSettings(t *testing.T) {
	recorded := map[string]string{"maxmemory": "100mb", "maxmemory-policy": "noeviction", "port": "6379"}
	edited := map[string]string{"maxmemory": "200mb", "maxmemory-policy": "allkeys-lru", "port": "6379"}
	restart := map[string]string{"maxmemory": "200mb", "maxmemory-policy": "noeviction", "port": "6380"}
	runsRecorded := map[string]string{"maxmemory": "104857600", "maxmemory-policy": "noeviction"}
	runsEdited := map[string]string{"maxmemory": "209715200", "maxmemory-policy": "allkeys-lru"}
	handEdited := map[string]string{"maxmemory": "104857600", "maxmemory-policy": "allkeys-random"}
	tests := []struct {
		name          string
		node          liveNode
		revert        bool
		wantRecord    bool
		wantPending   []string
		wantSet       []string
		wantDrift     []string
		wantConfirmed bool
	}{
		{name: "in step: nothing to do", node: liveNode{recorded: recorded, desired: recorded, running: runsRecorded}, revert: true},
		{name: "a live edit is recorded and set", node: liveNode{recorded: recorded, desired: edited, running: runsRecorded}, revert: true,
			wantRecord: true, wantPending: []string{"maxmemory", "maxmemory-policy"}, wantSet: []string{"maxmemory", "maxmemory-policy"}},
		{name: "an edit with a restart setting is left to the roll", node: liveNode{recorded: recorded, desired: restart, running: runsRecorded}, revert: true},
		{name: "a node not running keeps the edit pending", node: liveNode{recorded: recorded, desired: edited}, revert: true,
			wantRecord: true, wantPending: []string{"maxmemory", "maxmemory-policy"}},
		{name: "an unreachable node's pending edit is retried", node: liveNode{recorded: edited, desired: edited,
			pending: []string{"maxmemory", "maxmemory-policy"}, running: runsRecorded}, revert: true,
			wantPending: []string{"maxmemory", "maxmemory-policy"}, wantSet: []string{"maxmemory", "maxmemory-policy"}},
		{name: "a node that runs its pending edit is confirmed", node: liveNode{recorded: edited, desired: edited,
			pending: []string{"maxmemory"}, running: runsEdited}, revert: true,
			wantPending: []string{"maxmemory"}, wantConfirmed: true},
		{name: "a hand edit is drift, set back", node: liveNode{recorded: recorded, desired: recorded, running: handEdited}, revert: true,
			wantDrift: []string{"maxmemory-policy"}, wantSet: []string{"maxmemory-policy"}},
		{name: "a hand edit is only reported when the cluster says so", node: liveNode{recorded: recorded, desired: recorded, running: handEdited},
			wantDrift: []string{"maxmemory-policy"}},
		{name: "an edit never read back is not confirmed", node: liveNode{recorded: edited, desired: edited,
			pending: []string{"maxmemory"}, unread: true}, revert: true, wantPending: []string{"maxmemory"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.node.name = "n"
			p := planLiveSettings([]liveNode{tt.node}, tt.revert)
			st := p.steps[0]
			if st.record != tt.wantRecord || !slices.Equal(st.pending, tt.wantPending) || !slices.Equal(st.set, tt.wantSet) ||
				!slices.Equal(st.drift, tt.wantDrift) || st.confirmed != tt.wantConfirmed {
				t.Fatalf("step = record %v pending %q set %q drift %q confirmed %v; want %v %q %q %q %v",
					st.record, st.pending, st.set, st.drift, st.confirmed,
					tt.wantRecord, tt.wantPending, tt.wantSet, tt.wantDrift, tt.wantConfirmed)
			}
			if applying := len(p.applying()) > 0; applying != (len(tt.wantPending) > 0 && !tt.wantConfirmed) {
				t.Fatalf("applying = %q", p.applying())
			}
		})
	}
}

// A node has taken its shard's live settings only once they are recorded
// on it, confirmed by its server and not refused; a leaving node owes
// nothing. The rollout gate records a generation as rolled out only then.
func TestLiveUnsettled(t *testing.T) {
	want := map[string]string{"maxmemory": "64mb", "maxmemory-policy": "allkeys-lru"}
	node := func(settings map[string]string, annotations map[string]string, lifecycle valkeyv1.NodeLifecycle) *valkeyv1.ValkeyNode {
		return &valkeyv1.ValkeyNode{
			ObjectMeta: metav1.ObjectMeta{Annotations: annotations},
			Spec:       valkeyv1.ValkeyNodeSpec{ValkeySettings: settings, Lifecycle: lifecycle},
		}
	}
	old := map[string]string{"maxmemory": "64mb"}
	for _, tc := range []struct {
		name string
		n    *valkeyv1.ValkeyNode
		want map[string]string
		owes bool
	}{
		{"taken", node(want, nil, ""), want, false},
		{"nothing asked", node(nil, nil, ""), map[string]string{}, false},
		{"not recorded yet", node(old, nil, ""), want, true},
		{"recorded, not confirmed", node(want, map[string]string{valkeyv1.AnnotationLiveSettingsPending: "maxmemory-policy"}, ""), want, true},
		{"refused: the old ones stay recorded", node(old, map[string]string{valkeyv1.AnnotationLiveSettingsRefused: render.SettingsDigest(want)}, ""), want, true},
		{"leaving", node(old, nil, valkeyv1.LifecycleLeaving), want, false},
	} {
		if got := liveUnsettled(tc.n, tc.want); got != tc.owes {
			t.Errorf("%s: liveUnsettled = %v, want %v", tc.name, got, tc.owes)
		}
	}
}
