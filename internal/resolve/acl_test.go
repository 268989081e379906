package resolve

import (
	"cmp"
	"context"
	"errors"
	"reflect"
	"testing"

	"github.com/gomomento/valkey-operator/api/v1alpha1"
)

func usernames(bs []v1alpha1.AclBinding) []string {
	var names []string
	for _, b := range bs {
		names = append(names, b.Username)
	}
	return names
}

func TestMergeACL(t *testing.T) {
	tests := []struct {
		name    string
		config  []v1alpha1.AclBinding
		cluster []v1alpha1.AclBinding
		want    []string
		message string
	}{
		{name: "neither", want: nil},
		{name: "config only", config: []v1alpha1.AclBinding{binding("a"), binding("b")}, want: []string{"a", "b"}},
		{name: "cluster only", cluster: []v1alpha1.AclBinding{binding("c")}, want: []string{"c"}},
		{
			name:    "cluster appended after config",
			config:  []v1alpha1.AclBinding{binding("a")},
			cluster: []v1alpha1.AclBinding{binding("c"), binding("b")},
			want:    []string{"a", "c", "b"},
		},
		{
			name:    "cluster reuses a config username",
			config:  []v1alpha1.AclBinding{binding("a"), binding("shared")},
			cluster: []v1alpha1.AclBinding{binding("shared")},
			message: `duplicate username "shared" in merged ACL bindings`,
		},
		{
			name:    "a duplicate inside one list is caught too",
			cluster: []v1alpha1.AclBinding{binding("x"), binding("x")},
			message: `duplicate username "x" in merged ACL bindings`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := MergeACL(tt.config, tt.cluster)
			if tt.message != "" {
				var rerr *Error
				if !errors.As(err, &rerr) || rerr.Reason != ReasonDuplicateUsername || rerr.Error() != tt.message {
					t.Fatalf("err = %v, want %s %q", err, ReasonDuplicateUsername, tt.message)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(usernames(got), tt.want) {
				t.Fatalf("got %q, want %q", usernames(got), tt.want)
			}
		})
	}
}

func TestUsers(t *testing.T) {
	reader := v1alpha1.ValkeyRoleSpec{Categories: []v1alpha1.CategoryRule{{Name: "read", Access: v1alpha1.RuleAllow}}}
	writer := v1alpha1.ValkeyRoleSpec{Commands: []v1alpha1.CommandRule{{Name: "set", Access: v1alpha1.RuleAllow}}}
	// Stored before admission refused it: text the ACL file cannot carry.
	broken := v1alpha1.ValkeyRoleSpec{Commands: []v1alpha1.CommandRule{{Name: "get)", Access: v1alpha1.RuleAllow}}}
	roles := map[string]v1alpha1.ValkeyRoleSpec{"reader": reader, "writer": writer, "broken": broken}

	two := v1alpha1.AclBinding{
		Username: "batch",
		Permissions: []v1alpha1.Permission{
			{RoleRef: "writer", Keys: []v1alpha1.KeyPattern{{Pattern: "batch:*"}}},
			{RoleRef: "reader", Keys: []v1alpha1.KeyPattern{{Pattern: "metrics:*", Access: v1alpha1.KeyAccessRead}}},
		},
	}
	missing := v1alpha1.AclBinding{
		Username:    "ghost",
		Permissions: []v1alpha1.Permission{{RoleRef: "reader"}, {RoleRef: "nope"}},
	}

	tests := []struct {
		name     string
		bindings []v1alpha1.AclBinding
		apiErr   bool
		fail     map[string]bool
		want     []User
		message  string
		reason   string // of message; RoleNotFound when empty
		wrapped  bool
	}{
		{name: "none", want: []User{}},
		{
			name:     "one role per permission, in order",
			bindings: []v1alpha1.AclBinding{binding("app"), two},
			want: []User{
				{Binding: binding("app"), Roles: []v1alpha1.ValkeyRoleSpec{reader}},
				{Binding: two, Roles: []v1alpha1.ValkeyRoleSpec{writer, reader}},
			},
		},
		{
			name:     "a missing role fails the whole list",
			bindings: []v1alpha1.AclBinding{binding("app"), missing},
			message:  `ValkeyRole "nope" not found (referenced by user "ghost")`,
		},
		{
			name:     "a missing role reported as a Kubernetes NotFound",
			bindings: []v1alpha1.AclBinding{missing},
			apiErr:   true,
			message:  `ValkeyRole "nope" not found (referenced by user "ghost")`,
		},
		{
			name: "a key pattern that would end a selector fails the whole list",
			bindings: []v1alpha1.AclBinding{binding("app"), {Username: "paren", Permissions: []v1alpha1.Permission{
				{RoleRef: "reader", Keys: []v1alpha1.KeyPattern{{Pattern: "ok"}}},
				{RoleRef: "reader", Keys: []v1alpha1.KeyPattern{{Pattern: "ok"}, {Pattern: "f(x)"}}},
			}}},
			reason:  ReasonUnrenderableACL,
			message: `user "paren": permissions[1].keys[1].pattern "f(x)" must not end with ')', which would end an ACL selector early; write a final ')' as [)]`,
		},
		{
			name: "a role naming a command the file cannot carry",
			bindings: []v1alpha1.AclBinding{{Username: "app", Permissions: []v1alpha1.Permission{
				{RoleRef: "reader"}, {RoleRef: "broken"},
			}}},
			reason:  ReasonUnrenderableACL,
			message: `ValkeyRole "broken" (permissions[1] of user "app"): commands[0].name "get)" must match ^[a-zA-Z][a-zA-Z0-9_-]*$`,
		},
		{
			name: "a channel with a newline",
			bindings: []v1alpha1.AclBinding{{Username: "app", Permissions: []v1alpha1.Permission{
				{RoleRef: "reader", Channels: []v1alpha1.ChannelPattern{"a\nuser x on nopass +@all"}},
			}}},
			reason:  ReasonUnrenderableACL,
			message: `user "app": permissions[0].channels[0] "a\nuser x on nopass +@all" must not contain control characters, whitespace or quotes`,
		},
		{
			name:     "a failed lookup is passed through",
			bindings: []v1alpha1.AclBinding{binding("app")},
			fail:     map[string]bool{"reader": true},
			wrapped:  true,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Users(context.Background(), fakeMenu{roles: roles, apiErr: tt.apiErr, fail: tt.fail}, tt.bindings)
			var rerr *Error
			switch {
			case tt.wrapped:
				if !errors.Is(err, errBoom) || errors.As(err, &rerr) {
					t.Fatalf("err = %v, want the lookup error wrapped", err)
				}
			case tt.message != "":
				reason := cmp.Or(tt.reason, ReasonRoleNotFound)
				if !errors.As(err, &rerr) || rerr.Reason != reason || rerr.Error() != tt.message {
					t.Fatalf("err = %v, want %s %q", err, reason, tt.message)
				}
			default:
				if err != nil {
					t.Fatal(err)
				}
				if !reflect.DeepEqual(got, tt.want) {
					t.Fatalf("got  %+v\nwant %+v", got, tt.want)
				}
			}
		})
	}
}

func TestRoleNames(t *testing.T) {
	bs := []v1alpha1.AclBinding{
		{Permissions: []v1alpha1.Permission{{RoleRef: "b"}, {RoleRef: "a"}}},
		{Permissions: []v1alpha1.Permission{{RoleRef: "a"}, {RoleRef: "c"}}},
	}
	if got, want := roleNames(bs), []string{"b", "a", "c"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("got %q, want %q", got, want)
	}
}
