package render

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/gomomento/valkey-operator/api/v1alpha1"
	"github.com/gomomento/valkey-operator/internal/resolve"
)

// A user's text lands in the ACL file verbatim. These cases are what a
// tenant can write into a binding or a role; each one either renders into
// a file every Valkey loads and reads back exactly as written, or is
// refused by the renderer with the user, the role and the field named.

const textPassword = "text-secret"

// textUser has a root permission on "root:*" and, in a selector, the
// permission under test, so that selector syntax is exercised.
func textUser(name string, perm v1alpha1.Permission, role v1alpha1.ValkeyRoleSpec) resolve.User {
	sum := sha256.Sum256([]byte(textPassword))
	getRole := v1alpha1.ValkeyRoleSpec{Commands: []v1alpha1.CommandRule{{Name: "get", Access: v1alpha1.RuleAllow}}}
	perm.RoleRef = "tricky"
	return resolve.User{
		Binding: v1alpha1.AclBinding{
			Username:       name,
			PasswordHashes: []v1alpha1.PasswordHash{v1alpha1.PasswordHash(hex.EncodeToString(sum[:]))},
			Permissions: []v1alpha1.Permission{
				{RoleRef: "getter", Keys: []v1alpha1.KeyPattern{{Pattern: "root:*"}}},
				perm,
			},
		},
		Roles: []v1alpha1.ValkeyRoleSpec{getRole, role},
	}
}

// textAdmin may read every user back.
var textAdmin = rootUser("text-admin", v1alpha1.Permission{Keys: keys("*")},
	v1alpha1.ValkeyRoleSpec{Categories: []v1alpha1.CategoryRule{{Name: "all", Access: v1alpha1.RuleAllow}}})

// rootUser puts the permission under test first, as the root rules.
func rootUser(name string, perm v1alpha1.Permission, role v1alpha1.ValkeyRoleSpec) resolve.User {
	u := textUser(name, perm, role)
	u.Binding.Permissions = u.Binding.Permissions[1:]
	u.Roles = u.Roles[1:]
	return u
}

func keys(patterns ...string) []v1alpha1.KeyPattern {
	var out []v1alpha1.KeyPattern
	for _, p := range patterns {
		out = append(out, v1alpha1.KeyPattern{Pattern: p})
	}
	return out
}

var (
	getOnly  = v1alpha1.ValkeyRoleSpec{Commands: []v1alpha1.CommandRule{{Name: "get", Access: v1alpha1.RuleAllow}}}
	readRole = v1alpha1.ValkeyRoleSpec{
		Categories: []v1alpha1.CategoryRule{{Name: "read", Access: v1alpha1.RuleAllow}},
		Commands:   []v1alpha1.CommandRule{{Name: "get", Access: v1alpha1.RuleAllow}},
	}
)

