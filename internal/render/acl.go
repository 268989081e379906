package render

import (
	"fmt"
	"strings"

	"github.com/gomomento/valkey-operator/api/v1alpha1"
	"github.com/gomomento/valkey-operator/internal/resolve"
)

// ACLFile renders the ACL file of a cluster from its merged, role-resolved
// bindings (in order), the system users' passwords and the lowest Valkey
// version (MAJOR.MINOR.PATCH) any of its nodes runs, which decides the
// replication user's grants. exporter adds the metrics exporter's user.
//
// Per binding: "user <name> on", each password hash as #<hash>,
// resetchannels, then the first permission's keys, channels, role categories
// and role commands as root rules, and every further permission as a
// selector "( ... )" of the same shape. Categories precede commands, each in
// list order, because Valkey applies rules left to right and a command deny
// must follow the category allow it narrows.
func ACLFile(users []resolve.User, p Passwords, valkeyVersion string, exporter bool) (string, error) {
	opGrants, replGrants, err := systemGrantsFor(valkeyVersion)
	if err != nil {
		return "", err
	}
	var b strings.Builder
	defaultBound := false
	seen := map[string]bool{}
	for _, u := range users {
		// Valkey refuses a whole file over one bad line, and crashes on
		// an unterminated selector: refuse here instead.
		if err := u.Check(); err != nil {
			return "", err
		}
		if seen[u.Binding.Username] {
			return "", fmt.Errorf("user %q is bound twice", u.Binding.Username)
		}
		seen[u.Binding.Username] = true
		b.WriteString(userLine(u))
		b.WriteByte('\n')
		if u.Binding.Username == DefaultUser {
			defaultBound = true
		}
	}
	switch {
	case defaultBound:
	case len(users) == 0:
		b.WriteString(defaultUserOpen + "\n")
	default:
		b.WriteString(defaultUserDisabled + "\n")
	}
	b.WriteString(systemUserLine(OperatorUser, p.operatorAccepted(), opGrants))
	b.WriteString(systemUserLine(ReplicationUser, p.replicationAccepted(), replGrants))
	if exporter {
		if p.Exporter == "" {
			return "", fmt.Errorf("no password for %s", ExporterUser)
		}
		b.WriteString(systemUserLine(ExporterUser, []string{p.Exporter}, exporterGrants))
	}
	return b.String(), nil
}

func userLine(u resolve.User) string {
	b := u.Binding
	tokens := []string{"user", b.Username, "on"}
	for _, h := range b.PasswordHashes {
		tokens = append(tokens, "#"+string(h))
	}
	tokens = append(tokens, "resetchannels")
	for i, perm := range b.Permissions {
		rules := permissionRules(perm, u.Roles[i])
		if i == 0 {
			tokens = append(tokens, rules...)
			continue
		}
		tokens = append(tokens, "("+strings.Join(rules, " ")+")")
	}
	return strings.Join(tokens, " ")
}

// permissionRules are one permission's tokens: keys, channels, categories,
// commands.
func permissionRules(perm v1alpha1.Permission, role v1alpha1.ValkeyRoleSpec) []string {
	var rules []string
	for _, k := range perm.Keys {
		rules = append(rules, keyPrefix(k.Access)+k.Pattern)
	}
	for _, c := range perm.Channels {
		rules = append(rules, "&"+string(c))
	}
	for _, c := range role.Categories {
		rules = append(rules, accessSign(c.Access)+"@"+c.Name)
	}
	for _, c := range role.Commands {
		cmd := c.Name
		if c.Subcommand != "" {
			cmd += "|" + c.Subcommand
		}
		rules = append(rules, accessSign(c.Access)+cmd)
	}
	return rules
}

// keyPrefix maps access to Valkey's key-permission syntax; an unset access
// is the API default, readwrite.
func keyPrefix(a v1alpha1.KeyAccess) string {
	switch a {
	case v1alpha1.KeyAccessRead:
		return "%R~"
	case v1alpha1.KeyAccessWrite:
		return "%W~"
	default:
		return "~"
	}
}

func accessSign(a v1alpha1.RuleAccess) string {
	if a == v1alpha1.RuleDeny {
		return "-"
	}
	return "+"
}

func systemUserLine(name string, passwords, grants []string) string {
	tokens := []string{"user", name, "on"}
	for _, p := range passwords {
		tokens = append(tokens, "#"+passwordHash(p))
	}
	tokens = append(tokens, "resetchannels")
	return strings.Join(append(tokens, grants...), " ") + "\n"
}
