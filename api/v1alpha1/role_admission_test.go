package v1alpha1_test

import (
	"fmt"
	"strings"
	"testing"
)

func roleManifest(spec string) string {
	return fmt.Sprintf(`apiVersion: valkey.gomomento.com/v1alpha1
kind: ValkeyRole
metadata:
  name: reader
spec:
%s`, spec)
}

func TestValkeyRoleAdmission(t *testing.T) {
	runAdmission(t, []admissionCase{
		{name: "empty spec", manifest: roleManifest("  {}\n")},
		{name: "full", manifest: roleManifest(`  categories:
  - {name: read, access: allow}
  - {name: dangerous, access: deny}
  commands:
  - {name: cluster, subcommand: info, access: allow}
  - {name: flushall, access: deny}
`)},
		{name: "category with @ prefix", manifest: roleManifest("  categories: [{name: \"@read\", access: allow}]\n"),
			want: []string{"spec.categories[0].name", "category name must match"}},
		{name: "category name too long", manifest: roleManifest("  categories: [{name: " + strings.Repeat("a", 65) + ", access: allow}]\n"),
			want: []string{"spec.categories[0].name", "Too long"}},
		{name: "category access not an enum value", manifest: roleManifest("  categories: [{name: read, access: maybe}]\n"),
			want: []string{"spec.categories[0].access", "Unsupported value"}},
		{name: "category access missing", manifest: roleManifest("  categories: [{name: read}]\n"),
			want: []string{"spec.categories[0].access", "Required value"}},
		{name: "too many categories", manifest: roleManifest("  categories: " + repeat(65, func(int) string { return "{name: read, access: allow}" }) + "\n"),
			want: []string{"spec.categories", "Too many"}},
		{name: "command name invalid", manifest: roleManifest("  commands: [{name: \"cluster|info\", access: allow}]\n"),
			want: []string{"spec.commands[0].name", "command name must match"}},
		{name: "command name missing", manifest: roleManifest("  commands: [{access: allow}]\n"),
			want: []string{"spec.commands[0].name", "Required value"}},
		{name: "subcommand invalid", manifest: roleManifest("  commands: [{name: cluster, subcommand: \"info x\", access: allow}]\n"),
			want: []string{"spec.commands[0].subcommand", "subcommand must match"}},
		{name: "subcommand too long", manifest: roleManifest("  commands: [{name: cluster, subcommand: " + strings.Repeat("a", 65) + ", access: allow}]\n"),
			want: []string{"spec.commands[0].subcommand", "Too long"}},
		{name: "command access invalid", manifest: roleManifest("  commands: [{name: get, access: yes}]\n"),
			want: []string{"spec.commands[0].access", "Unsupported value"}},
		{name: "too many commands", manifest: roleManifest("  commands: " + repeat(257, func(int) string { return "{name: get, access: allow}" }) + "\n"),
			want: []string{"spec.commands", "Too many"}},
	})
}