// Text that must be refused: every case names the field the error has to
// name. Before these checks each one rendered without an error, and the
// file either did not load or did not read back as written.
func TestACLFileRefusesUnrenderableText(t *testing.T) {
	tests := []struct {
		name string
		user resolve.User
		want []string // substrings of the error
	}{
		{"key pattern ending in ) inside a selector", textUser("u1", v1alpha1.Permission{Keys: keys("f(x)", "other:*")}, getOnly),
			[]string{`user "u1"`, "permissions[1].keys[0].pattern", `"f(x)"`, "')'"}},
		{"key pattern ending in ) last in a selector", textUser("u2", v1alpha1.Permission{Keys: keys("a)")}, getOnly),
			[]string{`user "u2"`, "permissions[1].keys[0].pattern"}},
		{"lone ) as a key pattern", textUser("u3", v1alpha1.Permission{Keys: keys(")")}, v1alpha1.ValkeyRoleSpec{}),
			[]string{"permissions[1].keys[0].pattern"}},
		{"key pattern ending in ) in the root rules", rootUser("u4", v1alpha1.Permission{Keys: keys("a)")}, getOnly),
			[]string{"permissions[0].keys[0].pattern"}},
		{"channel ending in ) inside a selector", textUser("u5", v1alpha1.Permission{Channels: []v1alpha1.ChannelPattern{"news(eu)"}}, getOnly),
			[]string{"permissions[1].channels[0]", `"news(eu)"`}},
		{"key pattern with a space", textUser("u6", v1alpha1.Permission{Keys: keys("a b")}, getOnly),
			[]string{"permissions[1].keys[0].pattern", "whitespace"}},
		{"key pattern with a newline", rootUser("u7", v1alpha1.Permission{Keys: keys("a\nuser evil on nopass ~* +@all")}, getOnly),
			[]string{"permissions[0].keys[0].pattern", "control"}},
		{"key pattern with a tab", textUser("u8", v1alpha1.Permission{Keys: keys("a\tb")}, getOnly),
			[]string{"permissions[1].keys[0].pattern"}},
		{"key pattern with a NUL", textUser("u9", v1alpha1.Permission{Keys: keys("a\x00b")}, getOnly),
			[]string{"permissions[1].keys[0].pattern"}},
		// Valkey splits on ASCII whitespace only, the operator's reader of
		// ACL LIST on Unicode whitespace as well: a file that loads but
		// never compares equal.
		{"key pattern with a no-break space", textUser("u10", v1alpha1.Permission{Keys: keys("a\u00a0b")}, getOnly),
			[]string{"permissions[1].keys[0].pattern", "whitespace"}},
		{"key pattern with an ideographic space", textUser("u11", v1alpha1.Permission{Keys: keys("a\u3000b")}, getOnly),
			[]string{"permissions[1].keys[0].pattern"}},
		{"channel with a line separator", textUser("u12", v1alpha1.Permission{Channels: []v1alpha1.ChannelPattern{"a\u2028b"}}, getOnly),
			[]string{"permissions[1].channels[0]"}},
		{"key pattern with a double quote", textUser("u13", v1alpha1.Permission{Keys: keys(`a"b`)}, getOnly),
			[]string{"permissions[1].keys[0].pattern", "quote"}},
		{"channel with a single quote", textUser("u14", v1alpha1.Permission{Channels: []v1alpha1.ChannelPattern{"it's"}}, getOnly),
			[]string{"permissions[1].channels[0]", "quote"}},
		{"empty key pattern", textUser("u15", v1alpha1.Permission{Keys: keys("")}, getOnly),
			[]string{"permissions[1].keys[0].pattern", "empty"}},
		{"empty channel", textUser("u16", v1alpha1.Permission{Channels: []v1alpha1.ChannelPattern{""}}, getOnly),
			[]string{"permissions[1].channels[0]", "empty"}},
		{"command name with a space", textUser("u17", v1alpha1.Permission{Keys: keys("k")},
			v1alpha1.ValkeyRoleSpec{Commands: []v1alpha1.CommandRule{{Name: "get set", Access: v1alpha1.RuleAllow}}}),
			[]string{`ValkeyRole "tricky"`, "commands[0].name", `"get set"`}},
		{"command name ending in )", textUser("u18", v1alpha1.Permission{Keys: keys("k")},
			v1alpha1.ValkeyRoleSpec{Commands: []v1alpha1.CommandRule{{Name: "get)", Access: v1alpha1.RuleAllow}, {Name: "set", Access: v1alpha1.RuleAllow}}}),
			[]string{`ValkeyRole "tricky"`, "commands[0].name"}},
		{"command name with a subcommand bar", textUser("u19", v1alpha1.Permission{Keys: keys("k")},
			v1alpha1.ValkeyRoleSpec{Commands: []v1alpha1.CommandRule{{Name: "cluster|info", Access: v1alpha1.RuleAllow}}}),
			[]string{"commands[0].name"}},
		{"command name starting with @", textUser("u20", v1alpha1.Permission{Keys: keys("k")},
			v1alpha1.ValkeyRoleSpec{Commands: []v1alpha1.CommandRule{{Name: "@all", Access: v1alpha1.RuleAllow}}}),
			[]string{"commands[0].name"}},
		{"empty command name", textUser("u21", v1alpha1.Permission{Keys: keys("k")},
			v1alpha1.ValkeyRoleSpec{Commands: []v1alpha1.CommandRule{{Name: "", Access: v1alpha1.RuleAllow}}}),
			[]string{"commands[0].name", "empty"}},
		{"subcommand with a space", textUser("u22", v1alpha1.Permission{Keys: keys("k")},
			v1alpha1.ValkeyRoleSpec{Commands: []v1alpha1.CommandRule{{Name: "cluster", Subcommand: "info x", Access: v1alpha1.RuleAllow}}}),
			[]string{"commands[0].subcommand"}},
		{"category with the @ prefix", textUser("u23", v1alpha1.Permission{Keys: keys("k")},
			v1alpha1.ValkeyRoleSpec{Categories: []v1alpha1.CategoryRule{{Name: "@read", Access: v1alpha1.RuleAllow}}}),
			[]string{`ValkeyRole "tricky"`, "categories[0].name"}},
		{"category with a newline", textUser("u24", v1alpha1.Permission{Keys: keys("k")},
			v1alpha1.ValkeyRoleSpec{Categories: []v1alpha1.CategoryRule{{Name: "read\nuser x on nopass +@all", Access: v1alpha1.RuleAllow}}}),
			[]string{"categories[0].name"}},
		{"username with a space", textUser("a b", v1alpha1.Permission{Keys: keys("k")}, getOnly),
			[]string{"username", `"a b"`}},
		{"username of a system user", textUser(OperatorUser, v1alpha1.Permission{Keys: keys("k")}, getOnly),
			[]string{"username", "_momento_"}},
		{"password hash with the # prefix", func() resolve.User {
			u := textUser("u27", v1alpha1.Permission{Keys: keys("k")}, getOnly)
			u.Binding.PasswordHashes = []v1alpha1.PasswordHash{v1alpha1.PasswordHash("#" + hashA[1:])}
			return u
		}(), []string{`user "u27"`, "passwordHashes[0]"}},
	}
	servers := valkeyServers(t)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ACLFile([]resolve.User{tt.user}, testPasswords, "9.0.1", false)
			if err == nil {
				// Say what the file would have done to a node.
				for _, s := range servers {
					t.Errorf("rendered without an error; %s: %s", s.name, loadVerdict(t, s, tt.user))
				}
				return
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not mention %q", err, w)
				}
			}
		})
	}
}

