package render

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gomomento/valkey-operator/api/v1alpha1"
)

func TestMemorySafety(t *testing.T) {
	tests := []struct {
		name   string
		user   map[string]string
		memory string
		want   map[string]string
		gone   []string
	}{
		{
			name:   "no limit: no maxmemory, snapshots still off",
			memory: "",
			want:   map[string]string{"save": ""},
			gone:   []string{"maxmemory"},
		},
		{
			name:   "1Gi: an eighth for the replica buffer, 32Mi fixed, a quarter of the rest for the fork",
			memory: "1Gi",
			// 3/4 × (1024Mi − 128Mi − 32Mi) = 648Mi
			want: map[string]string{"maxmemory": "679477248", "client-output-buffer-limit": "replica 134217728 0 0", "save": ""},
		},
		{
			name:   "4Gi: the buffer grows with the limit",
			memory: "4Gi",
			// 3/4 × (4096Mi − 512Mi − 32Mi) = 2664Mi
			want: map[string]string{"maxmemory": "2793406464", "client-output-buffer-limit": "replica 536870912 0 0"},
		},
		{
			name:   "100Mi: the fixed part shrinks to a quarter of the limit",
			memory: "100Mi",
			// 3/4 × (100Mi − 12.5Mi − 25Mi) = 46.875Mi
			want: map[string]string{"maxmemory": "49152000", "client-output-buffer-limit": "replica 13107200 0 0"},
		},
		{
			name:   "40Mi still gets a positive maxmemory",
			memory: "40Mi",
			// 3/4 × (40Mi − 5Mi − 10Mi) = 18.75Mi
			want: map[string]string{"maxmemory": "19660800"},
		},
		{
			name: "no limit: Valkey's own replica buffer stays",
			gone: []string{"client-output-buffer-limit", "maxmemory"},
		},
		{
			name:   "the user's buffer limit wins, in any case; maxmemory is still derived",
			user:   map[string]string{"Client-Output-Buffer-Limit": "replica 64mb 0 0"},
			memory: "1Gi",
			want:   map[string]string{"Client-Output-Buffer-Limit": "replica 64mb 0 0", "maxmemory": "679477248"},
			gone:   []string{"client-output-buffer-limit"},
		},
		{
			name: "replicas are synced after a second, not Valkey's five",
			want: map[string]string{"repl-diskless-sync-delay": "1"},
		},
		{
			name: "the user's sync delay wins, in any case",
			user: map[string]string{"Repl-Diskless-Sync-Delay": "5"},
			want: map[string]string{"Repl-Diskless-Sync-Delay": "5"},
			gone: []string{"repl-diskless-sync-delay"},
		},
		{
			name:   "the user's maxmemory wins, in any case",
			user:   map[string]string{"MaxMemory": "2gb"},
			memory: "1Gi",
			want:   map[string]string{"MaxMemory": "2gb"},
			gone:   []string{"maxmemory"},
		},
		{
			name:   "snapshots cannot be turned on",
			user:   map[string]string{"save": "3600 1", "SAVE": "60 100"},
			memory: "1Gi",
			want:   map[string]string{"save": ""},
			gone:   []string{"SAVE"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := nodeSettings(tt.user, false, nil, tt.memory)
			if err != nil {
				t.Fatal(err)
			}
			for k, v := range tt.want {
				if gv, ok := got[k]; !ok || gv != v {
					t.Errorf("%s = %q (present %v), want %q", k, gv, ok, v)
				}
			}
			for _, k := range tt.gone {
				if _, ok := got[k]; ok {
					t.Errorf("%s present, want absent", k)
				}
			}
		})
	}
	if _, err := nodeSettings(nil, false, nil, "lots"); err == nil {
		t.Error("an unparsable memory limit was accepted")
	}
}

// The derived maxmemory never shrinks as the limit grows, and always
// leaves Valkey something: a dip at the 128Mi bend would make a larger node
// hold less, and 0 would mean no limit at all.
func TestDerivedMaxmemoryGrowsWithTheLimit(t *testing.T) {
	prev := int64(0)
	for limit := int64(1 << 20); limit <= 1<<40; limit += limit/64 + 1 {
		got := maxmemoryFor(limit, replicaBufferFor(limit))
		if got <= 0 || got < prev || got >= limit {
			t.Fatalf("limit %d: maxmemory %d (previous %d)", limit, got, prev)
		}
		prev = got
	}
}

