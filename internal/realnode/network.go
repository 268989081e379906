package realnode

import (
	"crypto/rand"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// The pod subnets a run picks from when Options.PodSubnet is empty: one /24
// in 10.200.0.0/13 (10.200.0.0 – 10.207.255.255), at random, that no
// interface of this machine has an address in and no route covers.
const (
	subnetPoolBase = 0x0ac80000 // 10.200.0.0
	subnetPoolSize = 1 << 11    // /24s in a /13
)

// network is the run's bridge and pod subnet.
type network struct {
	bridge  string
	subnet  *net.IPNet
	gateway net.IP
	created bool // the bridge was made by this run
}

// pickNetwork makes the run's bridge, with the gateway address of its pod
// subnet, so a run started next to this one sees both taken. bridge and
// subnet may be fixed by the caller; otherwise they are drawn at random
// and checked against what exists.
func pickNetwork(bridge, subnet string) (*network, error) {
	for attempt := 0; attempt < 20; attempt++ {
		n := &network{bridge: bridge}
		if n.bridge == "" {
			n.bridge = "rn" + randomHex(6) // IFNAMSIZ is 16 with the NUL
		}
		if len(n.bridge) > 15 {
			return nil, fmt.Errorf("bridge name %q longer than 15 characters", n.bridge)
		}
		if subnet != "" {
			_, ipn, err := net.ParseCIDR(subnet)
			if err != nil {
				return nil, fmt.Errorf("pod subnet %q: %w", subnet, err)
			}
			n.subnet = ipn
		} else {
			var b [4]byte
			_, _ = rand.Read(b[:])
			base := subnetPoolBase + (binary.BigEndian.Uint32(b[:])%subnetPoolSize)<<8
			ip := make(net.IP, 4)
			binary.BigEndian.PutUint32(ip, base)
			n.subnet = &net.IPNet{IP: ip, Mask: net.CIDRMask(24, 32)}
		}
		gw := make(net.IP, 4)
		copy(gw, n.subnet.IP.To4())
		gw[3]++
		n.gateway = gw
		if _, err := net.InterfaceByName(n.bridge); err == nil {
			if bridge != "" {
				return nil, fmt.Errorf("bridge %s exists already", n.bridge)
			}
			continue
		}
		inUse, err := subnetInUse(n.subnet)
		if err != nil {
			return nil, err
		}
		if inUse {
			if subnet != "" {
				return nil, fmt.Errorf("pod subnet %s overlaps an address or route of this machine", n.subnet)
			}
			continue
		}
		if err := n.create(); err != nil {
			if bridge == "" && subnet == "" {
				continue // a run next to this one took it meanwhile
			}
			return nil, err
		}
		return n, nil
	}
	return nil, errors.New("no free bridge name and pod subnet found in 20 tries")
}

func randomHex(n int) string {
	b := make([]byte, (n+1)/2)
	_, _ = rand.Read(b)
	return fmt.Sprintf("%x", b)[:n]
}

// subnetInUse reports whether an address of an interface lies in subnet or
// a route overlaps it.
func subnetInUse(subnet *net.IPNet) (bool, error) {
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		return false, fmt.Errorf("listing interface addresses: %w", err)
	}
	for _, a := range addrs {
		if ipn, ok := a.(*net.IPNet); ok && (subnet.Contains(ipn.IP) || ipn.Contains(subnet.IP)) {
			return true, nil
		}
	}
	out, err := exec.Command("ip", "-4", "route", "show", "table", "all").Output()
	if err != nil {
		return false, fmt.Errorf("listing routes: %w", err)
	}
	for _, line := range strings.Split(string(out), "\n") {
		f := strings.Fields(line)
		if len(f) == 0 || f[0] == "default" {
			continue
		}
		dst := f[0]
		if f[0] == "local" || f[0] == "broadcast" || f[0] == "unicast" {
			if len(f) < 2 {
				continue
			}
			dst = f[1]
		}
		if !strings.Contains(dst, "/") {
			dst += "/32"
		}
		_, ipn, err := net.ParseCIDR(dst)
		if err != nil {
			continue
		}
		if subnet.Contains(ipn.IP) || ipn.Contains(subnet.IP) {
			return true, nil
		}
	}
	return false, nil
}

