// Package realnode runs a real Kubernetes node for tests: containerd with
// runc and the CNI bridge plugin, and a kubelet joined to a test control
// plane, every piece with its own directories, bridge, pod subnet, cgroup
// and ports so that two runs can share a machine. Stop takes it all down
// and undoes what the node changed on the machine.
//
// It needs root, the kubelet hack/build-testbin.sh builds and what
// hack/install-node.sh installs (make node, which make test runs first).
package realnode

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"sync"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/gomomento/valkey-operator/internal/testbin"
)

// UserAdder provisions a client certificate for a user of the control
// plane; *envtest.Environment is one.
type UserAdder interface {
	AddUser(user envtest.User, baseConfig *rest.Config) (*envtest.AuthenticatedUser, error)
}

// Options configures Start.
type Options struct {
	// Config is an admin client configuration of the control plane the
	// node joins; Users makes the node's own client certificate (user
	// system:node:<Name>, group system:nodes), which Start binds to the
	// system:node ClusterRole.
	Config *rest.Config
	Users  UserAdder
	// Dir holds everything of the node: containerd's root and state, the
	// kubelet's root, the CNI configuration, certificates and logs (Dir/logs).
	// Required; it must be short enough for unix socket paths under it
	// (about 60 characters).
	Dir string
	// Name is the node's name. Default: realnode-<random>.
	Name string
	// BinDir holds kubelet. Default: bin/testbin (hack/build-testbin.sh).
	BinDir string
	// Bridge and PodSubnet (a /24 or wider) are the run's CNI bridge and pod
	// addresses. Default: a bridge rn<random>, and a /24 in 10.200.0.0/13 no
	// interface or route of this machine uses.
	Bridge, PodSubnet string
	// NodeIP is the node's InternalIP. Default: the address of the
	// interface holding the default route.
	NodeIP string
	// KubeletClientCA is a CA file whose client certificates the kubelet
	// accepts, as the apiserver's (see NewKubeletClient). Without it only
	// bearer tokens authenticate to the kubelet, so logs and exec through
	// the apiserver are refused.
	KubeletClientCA string
	// ClusterDNS and ClusterDomain go into the KubeletConfiguration when
	// set. ClusterDomain is also the zone DNS serves (default
	// cluster.local); ClusterDNS defaults to the node's CoreDNS with DNS.
	ClusterDNS    []string
	ClusterDomain string
	// DNS runs CoreDNS for the node: at its bridge's gateway address
	// (Node.DNS, port 53), serving ClusterDomain's Service, headless and
	// pod names and the reverse zones from the control plane, and nothing
	// else. Headless names need the control plane's EndpointSlice
	// controller (localkube.PodNetwork).
	DNS bool
	// Services runs kube-proxy (iptables mode) for the node, so Service
	// ClusterIPs reach their pods, from the pods and from this machine.
	// Its chains are machine-wide, so one node on the machine runs it at a
	// time: Start waits (as long as its context lets it) for another
	// run's node with Services to stop.
	Services bool
	// KubeletArgs are extra kubelet flags.
	KubeletArgs []string
	// StartTimeout bounds each step of Start. Default 90s.
	StartTimeout time.Duration
}

// Node is a running containerd and kubelet.
type Node struct {
	// Name is the Node object's name.
	Name string
	// IP is the node's InternalIP.
	IP net.IP
	// PodSubnet is where pod IPs come from; Bridge is the CNI bridge.
	PodSubnet *net.IPNet
	Bridge    string
	// CgroupRoot is the cgroup (in every hierarchy) holding the pods.
	CgroupRoot string
	// DNS is where the node's CoreDNS serves (port DNSPort), nil without
	// Options.DNS; ClusterDomain is the zone it serves and the kubelet's.
	DNS           net.IP
	ClusterDomain string
	// Timings are the wall times of Start's steps, in order.
	Timings []Timing

	opts           Options
	dir            string
	id             string
	client         kubernetes.Interface
	containerd     containerdPaths
	cniConfDir     string
	kubeletRoot    string
	podLogsDir     string
	network        *network
	rec            runRecord
	joined         bool
	containerdProc *daemon
	kubeletProc    *daemon
	rbacBinding    string
	rbacObjects    []rbacObject
	dnsProc        *daemon
	proxyProc      *daemon
	proxyLock      *os.File
	registered     bool
	started        time.Time

	stopOnce sync.Once
	stopErr  error
}

