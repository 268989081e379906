package realnode

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/gomomento/valkey-operator/internal/localkube/procscan"
)

// Sysctls are the kernel settings a node changes: the kubelet's kernel
// tunables (vm.overcommit_memory, vm.panic_on_oom, kernel.panic,
// kernel.panic_on_oops, the root key quotas) and the forwarding the bridge
// plugin turns on. The first run alive on the machine records them, the
// last one out restores them.
var Sysctls = []string{
	"net.ipv4.ip_forward",
	"net.ipv4.conf.all.forwarding",
	"net.ipv4.conf.default.forwarding",
	"net.ipv6.conf.all.forwarding",
	"net.ipv6.conf.default.forwarding",
	"vm.overcommit_memory",
	"vm.panic_on_oom",
	"kernel.panic",
	"kernel.panic_on_oops",
	"kernel.keys.root_maxkeys",
	"kernel.keys.root_maxbytes",
}

type sysctlValue struct {
	Name  string `json:"name"`
	Value string `json:"value"`
}

func sysctlPath(name string) string {
	return filepath.Join("/proc/sys", strings.ReplaceAll(name, ".", "/"))
}

// ReadSysctl returns a kernel setting as /proc/sys shows it.
func ReadSysctl(name string) (string, error) {
	b, err := os.ReadFile(sysctlPath(name))
	if err != nil {
		return "", err
	}
	return strings.TrimSpace(string(b)), nil
}

func readSysctls() ([]sysctlValue, error) {
	var vals []sysctlValue
	for _, name := range Sysctls {
		v, err := ReadSysctl(name)
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("reading sysctl %s: %w", name, err)
		}
		vals = append(vals, sysctlValue{Name: name, Value: v})
	}
	return vals, nil
}

// restoreSysctls writes back every recorded value that changed, in the
// recorded order (net.ipv4.ip_forward first: writing it resets the
// per-interface forwarding settings, which come after).
func restoreSysctls(vals []sysctlValue) error {
	var errs []error
	for _, v := range vals {
		cur, err := ReadSysctl(v.Name)
		if err != nil || cur == v.Value {
			continue
		}
		if err := os.WriteFile(sysctlPath(v.Name), []byte(v.Value), 0o644); err != nil {
			errs = append(errs, fmt.Errorf("restoring sysctl %s to %s: %w", v.Name, v.Value, err))
		}
	}
	return errors.Join(errs...)
}

// OutsidePaths are the paths outside Options.Dir that the kubelet,
// containerd, its shims or the CNI plugins create whatever they are told:
// the device-plugin socket directory, the container log links, shim
// sockets, the CNI result cache. Stop removes what the run put there; the
// last run out removes those of them that did not exist before the first
// (once empty).
var OutsidePaths = []string{
	"/var/lib/kubelet",
	"/var/lib/kubelet/device-plugins",
	"/var/lib/kubelet/plugins",
	"/var/lib/kubelet/plugins_registry",
	"/var/log/containers",
	"/var/log/pods",
	"/run/containerd",
	"/run/containerd/s",
	"/run/containerd/fifo",
	"/run/containerd/runc",
	"/run/containerd/io.containerd.runtime.v2.task",
	"/var/lib/containerd",
	"/opt/containerd",
	"/var/lib/cni",
	"/var/lib/cni/results",
	"/var/lib/cni/networks",
	"/run/netns",
	"/etc/cni",
	"/etc/cni/net.d",
	"/usr/libexec/kubernetes",
	"/usr/libexec/kubernetes/kubelet-plugins",
	"/usr/libexec/kubernetes/kubelet-plugins/volume",
	"/usr/libexec/kubernetes/kubelet-plugins/volume/exec",
}

type outsidePath struct {
	Path    string `json:"path"`
	Existed bool   `json:"existed"`
}

func recordOutsidePaths() []outsidePath {
	var r []outsidePath
	for _, p := range OutsidePaths {
		_, err := os.Lstat(p)
		r = append(r, outsidePath{Path: p, Existed: err == nil})
	}
	return r
}