func TestMemoryHeadroom(t *testing.T) {
	tests := []struct {
		name   string
		user   map[string]string
		memory string
		status metav1.ConditionStatus
		reason string
		msg    string
	}{
		{
			name:   "derived",
			memory: "1Gi",
			status: metav1.ConditionTrue, reason: v1alpha1.ReasonHeadroomSufficient,
			msg: "maxmemory 648Mi, derived from the memory limit 1Gi, leaves 376Mi for a full sync's fork, the replica output buffer (hard limit 128Mi, derived) and Valkey's own memory",
		},
		{
			name:   "set at the safe ceiling",
			user:   map[string]string{"maxmemory": "648mb"},
			memory: "1Gi",
			status: metav1.ConditionTrue, reason: v1alpha1.ReasonHeadroomSufficient,
			msg: `maxmemory "648mb" (648Mi) leaves 376Mi of the memory limit 1Gi for a full sync's fork, the replica output buffer (hard limit 128Mi, derived) and Valkey's own memory; up to 648Mi would`,
		},
		{
			name:   "one byte over the ceiling",
			user:   map[string]string{"maxmemory": "679477249"},
			memory: "1Gi",
			status: metav1.ConditionFalse, reason: v1alpha1.ReasonHeadroomTooSmall,
		},
		{
			name:   "today's fifth of headroom is too little",
			user:   map[string]string{"maxmemory": "800mb"},
			memory: "1Gi",
			status: metav1.ConditionFalse, reason: v1alpha1.ReasonHeadroomTooSmall,
			msg: `maxmemory "800mb" (800Mi) leaves 224Mi of the memory limit 1Gi, less than the 376Mi a full sync's fork, the replica output buffer (hard limit 128Mi, derived) and Valkey's own memory need: a full sync can get the node OOM-killed; set maxmemory to at most 648Mi, or remove it to get that derived value`,
		},
		{
			name:   "above the limit itself",
			user:   map[string]string{"maxmemory": "2gb"},
			memory: "1Gi",
			status: metav1.ConditionFalse, reason: v1alpha1.ReasonHeadroomTooSmall,
			msg: `maxmemory "2gb" (2Gi) leaves 0Mi of the memory limit 1Gi, less than the 376Mi a full sync's fork, the replica output buffer (hard limit 128Mi, derived) and Valkey's own memory need: a full sync can get the node OOM-killed; set maxmemory to at most 648Mi, or remove it to get that derived value`,
		},
		{
			name:   "zero is no limit",
			user:   map[string]string{"MaxMemory": "0"},
			memory: "1Gi",
			status: metav1.ConditionFalse, reason: v1alpha1.ReasonMaxmemoryUnlimited,
			msg: `maxmemory "0" sets no limit: the data set can grow until the node is OOM-killed at its memory limit 1Gi and is lost; set maxmemory to at most 648Mi, or remove it to get that derived value`,
		},
		{
			name:   "of two spellings the one valkey.conf reads last counts",
			user:   map[string]string{"MAXMEMORY": "0", "maxmemory": "100mb"},
			memory: "1Gi",
			status: metav1.ConditionTrue, reason: v1alpha1.ReasonHeadroomSufficient,
		},
		{
			name:   "a smaller replica buffer makes room for more data",
			user:   map[string]string{"maxmemory": "700mb", "client-output-buffer-limit": "replica 32mb 0 0"},
			memory: "1Gi",
			// 3/4 × (1024Mi − 32Mi − 32Mi) = 720Mi
			status: metav1.ConditionTrue, reason: v1alpha1.ReasonHeadroomSufficient,
			msg: `maxmemory "700mb" (700Mi) leaves 324Mi of the memory limit 1Gi for a full sync's fork, the replica output buffer (hard limit 32Mi, set) and Valkey's own memory; up to 720Mi would`,
		},
		{
			name:   "the old class name counts",
			user:   map[string]string{"maxmemory": "700mb", "client-output-buffer-limit": "normal 0 0 0 slave 32mb 0 0"},
			memory: "1Gi",
			status: metav1.ConditionTrue, reason: v1alpha1.ReasonHeadroomSufficient,
		},
		{
			name:   "a buffer directive without a replica class leaves Valkey's 256mb",
			user:   map[string]string{"client-output-buffer-limit": "pubsub 64mb 16mb 60"},
			memory: "1Gi",
			// 3/4 × (1024Mi − 256Mi − 32Mi) = 552Mi
			status: metav1.ConditionTrue, reason: v1alpha1.ReasonHeadroomSufficient,
			msg: "maxmemory 552Mi, derived from the memory limit 1Gi, leaves 472Mi for a full sync's fork, the replica output buffer (hard limit 256Mi, Valkey's default) and Valkey's own memory",
		},
		{
			name:   "an unbounded replica buffer",
			user:   map[string]string{"client-output-buffer-limit": "replica 0 0 0"},
			memory: "1Gi",
			status: metav1.ConditionFalse, reason: v1alpha1.ReasonHeadroomTooSmall,
			msg: `client-output-buffer-limit "replica 0 0 0" sets no hard limit for replicas: the buffer of a full sync can grow until the node is OOM-killed at its memory limit 1Gi; set one, or remove the directive to get the derived 128Mi`,
		},
		{
			name:   "a replica buffer as large as the limit",
			user:   map[string]string{"client-output-buffer-limit": "replica 1gb 0 0"},
			memory: "1Gi",
			status: metav1.ConditionFalse, reason: v1alpha1.ReasonHeadroomTooSmall,
			msg: "the replica output buffer hard limit 1Gi (set) leaves no room for data in the memory limit 1Gi; lower it, or remove client-output-buffer-limit to get the derived 128Mi",
		},
		{
			name:   "no memory limit",
			user:   map[string]string{"maxmemory": "0"},
			status: metav1.ConditionUnknown, reason: v1alpha1.ReasonNoMemoryLimit,
			msg: "no memory limit in the config chain: nothing bounds the nodes' memory and nothing to weigh maxmemory against; set resources.memory",
		},
		{
			name:   "maxmemory Valkey cannot read",
			user:   map[string]string{"maxmemory": "50%"},
			memory: "1Gi",
			status: metav1.ConditionUnknown, reason: v1alpha1.ReasonMemorySettingUnreadable,
			msg: `maxmemory "50%" cannot be read (memory size "50%": want a non-negative number with an optional k, kb, m, mb, g or gb); nodes do not start with a value Valkey refuses`,
		},
		{
			name:   "buffer limit in the wrong shape",
			user:   map[string]string{"client-output-buffer-limit": "replica 64mb"},
			memory: "1Gi",
			status: metav1.ConditionUnknown, reason: v1alpha1.ReasonMemorySettingUnreadable,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := MemoryHeadroom(tt.user, tt.memory)
			if got.Status != tt.status || got.Reason != tt.reason {
				t.Errorf("got %s %s (%s), want %s %s", got.Status, got.Reason, got.Message, tt.status, tt.reason)
			}
			if tt.msg != "" && got.Message != tt.msg {
				t.Errorf("message\n got %s\nwant %s", got.Message, tt.msg)
			}
		})
	}
}

// What nodeSettings derives is what MemoryHeadroom accepts, at every size:
// the default must never be reported as unsafe.
func TestDerivedSettingsPassTheHeadroomCheck(t *testing.T) {
	for _, memory := range []string{"16Mi", "40Mi", "100Mi", "127Mi", "128Mi", "129Mi", "1Gi", "3G", "64Gi"} {
		derived, err := nodeSettings(nil, false, nil, memory)
		if err != nil {
			t.Fatal(err)
		}
		user := map[string]string{"maxmemory": derived["maxmemory"], "client-output-buffer-limit": derived["client-output-buffer-limit"]}
		if h := MemoryHeadroom(user, memory); h.Reason != v1alpha1.ReasonHeadroomSufficient {
			t.Errorf("%s: derived %v judged %s: %s", memory, user, h.Reason, h.Message)
		}
	}
}
