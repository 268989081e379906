package render

import (
	"slices"
	"strings"
	"testing"

	"github.com/gomomento/valkey-operator/api/v1alpha1"
	"github.com/gomomento/valkey-operator/internal/resolve"
)

const (
	hashA = "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
	hashB = "bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb"
)

var (
	testPasswords = Passwords{Operator: strings.Repeat("0", 128), Replication: strings.Repeat("1", 128), Exporter: strings.Repeat("2", 128)}

	readWriteRole = v1alpha1.ValkeyRoleSpec{
		Categories: []v1alpha1.CategoryRule{{Name: "read", Access: v1alpha1.RuleAllow}, {Name: "write", Access: v1alpha1.RuleAllow}},
		Commands: []v1alpha1.CommandRule{
			{Name: "cluster", Subcommand: "info", Access: v1alpha1.RuleAllow},
			{Name: "flushall", Access: v1alpha1.RuleDeny},
		},
	}
	// The documented example: root readwrite on batch:*, a selector
	// granting read on metrics:*.
	teamBatch = resolve.User{
		Binding: v1alpha1.AclBinding{
			Username:       "team-batch",
			PasswordHashes: []v1alpha1.PasswordHash{hashA, hashB},
			Permissions: []v1alpha1.Permission{
				{RoleRef: "rw", Keys: []v1alpha1.KeyPattern{{Pattern: "batch:*", Access: v1alpha1.KeyAccessReadWrite}}},
				{RoleRef: "rw", Keys: []v1alpha1.KeyPattern{{Pattern: "metrics:*", Access: v1alpha1.KeyAccessRead}}},
			},
		},
		Roles: []v1alpha1.ValkeyRoleSpec{readWriteRole, readWriteRole},
	}
)

// systemLines are the documented system users (Valkey 9).
func systemLines() string {
	return "user _momento_operator on #" + passwordHash(testPasswords.Operator) + " resetchannels +cluster|nodes +cluster|info +cluster|meet +cluster|forget +cluster|addslotsrange +cluster|replicate +cluster|failover +cluster|setslot +cluster|getkeysinslot +info +ping +acl|load +acl|list +config|set +config|get ~* +migrate +restore-asking +select +restore +cluster|migrateslots +cluster|getslotmigrations +cluster|cancelslotmigrations\n" +
		"user _momento_repl on #" + passwordHash(testPasswords.Replication) + " resetchannels ~* +@write -@dangerous -function +restore +sort +select +cluster|syncslots +psync +replconf +ping +sync\n"
}