// cleanRunOutside removes what the run left outside its directory: the
// container log links into it, the shim sockets nobody listens on any more
// made since it started, and the CNI result cache of its sandboxes (libcni
// keeps it in /var/lib/cni whatever the plugins' configuration says).
func cleanRunOutside(rec runRecord, sandboxes []string) error {
	var errs []error
	rm := func(p string) {
		if err := os.Remove(p); err != nil && !errors.Is(err, os.ErrNotExist) {
			errs = append(errs, fmt.Errorf("removing %s: %w", p, err))
		}
	}
	podLogs := filepath.Join(rec.Dir, podLogsDirName) + string(filepath.Separator)
	if entries, err := os.ReadDir("/var/log/containers"); err == nil {
		for _, e := range entries {
			p := filepath.Join("/var/log/containers", e.Name())
			if target, err := os.Readlink(p); err == nil && strings.HasPrefix(target, podLogs) {
				rm(p)
			}
		}
	}
	if entries, err := os.ReadDir("/run/containerd/s"); err == nil {
		listening := listeningUnixSockets()
		for _, e := range entries {
			p := filepath.Join("/run/containerd/s", e.Name())
			info, err := e.Info()
			if err != nil || listening[p] || info.ModTime().Before(rec.Started.Add(-time.Second)) {
				continue
			}
			rm(p)
		}
	}
	if entries, err := os.ReadDir("/var/lib/cni/results"); err == nil {
		for _, e := range entries {
			for _, id := range sandboxes {
				if strings.Contains(e.Name(), "-"+id+"-") {
					rm(filepath.Join("/var/lib/cni/results", e.Name()))
				}
			}
		}
	}
	return errors.Join(errs...)
}

// restoreMachine undoes what the runs changed on the machine once the last
// of them is gone: the sysctls, the kubelet's device-plugin socket and
// checkpoint (unless some other kubelet runs here), and the outside
// directories that did not exist before the first run, when empty.
func restoreMachine(ms machineState) error {
	var errs []error
	if err := restoreSysctls(ms.Sysctls); err != nil {
		errs = append(errs, err)
	}
	if !otherKubelets(0) {
		for _, f := range []string{"kubelet.sock", "kubelet_internal_checkpoint"} {
			p := filepath.Join("/var/lib/kubelet/device-plugins", f)
			if err := os.Remove(p); err != nil && !errors.Is(err, os.ErrNotExist) {
				errs = append(errs, fmt.Errorf("removing %s: %w", p, err))
			}
		}
	}
	created := append([]outsidePath(nil), ms.Outside...)
	sort.Slice(created, func(i, j int) bool { return len(created[i].Path) > len(created[j].Path) })
	for _, o := range created {
		if o.Existed {
			continue
		}
		if err := os.Remove(o.Path); err != nil && !errors.Is(err, os.ErrNotExist) {
			if entries, _ := os.ReadDir(o.Path); len(entries) > 0 {
				var names []string
				for _, e := range entries {
					names = append(names, e.Name())
				}
				errs = append(errs, fmt.Errorf("%s, made by a run, still holds %s", o.Path, strings.Join(names, ", ")))
				continue
			}
			errs = append(errs, fmt.Errorf("removing %s: %w", o.Path, err))
		}
	}
	return errors.Join(errs...)
}

// listeningUnixSockets are the bound unix socket paths of this machine.
func listeningUnixSockets() map[string]bool {
	m := map[string]bool{}
	f, err := os.Open("/proc/net/unix")
	if err != nil {
		return m
	}
	defer f.Close()
	s := bufio.NewScanner(f)
	for s.Scan() {
		fields := strings.Fields(s.Text())
		if len(fields) >= 8 && strings.HasPrefix(fields[7], "/") {
			m[fields[7]] = true
		}
	}
	return m
}

// otherKubelets reports whether a kubelet other than pid own runs here.
func otherKubelets(own int) bool {
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == own {
			continue
		}
		comm, _ := os.ReadFile(filepath.Join("/proc", e.Name(), "comm"))
		if strings.TrimSpace(string(comm)) == "kubelet" && !isZombie(pid) {
			return true
		}
	}
	return false
}

