package render

import (
	"testing"
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
			name:   "large limit keeps a fifth as headroom",
			memory: "1Gi",
			want:   map[string]string{"maxmemory": "858993460", "save": ""},
		},
		{
			name:   "small limit keeps at least 32Mi as headroom",
			memory: "100Mi",
			want:   map[string]string{"maxmemory": "71303168"},
		},
		{
			name:   "tiny limit gets half",
			memory: "40Mi",
			want:   map[string]string{"maxmemory": "20971520"},
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
			got, err := nodeSettings(tt.user, false, tt.memory)
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
	if _, err := nodeSettings(nil, false, "lots"); err == nil {
		t.Error("an unparsable memory limit was accepted")
	}
}
