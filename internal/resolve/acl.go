package resolve

import (
	"fmt"

	"github.com/gomomento/valkey-operator/api/v1alpha1"
)

// Roles fetches ValkeyRoles; not-found is reported as for Menu.
type Roles interface {
	Role(name string) (*v1alpha1.ValkeyRole, error)
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
func Users(roles Roles, bindings []v1alpha1.AclBinding) ([]User, error) {
	cache := map[string]*v1alpha1.ValkeyRole{}
	users := make([]User, 0, len(bindings))
	for _, b := range bindings {
		u := User{Binding: b, Roles: make([]v1alpha1.ValkeyRoleSpec, 0, len(b.Permissions))}
		for _, p := range b.Permissions {
			role, ok := cache[p.RoleRef]
			if !ok {
				var err error
				role, err = roles.Role(p.RoleRef)
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
		users = append(users, u)
	}
	return users, nil
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
