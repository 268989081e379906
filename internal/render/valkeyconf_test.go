package render

import (
	"errors"
	"testing"
)

func TestSettings(t *testing.T) {
	tests := []struct {
		name string
		user map[string]string
		tls  bool
		want map[string]string // keys checked, beyond the forced table
		gone []string          // keys that must not survive
	}{
		{
			name: "nil map gets the forced settings",
			want: map[string]string{"cluster-enabled": "yes", "port": "6379", "primaryuser": "_momento_repl"},
			gone: []string{"tls-port", "bind", "primaryauth"},
		},
		{
			name: "forced settings win over the user's",
			user: map[string]string{"cluster-node-timeout": "15000", "protected-mode": "yes", "maxmemory": "1gb"},
			want: map[string]string{"cluster-node-timeout": "5000", "protected-mode": "no", "maxmemory": "1gb"},
		},
		{
			name: "a case variant of a forced key is dropped",
			user: map[string]string{"PORT": "7000", "Dir": "/tmp"},
			want: map[string]string{"port": "6379", "dir": "/var/lib/valkey"},
			gone: []string{"PORT", "Dir"},
		},
		{
			name: "tls replaces port and adds the tls directives",
			user: map[string]string{"tls-port": "7000", "cluster-preferred-endpoint-type": "ip"},
			tls:  true,
			want: map[string]string{
				"port": "0", "tls-port": "6379", "tls-cluster": "yes", "tls-replication": "yes",
				"tls-cert-file": "/etc/valkey/tls/tls.crt", "tls-key-file": "/etc/valkey/tls/tls.key",
				"tls-ca-cert-file": "/etc/valkey/tls/ca.crt", "tls-auth-clients": "no",
				"cluster-preferred-endpoint-type": "hostname",
			},
			// Per pod, added when the ConfigMap is rendered.
			gone: []string{"cluster-announce-hostname"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := settings(tt.user, tt.tls, nil)
			if err != nil {
				t.Fatal(err)
			}
			for _, s := range forcedAlways {
				if _, ok := got[s.key]; !ok {
					t.Errorf("forced %q missing", s.key)
				}
			}
			for k, v := range tt.want {
				if got[k] != v {
					t.Errorf("%s = %q, want %q", k, got[k], v)
				}
			}
			for _, k := range tt.gone {
				if _, ok := got[k]; ok {
					t.Errorf("%s present", k)
				}
			}
		})
	}
}

func TestSettingsDoesNotModifyItsInput(t *testing.T) {
	user := map[string]string{"port": "7000"}
	if _, err := settings(user, true, nil); err != nil {
		t.Fatal(err)
	}
	if len(user) != 1 || user["port"] != "7000" {
		t.Fatalf("input changed: %v", user)
	}
}

func TestValkeyConf(t *testing.T) {
	tests := []struct {
		name     string
		settings map[string]string
		want     string
		wantErr  bool
		errKey   string
	}{
		{
			name:     "sorted, then the include",
			settings: map[string]string{"b": "2", "a": "1", "save": "900 1 300 10"},
			want:     "a 1\nb 2\nsave 900 1 300 10\ninclude /etc/valkey/auth/primaryauth.conf\n",
		},
		{
			name:     "an empty value is an empty argument",
			settings: map[string]string{"save": ""},
			want:     "save \"\"\ninclude /etc/valkey/auth/primaryauth.conf\n",
		},
		{
			name: "no settings",
			want: "include /etc/valkey/auth/primaryauth.conf\n",
		},
		{name: "newline in a value", settings: map[string]string{"a": "1", "maxmemory": "1gb\ninclude /x"}, wantErr: true, errKey: "maxmemory"},
		{name: "carriage return in a value", settings: map[string]string{"loglevel": "notice\rinclude /x"}, wantErr: true, errKey: "loglevel"},
		{name: "newline in a key", settings: map[string]string{"a\ninclude": "/x"}, wantErr: true, errKey: "a\ninclude"},
		{name: "space in a key smuggles a directive past admission", settings: map[string]string{"include /x": ""}, wantErr: true, errKey: "include /x"},
		{name: "empty key", settings: map[string]string{"": "x"}, wantErr: true, errKey: ""},
		{name: "quote in a key", settings: map[string]string{`a"b`: "x"}, wantErr: true, errKey: `a"b`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := valkeyConf(tt.settings)
			if !tt.wantErr {
				if err != nil || got != tt.want {
					t.Fatalf("got %q, %v; want %q", got, err, tt.want)
				}
				return
			}
			var serr *settingError
			if !errors.As(err, &serr) || serr.Key != tt.errKey {
				t.Fatalf("err = %v, want a settingError for %q", err, tt.errKey)
			}
			if _, err := settings(tt.settings, false, nil); !errors.As(err, &serr) {
				t.Fatalf("settings accepted what valkeyConf refuses: %v", err)
			}
		})
	}
}