func ipCmd(args ...string) error {
	if out, err := exec.Command("ip", args...).CombinedOutput(); err != nil {
		return fmt.Errorf("ip %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(string(out)))
	}
	return nil
}

func (n *network) create() error {
	if err := ipCmd("link", "add", "name", n.bridge, "type", "bridge"); err != nil {
		return fmt.Errorf("creating bridge: %w", err)
	}
	n.created = true
	ones, _ := n.subnet.Mask.Size()
	if err := ipCmd("addr", "add", fmt.Sprintf("%s/%d", n.gateway, ones), "dev", n.bridge); err != nil {
		_ = n.remove()
		return fmt.Errorf("addressing bridge: %w", err)
	}
	if err := ipCmd("link", "set", n.bridge, "up"); err != nil {
		_ = n.remove()
		return fmt.Errorf("bringing bridge up: %w", err)
	}
	return nil
}

// remove deletes the bridge (a pod's veth goes with its network namespace).
func (n *network) remove() error {
	if n == nil || !n.created {
		return nil
	}
	if _, err := net.InterfaceByName(n.bridge); err != nil {
		n.created = false
		return nil
	}
	if err := ipCmd("link", "delete", n.bridge); err != nil {
		return fmt.Errorf("removing bridge: %w", err)
	}
	n.created = false
	return nil
}

// writeConflist writes the CNI network of the run: bridge with host-local
// addresses from the pod subnet, and portmap. containerd adds the loopback
// network itself (its CRI plugin runs /usr/lib/cni/loopback for every pod).
func (n *network) writeConflist(confDir, ipamDir, name string) error {
	ones, _ := n.subnet.Mask.Size()
	conf := map[string]any{
		"cniVersion": "1.0.0",
		"name":       name,
		"plugins": []any{
			map[string]any{
				"type":        "bridge",
				"bridge":      n.bridge,
				"isGateway":   true,
				"ipMasq":      false,
				"hairpinMode": true,
				"ipam": map[string]any{
					"type":    "host-local",
					"dataDir": ipamDir,
					"ranges":  [][]map[string]string{{{"subnet": fmt.Sprintf("%s/%d", n.subnet.IP, ones), "gateway": n.gateway.String()}}},
					"routes":  []map[string]string{{"dst": "0.0.0.0/0"}},
				},
			},
			map[string]any{"type": "portmap", "capabilities": map[string]bool{"portMappings": true}},
		},
	}
	data, err := json.MarshalIndent(conf, "", "  ")
	if err != nil {
		return err
	}
	if err := os.MkdirAll(confDir, 0o755); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(confDir, "10-"+name+".conflist"), data, 0o644)
}

// DefaultNodeIP is the node's InternalIP when Options.NodeIP is empty:
// an address of this machine that its pods reach (their traffic to it
// leaves through the bridge's gateway), where a control plane serving
// pods listens (localkube.PodNetwork.Address).
func DefaultNodeIP() (net.IP, error) { return defaultRouteIP() }

// defaultRouteIP is the IPv4 address of the interface holding the default
// route: the node's InternalIP.
func defaultRouteIP() (net.IP, error) {
	out, err := exec.Command("ip", "-4", "route", "get", "1.1.1.1").Output()
	if err != nil {
		return nil, fmt.Errorf("finding the default route: %w", err)
	}
	f := strings.Fields(string(out))
	for i := 0; i+1 < len(f); i++ {
		if f[i] == "src" {
			if ip := net.ParseIP(f[i+1]); ip != nil {
				return ip, nil
			}
		}
	}
	return nil, fmt.Errorf("no source address in %q", strings.TrimSpace(string(out)))
}