// cgroupMounts are the mount points of this machine's cgroup hierarchies
// (v1 controllers, and the v2 hierarchy, hybrid or not).
func cgroupMounts() ([]string, error) {
	mounts, err := readMountInfo()
	if err != nil {
		return nil, err
	}
	var r []string
	for _, m := range mounts {
		if m.fstype == "cgroup" || m.fstype == "cgroup2" {
			r = append(r, m.point)
		}
	}
	sort.Strings(r)
	return r, nil
}

// createCgroups makes root in every cgroup hierarchy, the cgroup the
// kubelet puts its pods under (cgroupRoot). A v1 cpuset cgroup starts
// with no CPUs or memory nodes: it gets its parent's.
func createCgroups(root string) error {
	mounts, err := cgroupMounts()
	if err != nil {
		return err
	}
	for _, m := range mounts {
		p := filepath.Join(m, root)
		if err := os.Mkdir(p, 0o755); err != nil && !errors.Is(err, os.ErrExist) {
			return fmt.Errorf("creating cgroup %s: %w", p, err)
		}
		for _, f := range []string{"cpuset.cpus", "cpuset.mems"} {
			if v, err := os.ReadFile(filepath.Join(m, f)); err == nil {
				if _, err := os.Stat(filepath.Join(p, f)); err == nil {
					if err := os.WriteFile(filepath.Join(p, f), v, 0o644); err != nil {
						return fmt.Errorf("cgroup %s: setting %s: %w", p, f, err)
					}
				}
			}
		}
	}
	return nil
}

// cgroupTree lists the cgroups under (and including) top, deepest first.
func cgroupTree(top string) []string {
	var dirs []string
	_ = filepath.WalkDir(top, func(p string, d os.DirEntry, err error) error {
		if err == nil && d.IsDir() {
			dirs = append(dirs, p)
		}
		return nil
	})
	sort.Slice(dirs, func(i, j int) bool { return len(dirs[i]) > len(dirs[j]) })
	return dirs
}

// CgroupPIDs are the processes in the cgroups under top.
func CgroupPIDs(top string) []int {
	var pids []int
	for _, d := range cgroupTree(top) {
		b, err := os.ReadFile(filepath.Join(d, "cgroup.procs"))
		if err != nil {
			continue
		}
		for _, f := range strings.Fields(string(b)) {
			if pid, err := strconv.Atoi(f); err == nil {
				pids = append(pids, pid)
			}
		}
	}
	return pids
}

// runCgroups are the run's cgroups that exist, one per hierarchy.
func runCgroups(root string) []string {
	mounts, _ := cgroupMounts()
	var r []string
	for _, m := range mounts {
		p := filepath.Join(m, root)
		if _, err := os.Stat(p); err == nil {
			r = append(r, p)
		}
	}
	return r
}

