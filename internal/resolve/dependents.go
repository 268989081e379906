package resolve

import (
	"fmt"
	"slices"
	"strings"

	"github.com/gomomento/valkey-operator/api/v1alpha1"
)

// Dependents are the objects that use one menu object, each list sorted:
// config names, and clusters as namespace/name.
type Dependents struct {
	Configs  []string
	Clusters []string
}

// None reports whether nothing uses the object.
func (u Dependents) None() bool { return len(u.Configs) == 0 && len(u.Clusters) == 0 }

// Message is the DeletionBlocked condition's message (and the Warning
// Event's note) of kind name while u use it.
func (u Dependents) Message(kind, name string) string {
	var parts []string
	if len(u.Configs) > 0 {
		parts = append(parts, "ValkeyConfigs "+strings.Join(u.Configs, ", "))
	}
	if len(u.Clusters) > 0 {
		parts = append(parts, "ValkeyClusters "+strings.Join(u.Clusters, ", "))
	}
	return fmt.Sprintf("%s %s is in use by %s; its deletion completes once nothing uses it", kind, name, strings.Join(parts, " and "))
}

// MenuUse is what the users of a menu object are found among: every config
// and every cluster, as listed.
type MenuUse struct {
	Configs  []v1alpha1.ValkeyConfig
	Clusters []v1alpha1.ValkeyCluster
}

// ImageUsers are the configs whose chain runs image (its own imageRef, or
// the first one along its baseRef chain) and the clusters whose configRef
// chain does. A config being deleted is no user: its own users still hold
// what it names, and two configs deleted together never wait on each other.
func (m MenuUse) ImageUsers(image string) Dependents {
	byName := m.configsByName()
	var u Dependents
	for i := range m.Configs {
		c := &m.Configs[i]
		if c.DeletionTimestamp.IsZero() && chainImage(byName, c.Name) == image {
			u.Configs = append(u.Configs, c.Name)
		}
	}
	for i := range m.Clusters {
		vc := &m.Clusters[i]
		if chainImage(byName, vc.Spec.ConfigRef) == image {
			u.Clusters = append(u.Clusters, vc.Namespace+"/"+vc.Name)
		}
	}
	return u.sorted()
}

// ConfigUsers are the configs whose baseRef names config and the clusters
// whose configRef chain passes through it.
func (m MenuUse) ConfigUsers(config string) Dependents {
	byName := m.configsByName()
	var u Dependents
	for i := range m.Configs {
		c := &m.Configs[i]
		if c.DeletionTimestamp.IsZero() && c.Spec.BaseRef == config {
			u.Configs = append(u.Configs, c.Name)
		}
	}
	for i := range m.Clusters {
		vc := &m.Clusters[i]
		if slices.ContainsFunc(chain(byName, vc.Spec.ConfigRef), func(c *v1alpha1.ValkeyConfig) bool { return c.Name == config }) {
			u.Clusters = append(u.Clusters, vc.Namespace+"/"+vc.Name)
		}
	}
	return u.sorted()
}

// RoleUsers are the configs with a binding naming role, and the clusters
// whose own bindings, or the bindings their config chain gives them, do.
func (m MenuUse) RoleUsers(role string) Dependents {
	byName := m.configsByName()
	var u Dependents
	for i := range m.Configs {
		c := &m.Configs[i]
		if c.DeletionTimestamp.IsZero() && bindsRole(c.Spec.ACL, role) {
			u.Configs = append(u.Configs, c.Name)
		}
	}
	for i := range m.Clusters {
		vc := &m.Clusters[i]
		if bindsRole(vc.Spec.ACL, role) || bindsRole(chainACL(byName, vc.Spec.ConfigRef), role) {
			u.Clusters = append(u.Clusters, vc.Namespace+"/"+vc.Name)
		}
	}
	return u.sorted()
}

func (m MenuUse) configsByName() map[string]*v1alpha1.ValkeyConfig {
	byName := make(map[string]*v1alpha1.ValkeyConfig, len(m.Configs))
	for i := range m.Configs {
		byName[m.Configs[i].Name] = &m.Configs[i]
	}
	return byName
}

// chain is the configs from name towards the root, as far as they exist,
// at most maxChainDepth of them (a cycle stops there too).
func chain(byName map[string]*v1alpha1.ValkeyConfig, name string) []*v1alpha1.ValkeyConfig {
	var out []*v1alpha1.ValkeyConfig
	for cur := name; cur != "" && len(out) < maxChainDepth; {
		c, ok := byName[cur]
		if !ok {
			break
		}
		out = append(out, c)
		cur = c.Spec.BaseRef
	}
	return out
}

// chainImage is the first imageRef along the chain from name, "" if none.
func chainImage(byName map[string]*v1alpha1.ValkeyConfig, name string) string {
	for _, c := range chain(byName, name) {
		if c.Spec.ImageRef != "" {
			return c.Spec.ImageRef
		}
	}
	return ""
}

// chainACL is the bindings of the first config along the chain that sets
// acl, as Config resolves them.
func chainACL(byName map[string]*v1alpha1.ValkeyConfig, name string) []v1alpha1.AclBinding {
	for _, c := range chain(byName, name) {
		if c.Spec.ACL != nil {
			return c.Spec.ACL
		}
	}
	return nil
}

func bindsRole(bindings []v1alpha1.AclBinding, role string) bool {
	for _, b := range bindings {
		for _, p := range b.Permissions {
			if p.RoleRef == role {
				return true
			}
		}
	}
	return false
}

func (u Dependents) sorted() Dependents {
	slices.Sort(u.Configs)
	slices.Sort(u.Clusters)
	return u
}