// Two users with one name would make Valkey refuse the whole file.
func TestACLFileRefusesDuplicateUsers(t *testing.T) {
	u := textUser("twice", v1alpha1.Permission{Keys: keys("k")}, getOnly)
	_, err := ACLFile([]resolve.User{u, u}, testPasswords, "9.0.1", false)
	if err == nil || !strings.Contains(err.Error(), `"twice"`) {
		t.Fatalf("err = %v, want one naming the duplicate user", err)
	}
}

// loadVerdict renders u, with an administrator to read it back, for a
// fresh server of s, loads it and says whether it loaded and read back as
// u's binding says.
func loadVerdict(t *testing.T, s valkeyServer, u resolve.User) string {
	t.Helper()
	file, err := ACLFile([]resolve.User{textAdmin, u}, testPasswords, s.version, false)
	if err != nil {
		return "refused: " + err.Error()
	}
	path := filepath.Join(t.TempDir(), KeyACL)
	good, err := ACLFile([]resolve.User{textAdmin}, testPasswords, s.version, false)
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, path, good)
	addr := s.start(t, "--aclfile", path)
	op := dial(t, addr)
	op.must(t, "AUTH", OperatorUser, testPasswords.Operator)
	writeFile(t, path, file)
	if _, err := op.do("ACL", "LOAD"); errors.Is(err, io.EOF) {
		return "ACL LOAD crashed the server"
	} else if err != nil {
		return "ACL LOAD refused it: " + err.Error()
	}
	admin := dial(t, addr)
	admin.must(t, "AUTH", textAdmin.Binding.Username, textPassword)
	if diff := readBack(t, admin, file, u); diff != "" {
		return "ACL LOAD took it, but " + diff
	}
	return "loaded and read back as written"
}