// killCgroups kills every process in the cgroups under root (what is left
// of the pods' containers once the kubelet is gone) and waits up to 5s for
// each to be reaped: by its shim, while the shims live, so that none is
// left a zombie for init to collect.
func killCgroups(root string) {
	var killed []int
	for _, top := range runCgroups(root) {
		for _, pid := range CgroupPIDs(top) {
			if syscall.Kill(pid, syscall.SIGKILL) == nil {
				killed = append(killed, pid)
			}
		}
	}
	deadline := time.Now().Add(5 * time.Second)
	for _, pid := range killed {
		for time.Now().Before(deadline) {
			if _, err := os.Stat(fmt.Sprintf("/proc/%d", pid)); err != nil {
				break
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
}

// removeCgroups removes the cgroups under root, children first, once the
// processes in them are gone (a dying process keeps its cgroup busy for a
// moment).
func removeCgroups(root string) error {
	var errs []error
	for _, top := range runCgroups(root) {
		deadline := time.Now().Add(10 * time.Second)
		for _, d := range cgroupTree(top) {
			for {
				err := os.Remove(d)
				if err == nil || errors.Is(err, os.ErrNotExist) {
					break
				}
				if time.Now().After(deadline) {
					errs = append(errs, fmt.Errorf("removing cgroup %s: %w (processes %v)", d, err, CgroupPIDs(d)))
					break
				}
				for _, pid := range CgroupPIDs(d) {
					_ = syscall.Kill(pid, syscall.SIGKILL)
				}
				time.Sleep(50 * time.Millisecond)
			}
		}
	}
	return errors.Join(errs...)
}

type mountEntry struct{ point, fstype string }

func readMountInfo() ([]mountEntry, error) {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var r []mountEntry
	s := bufio.NewScanner(f)
	s.Buffer(make([]byte, 64*1024), 1024*1024)
	for s.Scan() {
		fields := strings.Fields(s.Text())
		sep := -1
		for i, fl := range fields {
			if fl == "-" {
				sep = i
				break
			}
		}
		if len(fields) < 5 || sep < 0 || sep+1 >= len(fields) {
			continue
		}
		r = append(r, mountEntry{point: unescapeMount(fields[4]), fstype: fields[sep+1]})
	}
	return r, s.Err()
}

// unescapeMount undoes mountinfo's octal escapes (\040 for a space).
func unescapeMount(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
			if v, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(v))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// MountsUnder lists the mount points at or under dir, deepest first.
func MountsUnder(dir string) ([]string, error) {
	mounts, err := readMountInfo()
	if err != nil {
		return nil, err
	}
	var r []string
	for _, m := range mounts {
		if m.point == dir || strings.HasPrefix(m.point, dir+"/") {
			r = append(r, m.point)
		}
	}
	sort.SliceStable(r, func(i, j int) bool { return len(r[i]) > len(r[j]) })
	return r, nil
}

// unmountAll unmounts everything under dir (container root filesystems,
// shm, network namespaces, the kubelet's volumes), stacked mounts included.
func unmountAll(dir string) error {
	for range 10 {
		points, err := MountsUnder(dir)
		if err != nil {
			return err
		}
		if len(points) == 0 {
			return nil
		}
		for _, p := range points {
			if err := unix.Unmount(p, 0); err != nil {
				_ = unix.Unmount(p, unix.MNT_DETACH)
			}
		}
	}
	points, _ := MountsUnder(dir)
	if len(points) > 0 {
		return fmt.Errorf("still mounted under %s: %s", dir, strings.Join(points, ", "))
	}
	return nil
}

// sandboxIDs are the pod sandboxes the CRI plugin of the containerd of
// the run in dir knows of.
func sandboxIDs(dir string) []string {
	p := newContainerdPaths(dir)
	seen := map[string]bool{}
	var ids []string
	for _, base := range []string{p.root, p.state} {
		entries, _ := os.ReadDir(filepath.Join(base, "io.containerd.grpc.v1.cri", "sandboxes"))
		for _, e := range entries {
			if !seen[e.Name()] {
				seen[e.Name()] = true
				ids = append(ids, e.Name())
			}
		}
	}
	return ids
}

// killStragglers kills the processes that belong to the run's directory
// dir (shims run with their bundle there and name its containerd socket),
// but those in except, and waits for them to go.
func killStragglers(dir string, except ...int) error {
	skip := map[int]bool{}
	for _, p := range except {
		skip[p] = true
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		procs, err := procscan.Under(dir + string(filepath.Separator))
		if err != nil {
			return fmt.Errorf("listing processes: %w", err)
		}
		var left []procscan.Process
		for _, p := range procs {
			if !skip[p.PID] && !isZombie(p.PID) {
				left = append(left, p)
			}
		}
		if len(left) == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("processes of the run still alive: %v", left)
		}
		for _, p := range left {
			_ = syscall.Kill(p.PID, syscall.SIGKILL)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func isZombie(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return true // gone
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	return i >= 0 && i+2 < len(s) && s[i+2] == 'Z'
}
