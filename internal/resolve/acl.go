package resolve

import (
	"context"
	"fmt"

	"github.com/gomomento/valkey-operator/api/v1alpha1"
)

// Roles fetches ValkeyRoles; not-found is reported as for Menu.
type Roles interface {
	Role(ctx context.Context, name string) (*v1alpha1.ValkeyRole, error)
}

// MergeACL appends the cluster's own bindings to the config's. A username
// may appear only once in the result: a cluster cannot redefine a user the
// platform team bound.
func MergeACL(config, cluster []v1alpha1.AclBinding) ([]v1alpha1.AclBinding, error) {
	merged := make([]v1alpha1.AclBinding, 0, len(config)+len(cluster))
	seen := map[string]bool{}
	for _, list := range [][]v1alpha1.AclBinding{config, cluster} {
		for _, b := range list {
			if seen[b.Username] {
				return nil, duplicateUsername(b.Username)
			}
			seen[b.Username] = true
			merged = append(merged, b)
		}
	}
	return merged, nil
}

// User is a binding with the role of each of its permissions:
// Roles[i] belongs to Binding.Permissions[i].
type User struct {
	Binding v1alpha1.AclBinding
	Roles   []v1alpha1.ValkeyRoleSpec
}

// Users resolves every roleRef. One missing role fails the whole list,
// because a partial ACL file would silently drop a user's rules.
func Users(ctx context.Context, roles Roles, bindings []v1alpha1.AclBinding) ([]User, error) {
	cache := map[string]*v1alpha1.ValkeyRole{}
	users := make([]User, 0, len(bindings))
	for _, b := range bindings {
		u := User{Binding: b, Roles: make([]v1alpha1.ValkeyRoleSpec, 0, len(b.Permissions))}
		for _, p := range b.Permissions {
			role, ok := cache[p.RoleRef]
			if !ok {
				var err error
				role, err = roles.Role(ctx, p.RoleRef)
				switch {
				case isNotFound(err) || (err == nil && role == nil):
					return nil, roleNotFound(p.RoleRef, b.Username)
				case err != nil:
					return nil, fmt.Errorf("get ValkeyRole %q: %w", p.RoleRef, err)
				}
				cache[p.RoleRef] = role
			}
			u.Roles = append(u.Roles, role.Spec)
		}
		if err := u.Check(); err != nil {
			return nil, unrenderableACL(err)
		}
		users = append(users, u)
	}
	return users, nil
}

// Check refuses text the ACL file cannot carry, with the same rules as
// admission, naming the user, the role and the field. Admission keeps such
// text out of new objects; this keeps it out of the file when an object
// predates a rule.
func (u User) Check() error {
	b := u.Binding
	if err := v1alpha1.CheckUsername(b.Username); err != nil {
		return fmt.Errorf("user %q: username %w", b.Username, err)
	}
	for i, h := range b.PasswordHashes {
		if err := v1alpha1.CheckPasswordHash(h); err != nil {
			return fmt.Errorf("user %q: passwordHashes[%d] %w", b.Username, i, err)
		}
	}
	if len(u.Roles) != len(b.Permissions) {
		return fmt.Errorf("user %q: %d roles for %d permissions", b.Username, len(u.Roles), len(b.Permissions))
	}
	for i, p := range b.Permissions {
		for j, k := range p.Keys {
			if err := v1alpha1.CheckGlob(k.Pattern); err != nil {
				return fmt.Errorf("user %q: permissions[%d].keys[%d].pattern %q %w", b.Username, i, j, k.Pattern, err)
			}
		}
		for j, c := range p.Channels {
			if err := v1alpha1.CheckGlob(string(c)); err != nil {
				return fmt.Errorf("user %q: permissions[%d].channels[%d] %q %w", b.Username, i, j, c, err)
			}
		}
		if err := checkRole(u.Roles[i]); err != nil {
			return fmt.Errorf("ValkeyRole %q (permissions[%d] of user %q): %w", p.RoleRef, i, b.Username, err)
		}
	}
	return nil
}

func checkRole(r v1alpha1.ValkeyRoleSpec) error {
	for i, c := range r.Categories {
		if err := v1alpha1.CheckACLName(c.Name); err != nil {
			return fmt.Errorf("categories[%d].name %q %w", i, c.Name, err)
		}
	}
	for i, c := range r.Commands {
		if err := v1alpha1.CheckACLName(c.Name); err != nil {
			return fmt.Errorf("commands[%d].name %q %w", i, c.Name, err)
		}
		if c.Subcommand == "" {
			continue
		}
		if err := v1alpha1.CheckACLName(c.Subcommand); err != nil {
			return fmt.Errorf("commands[%d].subcommand %q %w", i, c.Subcommand, err)
		}
	}
	return nil
}

// roleNames lists the distinct roles the bindings reference, in first-use
// order, so a watch on ValkeyRoles can find the clusters that use one.
func roleNames(bindings []v1alpha1.AclBinding) []string {
	var names []string
	seen := map[string]bool{}
	for _, b := range bindings {
		for _, p := range b.Permissions {
			if !seen[p.RoleRef] {
				seen[p.RoleRef] = true
				names = append(names, p.RoleRef)
			}
		}
	}
	return names
}
