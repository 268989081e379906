package realnode

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// UsePlainHTTPRegistry lets the node's containerd pull from the registry at
// host (address:port) over plain HTTP, as a test's own registry serves.
// containerd reads its hosts directory on every pull, so this takes effect
// at once, with no restart; credentials still come from the pod's pull
// secrets, through the kubelet.
func (n *Node) UsePlainHTTPRegistry(host string) error {
	if host == "" || strings.ContainsAny(host, `/"\`) {
		return fmt.Errorf("registry host %q: want address:port", host)
	}
	dir := filepath.Join(n.containerd.hosts, host)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("registry hosts of %s: %w", host, err)
	}
	toml := fmt.Sprintf("server = %q\n\n[host.%q]\n  capabilities = [\"pull\", \"resolve\"]\n", "http://"+host, "http://"+host)
	if err := os.WriteFile(filepath.Join(dir, "hosts.toml"), []byte(toml), 0o644); err != nil {
		return fmt.Errorf("registry hosts of %s: %w", host, err)
	}
	return nil
}