// readBack compares what the server holds for u with what its binding
// says, and the operator's own split of the rendered line (on Unicode
// whitespace, as it reads ACL LIST) with Valkey's (on ASCII whitespace).
// It returns "" when all agree.
func readBack(t *testing.T, op *conn, file string, u resolve.User) string {
	t.Helper()
	name := u.Binding.Username
	for _, line := range strings.Split(file, "\n") {
		if !strings.HasPrefix(line, "user "+name+" ") {
			continue
		}
		valkeyFields := strings.FieldsFunc(line, func(r rune) bool { return strings.ContainsRune(" \t\n\v\f\r", r) })
		if got := strings.Fields(line); len(got) != len(valkeyFields) {
			return "the operator splits its line into " + itoa(len(got)) + " tokens where Valkey reads " + itoa(len(valkeyFields))
		}
	}
	if diff := listedSelectors(t, op, u); diff != "" {
		return diff
	}
	reply, err := op.do("ACL", "GETUSER", name)
	if err != nil {
		return "ACL GETUSER: " + err.Error()
	}
	root, ok := reply.([]any)
	if !ok {
		return "no such user after the load"
	}
	fields := pairs(root)
	var sels []map[string]any
	if list, ok := fields["selectors"].([]any); ok {
		for _, s := range list {
			if s, ok := s.([]any); ok {
				sels = append(sels, pairs(s))
			}
		}
	}
	for i, perm := range u.Binding.Permissions {
		got := fields
		where := "the root rules"
		if i > 0 {
			if i-1 >= len(sels) {
				return "selector " + itoa(i) + " is missing"
			}
			got, where = sels[i-1], "selector "+itoa(i)
		}
		var wantKeys, wantChannels []string
		for _, k := range perm.Keys {
			wantKeys = append(wantKeys, keyPrefix(k.Access)+k.Pattern)
		}
		for _, c := range perm.Channels {
			wantChannels = append(wantChannels, "&"+string(c))
		}
		if k, c := strings.Join(wantKeys, " "), strings.Join(wantChannels, " "); got["keys"] != k || got["channels"] != c {
			return where + " hold keys " + quote(got["keys"]) + " channels " + quote(got["channels"]) + ", want " + quote(k) + ", " + quote(c)
		}
	}
	if len(sels) != len(u.Binding.Permissions)-1 {
		return itoa(len(sels)) + " selectors, want " + itoa(len(u.Binding.Permissions)-1)
	}
	return ""
}

// listedSelectors reads u's ACL LIST line as the reloader does (a word
// starting with '(' opens a selector, the next one ending in ')' closes it)
// and compares each selector's key and channel words with the binding.
func listedSelectors(t *testing.T, op *conn, u resolve.User) string {
	t.Helper()
	reply, err := op.do("ACL", "LIST")
	if err != nil {
		return "ACL LIST: " + err.Error()
	}
	lines, _ := reply.([]any)
	for _, l := range lines {
		line, _ := l.(string)
		if !strings.HasPrefix(line, "user "+u.Binding.Username+" ") {
			continue
		}
		var groups [][]string
		fields := strings.Fields(line)
		for i := 0; i < len(fields); i++ {
			if !strings.HasPrefix(fields[i], "(") {
				continue
			}
			var g []string
			for ; i < len(fields); i++ {
				g = append(g, fields[i])
				if strings.HasSuffix(fields[i], ")") {
					break
				}
			}
			body := strings.TrimSuffix(strings.TrimPrefix(strings.Join(g, " "), "("), ")")
			groups = append(groups, strings.Fields(body))
		}
		if len(groups) != len(u.Binding.Permissions)-1 {
			return "ACL LIST reads as " + itoa(len(groups)) + " selectors, want " + itoa(len(u.Binding.Permissions)-1) + ": " + line
		}
		for i, g := range groups {
			var got, want []string
			for _, w := range g {
				if strings.HasPrefix(w, "~") || strings.HasPrefix(w, "%") || strings.HasPrefix(w, "&") {
					got = append(got, w)
				}
			}
			p := u.Binding.Permissions[i+1]
			for _, k := range p.Keys {
				want = append(want, keyPrefix(k.Access)+k.Pattern)
			}
			for _, c := range p.Channels {
				want = append(want, "&"+string(c))
			}
			if !slices.Equal(got, want) {
				return "ACL LIST reads selector " + itoa(i+1) + " as " + quote(got) + ", want " + quote(want)
			}
		}
		return ""
	}
	return "no ACL LIST line for " + u.Binding.Username
}

// pairs reads a RESP2 map reply (a flat key, value list).
func pairs(list []any) map[string]any {
	m := map[string]any{}
	for i := 0; i+1 < len(list); i += 2 {
		if k, ok := list[i].(string); ok {
			m[k] = list[i+1]
		}
	}
	return m
}

func itoa(n int) string { return strconv.Itoa(n) }

func quote(v any) string { return strconv.Quote(fmt.Sprint(v)) }