func TestACLFile(t *testing.T) {
	tests := []struct {
		name  string
		users []resolve.User
		want  string // user lines before the system users
	}{
		{
			name: "no binding leaves default open",
			want: "user default on nopass ~* &* +@all\n",
		},
		{
			name:  "documented example: root rules then a selector, default disabled",
			users: []resolve.User{teamBatch},
			want: "user team-batch on #" + hashA + " #" + hashB + " resetchannels ~batch:* +@read +@write +cluster|info -flushall" +
				" (%R~metrics:* +@read +@write +cluster|info -flushall)\n" +
				"user default off\n",
		},
		{
			name: "key access prefixes, channels, unset access is readwrite",
			users: []resolve.User{{
				Binding: v1alpha1.AclBinding{
					Username:       "app",
					PasswordHashes: []v1alpha1.PasswordHash{hashA},
					Permissions: []v1alpha1.Permission{{
						RoleRef: "r",
						Keys: []v1alpha1.KeyPattern{
							{Pattern: "r:*", Access: v1alpha1.KeyAccessRead},
							{Pattern: "w:*", Access: v1alpha1.KeyAccessWrite},
							{Pattern: "rw:*"},
						},
						Channels: []v1alpha1.ChannelPattern{"news.*", "alerts"},
					}},
				},
				Roles: []v1alpha1.ValkeyRoleSpec{{
					Commands:   []v1alpha1.CommandRule{{Name: "get", Access: v1alpha1.RuleAllow}},
					Categories: []v1alpha1.CategoryRule{{Name: "all", Access: v1alpha1.RuleDeny}},
				}},
			}},
			want: "user app on #" + hashA + " resetchannels %R~r:* %W~w:* ~rw:* &news.* &alerts -@all +get\n" +
				"user default off\n",
		},
		{
			name: "a permission with no keys grants no key; an empty role grants no command",
			users: []resolve.User{{
				Binding: v1alpha1.AclBinding{
					Username:       "nothing",
					PasswordHashes: []v1alpha1.PasswordHash{hashA},
					Permissions:    []v1alpha1.Permission{{RoleRef: "empty"}, {RoleRef: "empty", Keys: []v1alpha1.KeyPattern{{Pattern: "x"}}}},
				},
				Roles: []v1alpha1.ValkeyRoleSpec{{}, {}},
			}},
			want: "user nothing on #" + hashA + " resetchannels (~x)\n" +
				"user default off\n",
		},
		{
			name: "a binding named default replaces the default line",
			users: []resolve.User{
				{
					Binding: v1alpha1.AclBinding{
						Username:       "default",
						PasswordHashes: []v1alpha1.PasswordHash{hashA},
						Permissions:    []v1alpha1.Permission{{RoleRef: "rw", Keys: []v1alpha1.KeyPattern{{Pattern: "*"}}}},
					},
					Roles: []v1alpha1.ValkeyRoleSpec{readWriteRole},
				},
				teamBatch,
			},
			want: "user default on #" + hashA + " resetchannels ~* +@read +@write +cluster|info -flushall\n" +
				"user team-batch on #" + hashA + " #" + hashB + " resetchannels ~batch:* +@read +@write +cluster|info -flushall" +
				" (%R~metrics:* +@read +@write +cluster|info -flushall)\n",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ACLFile(tt.users, testPasswords, "9.0.1", false)
			if err != nil {
				t.Fatal(err)
			}
			if want := tt.want + systemLines(); got != want {
				t.Fatalf("got\n%s\nwant\n%s", got, want)
			}
		})
	}
}

// The exporter's user comes last, only when asked for, and never without a
// password.
func TestACLFileExporterUser(t *testing.T) {
	got, err := ACLFile(nil, testPasswords, "9.0.1", true)
	if err != nil {
		t.Fatal(err)
	}
	want := "user default on nopass ~* &* +@all\n" + systemLines() +
		"user _momento_exporter on #" + passwordHash(testPasswords.Exporter) + " resetchannels +info +cluster|info +latency|latest +slowlog|len\n"
	if got != want {
		t.Fatalf("got\n%s\nwant\n%s", got, want)
	}
	noExporter := testPasswords
	noExporter.Exporter = ""
	if _, err := ACLFile(nil, noExporter, "9.0.1", true); err == nil || !strings.Contains(err.Error(), "_momento_exporter") {
		t.Fatalf("err = %v, want one naming the exporter's user", err)
	}
	if _, err := ACLFile(nil, noExporter, "9.0.1", false); err != nil {
		t.Fatalf("without the exporter its password is not needed: %v", err)
	}
}

func TestACLFileRefusesMismatchedRoles(t *testing.T) {
	u := teamBatch
	u.Roles = u.Roles[:1]
	if _, err := ACLFile([]resolve.User{u}, testPasswords, "9.0.1", false); err == nil {
		t.Fatal("want an error for a user with fewer roles than permissions")
	}
}

