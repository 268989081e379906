package render

import (
	"crypto/sha256"
	"encoding/hex"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/gomomento/valkey-operator/api/v1alpha1"
	"github.com/gomomento/valkey-operator/internal/resolve"
	"github.com/gomomento/valkey-operator/internal/valkey"
)

func TestACLFileLoadsInValkey(t *testing.T) {
	const adminPassword = "admin-secret"
	sum := sha256.Sum256([]byte(adminPassword))
	admin := resolve.User{
		Binding: v1alpha1.AclBinding{
			Username:       "admin",
			PasswordHashes: []v1alpha1.PasswordHash{v1alpha1.PasswordHash(hex.EncodeToString(sum[:]))},
			Permissions:    []v1alpha1.Permission{{RoleRef: "all", Keys: []v1alpha1.KeyPattern{{Pattern: "*"}}, Channels: []v1alpha1.ChannelPattern{"*"}}},
		},
		Roles: []v1alpha1.ValkeyRoleSpec{{Categories: []v1alpha1.CategoryRule{{Name: "all", Access: v1alpha1.RuleAllow}}}},
	}
	empty := resolve.User{
		Binding: v1alpha1.AclBinding{
			Username:       "nothing",
			PasswordHashes: []v1alpha1.PasswordHash{hashA},
			Permissions:    []v1alpha1.Permission{{RoleRef: "none"}, {RoleRef: "none"}},
		},
		Roles: []v1alpha1.ValkeyRoleSpec{{}, {}},
	}

	tests := []struct {
		name     string
		users    []resolve.User
		exporter bool
		// check runs against the loaded server.
		check func(t *testing.T, addr string, version valkey.Version)
	}{
		{
			name: "no binding: default is open",
			check: func(t *testing.T, addr string, version valkey.Version) {
				c := dial(t, addr)
				if got := c.must(t, "SET", "k", "v"); got != "OK" {
					t.Fatalf("SET as default = %v", got)
				}
				assertUsers(t, c, "_momento_operator", "_momento_repl", "default")
			},
		},
		{
			name:  "bindings: default off, selectors and system users enforced",
			users: []resolve.User{admin, teamBatch, empty},
			check: func(t *testing.T, addr string, version valkey.Version) {
				c := dial(t, addr)
				if _, err := c.do("PING"); err == nil || !strings.Contains(err.Error(), "NOAUTH") {
					t.Fatalf("PING as disabled default = %v, want NOAUTH", err)
				}
				c.must(t, "AUTH", "admin", adminPassword)
				assertUsers(t, c, "_momento_operator", "_momento_repl", "admin", "default", "nothing", "team-batch")
				for _, tc := range []struct {
					user string
					args []string
					ok   bool
				}{
					{"team-batch", []string{"set", "batch:1", "x"}, true},
					{"team-batch", []string{"get", "metrics:1"}, true},
					{"team-batch", []string{"set", "metrics:1", "x"}, false},
					{"team-batch", []string{"flushall"}, false},
					{"team-batch", []string{"get", "other"}, false},
					{"_momento_operator", []string{"cluster", "info"}, true},
					{"_momento_operator", []string{"cluster", "reset"}, false},
					{"_momento_operator", []string{"cluster", "flushslots"}, false},
					{"_momento_operator", []string{"cluster", "delslots", "1"}, false},
					{"_momento_operator", []string{"cluster", "migrateslots", "slotsrange", "0", "1", "node", "x"}, version.Major >= 9},
					{"_momento_operator", []string{"flushall"}, false},
					{"_momento_operator", []string{"config", "set", "maxmemory", "1"}, true},
					{"_momento_operator", []string{"config", "get", "maxmemory"}, true}, // the drift check
					{"_momento_operator", []string{"acl", "list"}, true},
					// Per-user ACL changes only where ACL LOAD crashes replicas.
					{"_momento_operator", []string{"acl", "setuser", "x"}, valkey.ACLLoadCrashesReplicas(version)},
					{"_momento_operator", []string{"acl", "deluser", "x"}, valkey.ACLLoadCrashesReplicas(version)},
					{"_momento_operator", []string{"get", "k"}, false},
					{"_momento_operator", []string{"set", "k", "v"}, false},
					{"_momento_operator", []string{"migrate", "10.0.0.1", "6379", "", "0", "1000", "KEYS", "k"}, true},
					{"_momento_operator", []string{"restore-asking", "k", "0", "x"}, true},
					{"_momento_repl", []string{"replconf", "ack", "0"}, true},
					{"_momento_repl", []string{"get", "k"}, false},
					// Atomic slot migration replays writes as this user.
					{"_momento_repl", []string{"set", "k", "v"}, version.Major >= 9},
					{"_momento_repl", []string{"select", "0"}, version.Major >= 9},
					{"_momento_repl", []string{"rpush", "l", "a"}, version.Major >= 9},
					{"_momento_repl", []string{"restore", "k", "0", "x"}, version.Major >= 9},
					{"_momento_repl", []string{"flushall"}, false},
					{"_momento_repl", []string{"flushdb"}, false},
					{"_momento_repl", []string{"swapdb", "0", "1"}, false},
					{"_momento_repl", []string{"migrate", "10.0.0.1", "6379", "", "0", "1000", "KEYS", "k"}, false},
					{"_momento_repl", []string{"function", "flush"}, false},
					{"nothing", []string{"ping"}, false},
				} {
					reply, err := c.do(append([]string{"ACL", "DRYRUN", tc.user}, tc.args...)...)
					allowed := err == nil && reply == "OK"
					if allowed != tc.ok {
						t.Errorf("ACL DRYRUN %s %q = %v, %v; want allowed=%v", tc.user, tc.args, reply, err, tc.ok)
					}
				}
			},
		},
		{
			name:     "exporter: server state only, no data, no credential",
			users:    []resolve.User{admin},
			exporter: true,
			check: func(t *testing.T, addr string, version valkey.Version) {
				c := dial(t, addr)
				c.must(t, "AUTH", "admin", adminPassword)
				assertUsers(t, c, "_momento_operator", "_momento_repl", "_momento_exporter", "admin", "default")
				c.must(t, "SET", "k", "v")
				for _, tc := range []struct {
					args []string
					ok   bool
				}{
					// What redis_exporter sends on each scrape.
					{[]string{"info", "all"}, true},
					{[]string{"info", "get", "*"}, true}, // its --config-command=INFO
					{[]string{"cluster", "info"}, true},
					{[]string{"latency", "latest"}, true},
					{[]string{"slowlog", "len"}, true},
					{[]string{"slowlog", "get", "1"}, false}, // arguments of slow commands
					{[]string{"config", "get", "*"}, false},  // primaryauth in plaintext
					{[]string{"config", "get", "primaryauth"}, false},
					{[]string{"client", "setname", "x"}, false},
					{[]string{"client", "list"}, false},
					{[]string{"get", "k"}, false},
					{[]string{"scan", "0"}, false},
					{[]string{"keys", "*"}, false},
					{[]string{"dbsize"}, false},
					{[]string{"acl", "list"}, false},
					{[]string{"monitor"}, false},
					{[]string{"subscribe", "x"}, false},
				} {
					reply, err := c.do(append([]string{"ACL", "DRYRUN", ExporterUser}, tc.args...)...)
					allowed := err == nil && reply == "OK"
					if allowed != tc.ok {
						t.Errorf("ACL DRYRUN %s %q = %v, %v; want allowed=%v", ExporterUser, tc.args, reply, err, tc.ok)
					}
				}
				e := dial(t, addr)
				e.must(t, "AUTH", ExporterUser, testPasswords.Exporter)
				if got := e.must(t, "INFO", "GET", "*"); got != "" {
					t.Errorf("INFO GET * = %q, want an empty reply", got)
				}
			},
		},
	}
	for _, server := range valkeyServers(t) {
		for _, tt := range tests {
			t.Run(server.name+"/"+tt.name, func(t *testing.T) {
				file, err := ACLFile(tt.users, testPasswords, server.version, tt.exporter)
				if err != nil {
					t.Fatal(err)
				}
				path := filepath.Join(t.TempDir(), KeyACL)
				writeFile(t, path, file)
				addr := server.start(t, "--aclfile", path)
				v, err := valkey.ParseVersion(server.version)
				if err != nil {
					t.Fatal(err)
				}
				tt.check(t, addr, v)

				// The operator reloads the file as its own user.
				op := dial(t, addr)
				op.must(t, "AUTH", OperatorUser, testPasswords.Operator)
				if got := op.must(t, "ACL", "LOAD"); got != "OK" {
					t.Fatalf("ACL LOAD = %v", got)
				}
			})
		}
	}
}

func assertUsers(t *testing.T, c *conn, want ...string) {
	t.Helper()
	reply, ok := c.must(t, "ACL", "USERS").([]any)
	if !ok {
		t.Fatalf("ACL USERS reply %v", reply)
	}
	var got []string
	for _, u := range reply {
		got = append(got, u.(string))
	}
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Fatalf("ACL USERS = %q, want %q", got, want)
	}
}
