package resolve

import (
	"context"
	"fmt"
	"maps"

	"github.com/gomomento/valkey-operator/api/v1alpha1"
)

// maxChainDepth is the longest baseRef chain that resolves; a longer one,
// and every cycle, fails.
const maxChainDepth = 10

// Menu fetches the cluster-scoped menu objects. A missing object is reported
// as an error satisfying errors.Is(err, errNotFound), or as a Kubernetes
// NotFound error; any other error aborts resolution unchanged (wrapped).
type Menu interface {
	Config(ctx context.Context, name string) (*v1alpha1.ValkeyConfig, error)
	Image(ctx context.Context, name string) (*v1alpha1.ValkeyImage, error)
}

// Result is the effective node settings of one config chain.
type Result struct {
	// Image is "<repository>:<tag>" of ImageName, copied verbatim.
	Image     string
	ImageName string
	// Version is the ValkeyImage's declared version.
	Version string

	// CPU and Memory are quantities, empty when no config sets them.
	CPU    string
	Memory string

	// Valkey is the merged directive map, never nil. Forced settings are
	// not applied here.
	Valkey map[string]string

	// ACL is the list of the first config that sets acl; ACLSet says whether
	// any did. A set list may be empty: it clears inherited bindings.
	ACL    []v1alpha1.AclBinding
	ACLSet bool

	// Exporter is the first exporter.enabled set child to root; false when
	// none is.
	Exporter bool

	// Persistence is the first persistence set child to root, whole; nil
	// when none is.
	Persistence *v1alpha1.Persistence

	// Pod is spec.pod merged along the chain (see resolvePod); nil when
	// no config sets it.
	Pod *v1alpha1.PodSettings

	// Chain is the config names, child to root.
	Chain []string
}

// Config resolves the chain starting at the ValkeyConfig called name.
func Config(ctx context.Context, menu Menu, name string) (*Result, error) {
	configs, err := walk(ctx, menu, name)
	if err != nil {
		return nil, err
	}
	r := &Result{Valkey: map[string]string{}}
	for _, cfg := range configs {
		r.Chain = append(r.Chain, cfg.Name)
	}

	imageName := ""
	for _, cfg := range configs {
		if cfg.Spec.ImageRef != "" {
			imageName = cfg.Spec.ImageRef
			break
		}
	}
	if imageName == "" {
		return nil, noImageRef(name, r.Chain)
	}

	for _, cfg := range configs {
		res := cfg.Spec.Resources
		if res == nil {
			continue
		}
		if r.CPU == "" {
			r.CPU = res.CPU
		}
		if r.Memory == "" {
			r.Memory = res.Memory
		}
	}

	// Root first, so a child's key overwrites its parent's.
	for i := len(configs) - 1; i >= 0; i-- {
		maps.Copy(r.Valkey, configs[i].Spec.Valkey)
	}

	for _, cfg := range configs {
		// nil means "not set" (inherit); an empty non-nil list is set.
		if cfg.Spec.ACL != nil {
			r.ACL = make([]v1alpha1.AclBinding, 0, len(cfg.Spec.ACL))
			for i := range cfg.Spec.ACL {
				r.ACL = append(r.ACL, *cfg.Spec.ACL[i].DeepCopy())
			}
			r.ACLSet = true
			break
		}
	}

	for _, cfg := range configs {
		if e := cfg.Spec.Exporter; e != nil && e.Enabled != nil {
			r.Exporter = *e.Enabled
			break
		}
	}

	for _, cfg := range configs {
		if cfg.Spec.Persistence != nil {
			r.Persistence = cfg.Spec.Persistence.DeepCopy()
			break
		}
	}

	r.Pod = resolvePod(configs)

	img, err := menu.Image(ctx, imageName)
	switch {
	case isNotFound(err) || (err == nil && img == nil):
		return nil, imageNotFound(imageName, r.Chain)
	case err != nil:
		return nil, fmt.Errorf("get ValkeyImage %q: %w", imageName, err)
	}
	r.ImageName = imageName
	r.Image = img.Spec.Repository + ":" + img.Spec.Tag
	r.Version = img.Spec.Version
	return r, nil
}

// walk fetches the chain child to root, exactly as the documented operator:
// the depth check comes before each fetch, so ten configs resolve and an
// eleventh (or a cycle) fails.
func walk(ctx context.Context, menu Menu, name string) ([]*v1alpha1.ValkeyConfig, error) {
	var (
		configs []*v1alpha1.ValkeyConfig
		names   []string
	)
	for cur := name; cur != ""; {
		if len(configs) == maxChainDepth {
			return nil, chainTooDeep(names)
		}
		names = append(names, cur)
		cfg, err := menu.Config(ctx, cur)
		switch {
		case isNotFound(err) || (err == nil && cfg == nil):
			return nil, configNotFound(cur, names)
		case err != nil:
			return nil, fmt.Errorf("get ValkeyConfig %q: %w", cur, err)
		}
		configs = append(configs, cfg)
		cur = cfg.Spec.BaseRef
	}
	return configs, nil
}