// Timing is how long one step of Start took.
type Timing struct {
	Step string
	Took time.Duration
}

// Start brings up containerd and a kubelet joined to the control plane in
// opts, and waits until the Node is Ready. On error everything already done
// is undone.
func Start(ctx context.Context, opts Options) (n *Node, err error) {
	if opts.Config == nil || opts.Users == nil {
		return nil, errors.New("realnode: Options.Config and Options.Users are required")
	}
	if opts.Dir == "" {
		return nil, errors.New("realnode: Options.Dir is required")
	}
	if os.Geteuid() != 0 {
		return nil, errors.New("realnode: a real node needs root")
	}
	if opts.StartTimeout == 0 {
		opts.StartTimeout = 90 * time.Second
	}
	if opts.BinDir == "" {
		if opts.BinDir, err = testbin.Dir("kubelet"); err != nil {
			return nil, fmt.Errorf("realnode: %w (make node)", err)
		}
	}
	dir, err := filepath.Abs(opts.Dir)
	if err != nil {
		return nil, fmt.Errorf("realnode: %w", err)
	}
	n = &Node{opts: opts, dir: dir, id: randomHex(6), started: time.Now()}
	n.Name = opts.Name
	if n.Name == "" {
		n.Name = "realnode-" + n.id
	}
	n.CgroupRoot = "/realnode-" + n.id
	n.ClusterDomain = opts.ClusterDomain
	if n.ClusterDomain == "" && opts.DNS {
		n.ClusterDomain = defaultClusterDomain
	}
	n.containerd = newContainerdPaths(dir)
	n.cniConfDir = filepath.Join(dir, "cni", "net.d")
	n.kubeletRoot = filepath.Join(dir, "kubelet")
	n.podLogsDir = filepath.Join(dir, podLogsDirName)
	if n.client, err = kubernetes.NewForConfig(opts.Config); err != nil {
		return nil, fmt.Errorf("realnode: client: %w", err)
	}
	defer func() {
		if err != nil {
			if stopErr := n.Stop(); stopErr != nil {
				err = fmt.Errorf("%w (and undoing the start: %v)", err, stopErr)
			}
			n = nil
		}
	}()
	type step struct {
		name string
		run  func(context.Context) error
	}
	steps := []step{{"prepare", n.prepare}}
	if opts.Services {
		steps = append(steps, step{"kube-proxy lock", n.lockMachineProxy})
	}
	steps = append(steps,
		step{"containerd", n.startContainerd},
		step{"pause image", n.importPause},
	)
	if opts.DNS {
		steps = append(steps, step{"cluster DNS", n.startDNS})
	}
	steps = append(steps, step{"kubelet credentials", n.writeKubeletFiles}, step{"kubelet ready", n.startKubelet})
	if opts.Services {
		steps = append(steps, step{"kube-proxy", n.startProxy})
	}
	for _, s := range steps {
		t0 := time.Now()
		if err := s.run(ctx); err != nil {
			return n, fmt.Errorf("realnode %s: %s: %w", n.Name, s.name, err)
		}
		n.Timings = append(n.Timings, Timing{Step: s.name, Took: time.Since(t0)})
	}
	return n, nil
}

