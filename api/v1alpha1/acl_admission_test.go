package v1alpha1_test

import (
	"fmt"
	"strings"
	"testing"
)

// clusterWithACL is a valid cluster whose only binding is the given one.
func clusterWithACL(b string) string {
	return `apiVersion: valkey.gomomento.com/v1alpha1
kind: ValkeyCluster
metadata:
  name: acl-test
  namespace: acl
spec:
  configRef: standard
  shards: 1
  replicasPerShard: 0
  acl:
  - ` + b + "\n"
}

func bindingWith(username, hashes, permissions string) string {
	return fmt.Sprintf("{username: %q, passwordHashes: %s, permissions: %s}", username, hashes, permissions)
}

const (
	oneHash = "[" + hashA + "]"
	onePerm = `[{roleRef: reader, keys: [{pattern: "app:*"}]}]`
)

func perm(fields string) string { return "[{roleRef: reader, " + fields + "}]" }

func TestAclBindingAdmission(t *testing.T) {
	runAdmission(t, []admissionCase{
		{name: "valid with every access mode and channels", manifest: clusterWithACL(bindingWith("team-batch", "["+hashA+", "+strings.Repeat("b", 64)+"]",
			`[{roleRef: writer, keys: [{pattern: "batch:*"}, {pattern: "in:*", access: write}], channels: ["events.*"]}, {roleRef: reader, keys: [{pattern: "metrics:*", access: read}]}]`))},
		{name: "username invalid characters", manifest: clusterWithACL(bindingWith("bad user", oneHash, onePerm)),
			want: []string{"spec.acl[0].username", "username must match"}},
		{name: "username empty", manifest: clusterWithACL(bindingWith("", oneHash, onePerm)),
			want: []string{"spec.acl[0].username"}},
		{name: "username too long", manifest: clusterWithACL(bindingWith(strings.Repeat("u", 129), oneHash, onePerm)),
			want: []string{"spec.acl[0].username", "Too long"}},
		{name: "username reserved prefix", manifest: clusterWithACL(bindingWith("_momento_admin", oneHash, onePerm)),
			want: []string{"spec.acl[0].username", "username prefix _momento_ is reserved for system users"}},
		{name: "no password hashes", manifest: clusterWithACL(bindingWith("app", "[]", onePerm)),
			want: []string{"spec.acl[0].passwordHashes"}},
		{name: "too many password hashes", manifest: clusterWithACL(bindingWith("app", repeat(9, func(int) string { return hashA }), onePerm)),
			want: []string{"spec.acl[0].passwordHashes", "Too many"}},
		{name: "hash with uppercase hex", manifest: clusterWithACL(bindingWith("app", "["+strings.ToUpper(hashA)+"]", onePerm)),
			want: []string{"spec.acl[0].passwordHashes[0]", "password hash must be 64 lowercase hex characters"}},
		{name: "hash with # prefix", manifest: clusterWithACL(bindingWith("app", `["#`+hashA[:63]+`"]`, onePerm)),
			want: []string{"spec.acl[0].passwordHashes[0]", "password hash must be 64 lowercase hex characters"}},
		{name: "hash too short", manifest: clusterWithACL(bindingWith("app", "["+hashA[:63]+"]", onePerm)),
			want: []string{"spec.acl[0].passwordHashes[0]", "password hash must be 64 lowercase hex characters"}},
		{name: "no permissions", manifest: clusterWithACL(bindingWith("app", oneHash, "[]")),
			want: []string{"spec.acl[0].permissions"}},
		{name: "too many permissions", manifest: clusterWithACL(bindingWith("app", oneHash, repeat(17, func(int) string { return `{roleRef: r, keys: []}` }))),
			want: []string{"spec.acl[0].permissions", "Too many"}},
		{name: "roleRef missing", manifest: clusterWithACL(bindingWith("app", oneHash, `[{keys: []}]`)),
			want: []string{"spec.acl[0].permissions[0].roleRef", "Required value"}},
		{name: "roleRef too long", manifest: clusterWithACL(bindingWith("app", oneHash, "[{roleRef: "+strings.Repeat("r", 254)+", keys: []}]")),
			want: []string{"spec.acl[0].permissions[0].roleRef", "Too long"}},
		{name: "keys missing", manifest: clusterWithACL(bindingWith("app", oneHash, `[{roleRef: reader}]`)),
			want: []string{"spec.acl[0].permissions[0].keys", "Required value"}},
		{name: "empty keys accepted", manifest: clusterWithACL(bindingWith("app", oneHash, `[{roleRef: reader, keys: []}]`))},
		{name: "too many keys", manifest: clusterWithACL(bindingWith("app", oneHash, perm("keys: "+repeat(17, func(i int) string { return fmt.Sprintf("{pattern: k%d}", i) })))),
			want: []string{"spec.acl[0].permissions[0].keys", "Too many"}},
		{name: "key pattern with space", manifest: clusterWithACL(bindingWith("app", oneHash, perm(`keys: [{pattern: "a b"}]`))),
			want: []string{"spec.acl[0].permissions[0].keys[0].pattern", "key pattern must not contain control characters, whitespace or quotes"}},
		{name: "key pattern with quote", manifest: clusterWithACL(bindingWith("app", oneHash, perm(`keys: [{pattern: "a\"b"}]`))),
			want: []string{"spec.acl[0].permissions[0].keys[0].pattern", "key pattern must not contain"}},
		{name: "key pattern with control character", manifest: clusterWithACL(bindingWith("app", oneHash, perm(`keys: [{pattern: "a\tb"}]`))),
			want: []string{"spec.acl[0].permissions[0].keys[0].pattern", "key pattern must not contain"}},
		{name: "key pattern ending in ) would end a selector", manifest: clusterWithACL(bindingWith("app", oneHash, perm(`keys: [{pattern: "f(x)"}]`))),
			want: []string{"spec.acl[0].permissions[0].keys[0].pattern", "key pattern must not end with ')', which would end an ACL selector early"}},
		{name: "key pattern with a no-break space", manifest: clusterWithACL(bindingWith("app", oneHash, perm("keys: [{pattern: \"a\u00a0b\"}]"))),
			want: []string{"spec.acl[0].permissions[0].keys[0].pattern", "key pattern must not contain control characters, whitespace or quotes"}},
		{name: "key pattern with a newline", manifest: clusterWithACL(bindingWith("app", oneHash, perm(`keys: [{pattern: "a\nuser x on nopass"}]`))),
			want: []string{"spec.acl[0].permissions[0].keys[0].pattern", "key pattern must not contain"}},
		{name: "key pattern with parentheses inside and a final ) as a class", manifest: clusterWithACL(bindingWith("app", oneHash, perm(`keys: [{pattern: "user(1):*"}, {pattern: "f(x[)]"}, {pattern: "("}]`)))},
		{name: "channel ending in ) would end a selector", manifest: clusterWithACL(bindingWith("app", oneHash, perm(`keys: [], channels: ["news(eu)"]`))),
			want: []string{"spec.acl[0].permissions[0].channels[0]", "channel pattern must not end with ')'"}},
		{name: "channel with a line separator", manifest: clusterWithACL(bindingWith("app", oneHash, perm("keys: [], channels: [\"a\u2028b\"]"))),
			want: []string{"spec.acl[0].permissions[0].channels[0]", "channel pattern must not contain control characters, whitespace or quotes"}},
		{name: "key pattern too long", manifest: clusterWithACL(bindingWith("app", oneHash, perm("keys: [{pattern: "+strings.Repeat("k", 257)+"}]"))),
			want: []string{"spec.acl[0].permissions[0].keys[0].pattern", "Too long"}},
		{name: "key access not an enum value", manifest: clusterWithACL(bindingWith("app", oneHash, perm(`keys: [{pattern: "a", access: all}]`))),
			want: []string{"spec.acl[0].permissions[0].keys[0].access", "Unsupported value"}},
		{name: "too many channels", manifest: clusterWithACL(bindingWith("app", oneHash, perm("keys: [], channels: "+repeat(17, func(i int) string { return fmt.Sprintf("c%d", i) })))),
			want: []string{"spec.acl[0].permissions[0].channels", "Too many"}},
		{name: "channel with quote", manifest: clusterWithACL(bindingWith("app", oneHash, perm(`keys: [], channels: ["it's"]`))),
			want: []string{"spec.acl[0].permissions[0].channels[0]", "channel pattern must not contain control characters, whitespace or quotes"}},
		{name: "channel too long", manifest: clusterWithACL(bindingWith("app", oneHash, perm("keys: [], channels: ["+strings.Repeat("c", 129)+"]"))),
			want: []string{"spec.acl[0].permissions[0].channels[0]", "Too long"}},
	})
}

// Key access defaults to readwrite, as documented.
func TestKeyAccessDefaultsToReadWrite(t *testing.T) {
	m := clusterWithACL(bindingWith("app", oneHash, onePerm))
	if err := create(t, m); err != nil {
		t.Fatalf("create: %v", err)
	}
	stored := get(t, m)
	acl := stored.Object["spec"].(map[string]any)["acl"].([]any)
	key := acl[0].(map[string]any)["permissions"].([]any)[0].(map[string]any)["keys"].([]any)[0].(map[string]any)
	if key["access"] != "readwrite" {
		t.Fatalf("keys[0].access = %v, want readwrite", key["access"])
	}
}