// Text that looks dangerous but is not: every case renders, loads into
// every installed Valkey, reads back as written, and its user
// authenticates and reaches exactly the keys its pattern names.
func TestACLFileTrickyTextLoadsInValkey(t *testing.T) {
	tests := []struct {
		name  string
		perm  v1alpha1.Permission
		role  v1alpha1.ValkeyRoleSpec
		allow string // a key the tricky permission grants
		deny  string // a key no permission grants
	}{
		{"parentheses inside a key pattern", v1alpha1.Permission{Keys: keys("user(1):*", "x")}, getOnly, "user(1):name", "user(2):name"},
		{"a final ) as a glob class", v1alpha1.Permission{Keys: keys("f(x[)]")}, getOnly, "f(x)", "f(x"},
		{"an opening parenthesis first", v1alpha1.Permission{Keys: keys("(", "((*")}, getOnly, "((a", "a"},
		{"a lone ) inside", v1alpha1.Permission{Keys: keys("a)b", "x")}, readRole, "a)b", "a)"},
		{"ACL syntax as a pattern", v1alpha1.Permission{Keys: keys("~*", "%R~x", "&c", "+@all", "-get", "#h", "@admin")}, getOnly, "+@all", "other"},
		{"backslash and glob classes", v1alpha1.Permission{Keys: keys(`a\*b`, "[a-c]?{tag}")}, getOnly, "a*b", "axb"},
		{"non-ASCII letters", v1alpha1.Permission{Keys: keys("日本:*", "ключ", "🔑:*")}, getOnly, "日本:1", "中国:1"},
		{"read and write access", v1alpha1.Permission{Keys: []v1alpha1.KeyPattern{
			{Pattern: "r(o):*", Access: v1alpha1.KeyAccessRead}, {Pattern: "(w)o:*", Access: v1alpha1.KeyAccessWrite}}}, readRole, "r(o):1", "w"},
		{"channels with parentheses", v1alpha1.Permission{Keys: keys("k"), Channels: []v1alpha1.ChannelPattern{"news(eu).*", "(", "a)b"}}, getOnly, "k", "j"},
		{"no keys, no channels, no rules", v1alpha1.Permission{Keys: keys("k")}, v1alpha1.ValkeyRoleSpec{}, "", "k"},
		{"subcommands and categories", v1alpha1.Permission{Keys: keys("s(1)*")}, v1alpha1.ValkeyRoleSpec{
			Categories: []v1alpha1.CategoryRule{{Name: "read", Access: v1alpha1.RuleAllow}, {Name: "dangerous", Access: v1alpha1.RuleDeny}},
			Commands: []v1alpha1.CommandRule{{Name: "GET", Access: v1alpha1.RuleAllow}, {Name: "client", Subcommand: "list", Access: v1alpha1.RuleDeny},
				{Name: "config", Subcommand: "get", Access: v1alpha1.RuleAllow}},
		}, "s(1)x", "s(2)"},
	}
	for _, s := range valkeyServers(t) {
		for _, pos := range []struct {
			name string
			user func(string, v1alpha1.Permission, v1alpha1.ValkeyRoleSpec) resolve.User
		}{{"selector", textUser}, {"root", rootUser}} {
			t.Run(s.name+"/"+pos.name, func(t *testing.T) {
				users := []resolve.User{textAdmin}
				for i, tt := range tests {
					users = append(users, pos.user("tricky-"+itoa(i), tt.perm, tt.role))
				}
				file, err := ACLFile(users, testPasswords, s.version, false)
				if err != nil {
					t.Fatal(err)
				}
				path := filepath.Join(t.TempDir(), KeyACL)
				writeFile(t, path, file)
				addr := s.start(t, "--aclfile", path)
				op := dial(t, addr)
				op.must(t, "AUTH", OperatorUser, testPasswords.Operator)
				if got, err := op.do("ACL", "LOAD"); err != nil || got != "OK" {
					t.Fatalf("ACL LOAD = %v, %v", got, err)
				}
				admin := dial(t, addr)
				admin.must(t, "AUTH", textAdmin.Binding.Username, textPassword)
				for i, tt := range tests {
					u := users[i+1]
					name := u.Binding.Username
					if diff := readBack(t, admin, file, u); diff != "" {
						t.Errorf("%s: %s", tt.name, diff)
					}
					c := dial(t, addr)
					if _, err := c.do("AUTH", name, textPassword); err != nil {
						t.Errorf("%s: AUTH %s: %v", tt.name, name, err)
					}
					for key, want := range map[string]bool{tt.allow: len(tt.role.Commands) > 0, tt.deny: false} {
						if key == "" {
							continue
						}
						reply, err := admin.do("ACL", "DRYRUN", name, "get", key)
						if got := err == nil && reply == "OK"; got != want {
							t.Errorf("%s: ACL DRYRUN %s get %q = %v, %v; want allowed=%v", tt.name, name, key, reply, err, want)
						}
					}
				}
			})
		}
	}
}