// prepare registers the run (recording the machine as found when no other
// run is alive, and cleaning up after runs whose process died), then makes
// its directories, bridge, CNI configuration and cgroups.
func (n *Node) prepare(context.Context) error {
	outside := recordOutsidePaths()
	n.rec = ownRecord(n.id, n.dir, n.CgroupRoot, n.started)
	if err := join(n.rec, outside); err != nil {
		return err
	}
	n.joined = true
	var err error
	for _, d := range []string{filepath.Join(n.dir, "logs"), n.kubeletRoot, n.podLogsDir, filepath.Join(n.dir, "volume-plugins")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return err
		}
	}
	if n.opts.NodeIP != "" {
		if n.IP = net.ParseIP(n.opts.NodeIP); n.IP == nil {
			return fmt.Errorf("node IP %q is not an IP address", n.opts.NodeIP)
		}
	} else if n.IP, err = defaultRouteIP(); err != nil {
		return err
	}
	if n.network, err = pickNetwork(n.opts.Bridge, n.opts.PodSubnet); err != nil {
		return err
	}
	n.Bridge, n.PodSubnet = n.network.bridge, n.network.subnet
	if n.opts.DNS {
		n.DNS = n.network.gateway
	}
	n.rec.Bridge = n.Bridge
	if err := update(n.rec); err != nil {
		return err
	}
	if err := n.network.writeConflist(n.cniConfDir, filepath.Join(n.dir, "cni", "ipam"), n.cniNetworkName()); err != nil {
		return fmt.Errorf("writing the CNI configuration: %w", err)
	}
	if err := createCgroups(n.CgroupRoot); err != nil {
		return err
	}
	return nil
}

func (n *Node) cniNetworkName() string { return "realnode-" + n.id }

func (n *Node) importPause(ctx context.Context) error {
	tarPath := filepath.Join(n.dir, "pause.tar")
	if err := WritePauseImage(ctx, tarPath); err != nil {
		return err
	}
	return n.ImportImage(ctx, tarPath)
}

// Dir is the node's directory (Options.Dir).
func (n *Node) Dir() string { return n.dir }

// LogDir holds containerd.log and kubelet.log.
func (n *Node) LogDir() string { return filepath.Join(n.dir, "logs") }

// Stop stops kube-proxy (removing its rules), CoreDNS, the kubelet and
// containerd, kills what is left of the pods
// and the shims, unmounts everything under Dir, removes the bridge, the
// cgroups and what the run left outside Dir, and deletes the Node and its
// RBAC binding. The last run out on this machine restores the sysctls and
// removes the directories outside Dir the runs made. Stop keeps Dir (the
// logs are there) and is safe to call twice.
func (n *Node) Stop() error {
	n.stopOnce.Do(func() { n.stopErr = n.stop() })
	return n.stopErr
}

func (n *Node) stop() error {
	var errs []error
	add := func(step string, err error) {
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", step, err))
		}
	}
	add("stopping kube-proxy", n.stopProxy())
	n.rec.KubeProxy = ""
	n.dnsProc.stop(5 * time.Second)
	n.kubeletProc.stop(15 * time.Second)
	sandboxes := sandboxIDs(n.dir)
	// The pods' processes, then the shims, go before containerd, which
	// would otherwise restart nothing but keep their state.
	killCgroups(n.CgroupRoot)
	var keep []int
	if n.containerdProc != nil && !n.containerdProc.exited() {
		keep = append(keep, n.containerdProc.pid())
	}
	add("killing shims", killStragglers(n.dir, keep...))
	n.containerdProc.stop(10 * time.Second)
	if n.joined {
		if err := teardownRun(n.rec, sandboxes); err != nil {
			// The record stays: the next run retries once this process is gone.
			add("tearing down", err)
		} else {
			add("restoring the machine", leave(n.id))
		}
	}
	add("deleting the node from the API", n.unregister())
	if len(errs) > 0 {
		return fmt.Errorf("realnode %s: stopping: %w", n.Name, errors.Join(errs...))
	}
	return nil
}

// podLogsDirName is the kubelet's podLogsDir, under Dir.
const podLogsDirName = "pod-logs"
