package realnode

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

// containerdPaths are the directories of the run's containerd, all under
// Options.Dir.
type containerdPaths struct {
	root, state, runcRoot, opt, config, socket, log string
	// hosts is the CRI plugin's registry config_path: one directory per
	// registry host, holding its hosts.toml (see registry_hosts.go).
	hosts string
}

func newContainerdPaths(dir string) containerdPaths {
	base := filepath.Join(dir, "containerd")
	return containerdPaths{
		root:     filepath.Join(base, "root"),
		state:    filepath.Join(base, "state"),
		runcRoot: filepath.Join(base, "runc"),
		opt:      filepath.Join(base, "opt"),
		config:   filepath.Join(base, "config.toml"),
		socket:   filepath.Join(base, "containerd.sock"),
		log:      filepath.Join(dir, "logs", "containerd.log"),
		hosts:    filepath.Join(base, "hosts"),
	}
}

// containerdConfig is containerd 1.6's config (version 2) for one run:
// its own root, state and sockets; the CRI plugin with the local pause
// image, OOM scores it may not lower (root here lacks CAP_SYS_RESOURCE),
// network namespaces under its state dir, runc's state under the run's dir
// and the run's CNI configuration.
func containerdConfig(p containerdPaths, cniConfDir string) string {
	q := func(s string) string { return fmt.Sprintf("%q", s) }
	return strings.Join([]string{
		`version = 2`,
		`root = ` + q(p.root),
		`state = ` + q(p.state),
		`disabled_plugins = ["io.containerd.snapshotter.v1.btrfs", "io.containerd.snapshotter.v1.zfs", "io.containerd.snapshotter.v1.aufs", "io.containerd.snapshotter.v1.devmapper", "io.containerd.tracing.processor.v1.otlp", "io.containerd.internal.v1.tracing"]`,
		``,
		`[grpc]`,
		`  address = ` + q(p.socket),
		``,
		`[ttrpc]`,
		`  address = ` + q(p.socket+".ttrpc"),
		``,
		`[debug]`,
		`  address = ""`,
		``,
		`[metrics]`,
		`  address = ""`,
		``,
		`[plugins."io.containerd.internal.v1.opt"]`,
		`  path = ` + q(p.opt),
		``,
		`[plugins."io.containerd.grpc.v1.cri"]`,
		`  sandbox_image = ` + q(PauseImage),
		`  restrict_oom_score_adj = true`,
		`  netns_mounts_under_state_dir = true`,
		`  disable_apparmor = true`,
		`  enable_selinux = false`,
		`  stream_server_address = "127.0.0.1"`,
		`  stream_server_port = "0"`,
		`  enable_cdi = false`,
		``,
		`[plugins."io.containerd.grpc.v1.cri".containerd]`,
		`  snapshotter = "overlayfs"`,
		`  default_runtime_name = "runc"`,
		``,
		`[plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]`,
		`  runtime_type = "io.containerd.runc.v2"`,
		``,
		`[plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]`,
		`  SystemdCgroup = false`,
		`  Root = ` + q(p.runcRoot),
		``,
		`[plugins."io.containerd.grpc.v1.cri".registry]`,
		`  config_path = ` + q(p.hosts),
		``,
		`[plugins."io.containerd.grpc.v1.cri".cni]`,
		`  bin_dir = "/usr/lib/cni"`,
		`  conf_dir = ` + q(cniConfDir),
		`  max_conf_num = 1`,
		``,
	}, "\n")
}

// startContainerd writes the config, starts containerd and waits until it
// answers on its socket.
func (n *Node) startContainerd(ctx context.Context) error {
	p := n.containerd
	if len(p.socket) > 100 {
		return fmt.Errorf("containerd socket path %s is longer than a unix socket allows: use a shorter Options.Dir", p.socket)
	}
	for _, d := range []string{p.root, p.state, p.runcRoot, p.opt} {
		if err := os.MkdirAll(d, 0o711); err != nil {
			return fmt.Errorf("containerd: %w", err)
		}
	}
	if err := os.WriteFile(p.config, []byte(containerdConfig(p, n.cniConfDir)), 0o644); err != nil {
		return fmt.Errorf("containerd config: %w", err)
	}
	bin, err := exec.LookPath("containerd")
	if err != nil {
		return fmt.Errorf("containerd not installed (hack/install-node.sh): %w", err)
	}
	d, err := startDaemon("containerd", p.log, n.dir, bin, "--config", p.config, "--log-level", "info")
	if err != nil {
		return err
	}
	n.containerdProc = d
	err = poll(ctx, n.opts.StartTimeout, func() (bool, error) {
		if d.exited() {
			return false, fmt.Errorf("containerd exited: %v (log %s)", d.err, p.log)
		}
		return n.ctr(ctx, "version") == nil, nil
	})
	if err != nil {
		return fmt.Errorf("waiting for containerd on %s (log %s): %w", p.socket, p.log, err)
	}
	return nil
}

// ctr runs containerd's ctr against the run's containerd, in the
// namespace the CRI plugin uses.
func (n *Node) ctr(ctx context.Context, args ...string) error {
	full := append([]string{"--address", n.containerd.socket, "--namespace", "k8s.io"}, args...)
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, "ctr", full...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("ctr %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(string(out)))
	}
	return nil
}

// ImportImage imports an image tarball (an OCI layout or `docker save`
// archive, such as WriteImage writes) into the node's containerd, where
// pods with imagePullPolicy Never or IfNotPresent find it.
func (n *Node) ImportImage(ctx context.Context, tarPath string) error {
	if err := n.ctr(ctx, "images", "import", tarPath); err != nil {
		return fmt.Errorf("importing image %s: %w", tarPath, err)
	}
	return nil
}

// poll calls cond every 100ms until it reports done, returns an error, or
// timeout passes.
func poll(ctx context.Context, timeout time.Duration, cond func() (bool, error)) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	t := time.NewTicker(100 * time.Millisecond)
	defer t.Stop()
	for {
		ok, err := cond()
		if err != nil {
			return err
		}
		if ok {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-t.C:
		}
	}
}