// While a rotation runs, the operator's and the replication user's lines
// accept the current password and the other one of the rotation; the
// exporter's is not rotated.
func TestACLFileDuringRotation(t *testing.T) {
	next, prev := strings.Repeat("c", 128), strings.Repeat("d", 128)
	for _, tc := range []struct {
		name string
		p    Passwords
		want [2]string
	}{
		{"no rotation", testPasswords, [2]string{testPasswords.Operator, ""}},
		{"before the switch", Passwords{Operator: testPasswords.Operator, Replication: testPasswords.Replication, Exporter: testPasswords.Exporter,
			NextOperator: next, NextReplication: next}, [2]string{testPasswords.Operator, next}},
		{"after the switch", Passwords{Operator: next, Replication: next, Exporter: testPasswords.Exporter,
			PreviousOperator: prev, PreviousReplication: prev}, [2]string{next, prev}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			file, err := ACLFile(nil, tc.p, "8.0.1", true)
			if err != nil {
				t.Fatal(err)
			}
			for _, user := range []string{OperatorUser, ReplicationUser} {
				line := lineOf(t, file, user)
				want := []string{"#" + passwordHash(tc.want[0])}
				if user == ReplicationUser {
					want = []string{"#" + passwordHash(tc.p.Replication)}
				}
				if tc.want[1] != "" {
					want = append(want, "#"+passwordHash(tc.want[1]))
				}
				var got []string
				for _, f := range strings.Fields(line) {
					if strings.HasPrefix(f, "#") {
						got = append(got, f)
					}
				}
				if !slices.Equal(got, want) {
					t.Errorf("%s hashes %v, want %v", user, got, want)
				}
			}
			if got := strings.Count(lineOf(t, file, ExporterUser), "#"); got != 1 {
				t.Errorf("exporter line has %d hashes, want 1", got)
			}
		})
	}
}

func lineOf(t *testing.T, file, user string) string {
	t.Helper()
	for _, l := range strings.Split(file, "\n") {
		if strings.HasPrefix(l, "user "+user+" ") {
			return l
		}
	}
	t.Fatalf("no line for %s in\n%s", user, file)
	return ""
}

func TestSystemUserHashes(t *testing.T) {
	// sha256("password") from any reference implementation.
	if got := passwordHash("password"); got != "5e884898da28047151d0e56f8dc6292773603d0d6aabbdd62a11ef721d1542d8" {
		t.Fatalf("passwordHash = %s", got)
	}
}

func TestSystemGrantsFollowTheOldestNode(t *testing.T) {
	const (
		opBase     = "+cluster|nodes +cluster|info +cluster|meet +cluster|forget +cluster|addslotsrange +cluster|replicate +cluster|failover +cluster|setslot +cluster|getkeysinslot +info +ping +acl|load +acl|list +config|set +config|get ~* +migrate +restore-asking +select +restore"
		opAtomic   = opBase + " +cluster|migrateslots +cluster|getslotmigrations +cluster|cancelslotmigrations"
		replAtomic = "~* +@write -@dangerous -function +restore +sort +select +cluster|syncslots +psync +replconf +ping +sync"
	)
	tests := []struct {
		version  string
		operator string // the _momento_operator grants
		repl     string // the _momento_repl grants
		err      bool
	}{
		{version: "8.0.1", operator: opBase + " +acl|setuser +acl|deluser", repl: "+psync +replconf +ping +sync"},
		{version: "8.0.2", operator: opBase + " +acl|setuser +acl|deluser", repl: "+psync +replconf +ping +sync"},
		{version: "8.0.3", operator: opBase, repl: "+psync +replconf +ping +sync"},
		{version: "8.1.4", operator: opBase, repl: "+psync +replconf +ping +sync"},
		{version: "9.0.0", operator: opAtomic, repl: replAtomic},
		{version: "10.2.3", operator: opAtomic, repl: replAtomic},
		{version: "", err: true},
		{version: "v9.0.0", err: true},
		{version: "9", err: true},
	}
	for _, tt := range tests {
		t.Run(tt.version, func(t *testing.T) {
			got, err := ACLFile(nil, testPasswords, tt.version, false)
			if tt.err {
				if err == nil {
					t.Fatal("want an error")
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			want := "user _momento_operator on #" + passwordHash(testPasswords.Operator) + " resetchannels " + tt.operator + "\n" +
				"user _momento_repl on #" + passwordHash(testPasswords.Replication) + " resetchannels " + tt.repl + "\n"
			if !strings.HasSuffix(got, want) {
				t.Fatalf("got\n%s\nwant suffix\n%s", got, want)
			}
		})
	}
}
