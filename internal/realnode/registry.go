package realnode

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// StateDir is where runs on this machine register, so that runs side by
// side share what they change on the machine and a run whose test binary
// was killed is cleaned up by the next one. It is on tmpfs: a reboot
// clears it along with the bridges, cgroups and mounts it describes.
const StateDir = "/run/realnode"

// runRecord is what a run leaves behind to undo, kept in
// StateDir/runs/<id>.json while the run lives.
type runRecord struct {
	ID         string `json:"id"`
	Owner      int    `json:"owner"`
	OwnerStart string `json:"ownerStart"`
	Dir        string `json:"dir"`
	Bridge     string `json:"bridge,omitempty"`
	CgroupRoot string `json:"cgroupRoot"`
	// KubeProxy is the kube-proxy binary while the run holds the machine's
	// kube-proxy lock: a killed run's rules are removed with it.
	KubeProxy string    `json:"kubeProxy,omitempty"`
	Started   time.Time `json:"started"`
}

// machineState is the machine as the first of the runs alive found it,
// kept in StateDir/machine.json and restored by the last one out.
type machineState struct {
	Sysctls []sysctlValue `json:"sysctls"`
	Outside []outsidePath `json:"outside"`
}

// processStart is a process's start time in clock ticks since boot
// (/proc/<pid>/stat field 22), "" when it is gone: with the pid it tells
// a live owner from a reused pid.
func processStart(pid int) string {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return ""
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return ""
	}
	f := strings.Fields(s[i+1:])
	if len(f) < 20 {
		return ""
	}
	return f[19]
}

func (r runRecord) alive() bool {
	return r.OwnerStart != "" && processStart(r.Owner) == r.OwnerStart
}

// registry is StateDir, locked.
type registry struct{ lock *os.File }

// lockRegistry takes the machine-wide lock on StateDir, making it when
// missing. The last run out removes the directory, lock file included, so
// the lock is taken again when the file locked is no longer the one at the
// path.
func lockRegistry() (*registry, error) {
	for {
		if err := os.MkdirAll(filepath.Join(StateDir, "runs"), 0o700); err != nil {
			return nil, fmt.Errorf("run registry: %w", err)
		}
		f, err := os.OpenFile(filepath.Join(StateDir, "lock"), os.O_CREATE|os.O_RDWR, 0o600)
		if err != nil {
			return nil, fmt.Errorf("run registry: %w", err)
		}
		if err := unix.Flock(int(f.Fd()), unix.LOCK_EX); err != nil {
			f.Close()
			return nil, fmt.Errorf("run registry: locking: %w", err)
		}
		var held, at unix.Stat_t
		if unix.Fstat(int(f.Fd()), &held) == nil && unix.Stat(f.Name(), &at) == nil && held.Ino == at.Ino && held.Dev == at.Dev {
			return &registry{lock: f}, nil
		}
		f.Close()
	}
}

func (g *registry) unlock() { g.lock.Close() }

func recordPath(id string) string { return filepath.Join(StateDir, "runs", id+".json") }

func (g *registry) runs() (live, stale []runRecord, err error) {
	entries, err := os.ReadDir(filepath.Join(StateDir, "runs"))
	if err != nil {
		return nil, nil, fmt.Errorf("run registry: %w", err)
	}
	for _, e := range entries {
		if !strings.HasSuffix(e.Name(), ".json") {
			continue
		}
		b, err := os.ReadFile(filepath.Join(StateDir, "runs", e.Name()))
		if err != nil {
			return nil, nil, fmt.Errorf("run registry: %w", err)
		}
		var r runRecord
		if err := json.Unmarshal(b, &r); err != nil {
			return nil, nil, fmt.Errorf("run registry: %s: %w", e.Name(), err)
		}
		if r.alive() {
			live = append(live, r)
		} else {
			stale = append(stale, r)
		}
	}
	return live, stale, nil
}

func (g *registry) save(r runRecord) error {
	b, err := json.Marshal(r)
	if err != nil {
		return err
	}
	if err := os.WriteFile(recordPath(r.ID), b, 0o600); err != nil {
		return fmt.Errorf("run registry: %w", err)
	}
	return nil
}

func (g *registry) drop(id string) error {
	if err := os.Remove(recordPath(id)); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("run registry: %w", err)
	}
	return nil
}

func machinePath() string { return filepath.Join(StateDir, "machine.json") }

func (g *registry) machine() (*machineState, error) {
	b, err := os.ReadFile(machinePath())
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("run registry: %w", err)
	}
	var ms machineState
	if err := json.Unmarshal(b, &ms); err != nil {
		return nil, fmt.Errorf("run registry: machine.json: %w", err)
	}
	return &ms, nil
}

// join registers rec. Stale runs are torn down first; when no other run
// is alive, a machine state left by crashed runs is restored, and the
// machine as found now is recorded for the last one out to restore.
func join(rec runRecord, outsideBefore []outsidePath) error {
	g, err := lockRegistry()
	if err != nil {
		return err
	}
	defer g.unlock()
	live, stale, err := g.runs()
	if err != nil {
		return err
	}
	for _, r := range stale {
		if err := teardownRun(r, sandboxIDs(r.Dir)); err != nil {
			return fmt.Errorf("cleaning up the run of a dead process in %s: %w", r.Dir, err)
		}
		if err := g.drop(r.ID); err != nil {
			return err
		}
	}
	if len(live) == 0 {
		ms, err := g.machine()
		if err != nil {
			return err
		}
		if ms != nil {
			if err := restoreMachine(*ms); err != nil {
				return fmt.Errorf("restoring what dead runs changed: %w", err)
			}
			// What those runs found is what this one finds too.
			outsideBefore = ms.Outside
		}
		sysctls, err := readSysctls()
		if err != nil {
			return err
		}
		b, err := json.Marshal(machineState{Sysctls: sysctls, Outside: outsideBefore})
		if err != nil {
			return err
		}
		if err := os.WriteFile(machinePath(), b, 0o600); err != nil {
			return fmt.Errorf("run registry: %w", err)
		}
	}
	return g.save(rec)
}

// update rewrites rec (once its bridge exists).
func update(rec runRecord) error {
	g, err := lockRegistry()
	if err != nil {
		return err
	}
	defer g.unlock()
	return g.save(rec)
}

// leave unregisters the run; the last one out restores the machine and
// removes StateDir.
func leave(id string) error {
	g, err := lockRegistry()
	if err != nil {
		return err
	}
	defer g.unlock()
	if err := g.drop(id); err != nil {
		return err
	}
	live, stale, err := g.runs()
	if err != nil {
		return err
	}
	if len(live) > 0 {
		return nil
	}
	var errs []error
	for _, r := range stale {
		if err := teardownRun(r, sandboxIDs(r.Dir)); err != nil {
			errs = append(errs, fmt.Errorf("cleaning up the run of a dead process in %s: %w", r.Dir, err))
		} else {
			errs = append(errs, g.drop(r.ID))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return err
	}
	ms, err := g.machine()
	if err != nil {
		return err
	}
	if ms != nil {
		if err := restoreMachine(*ms); err != nil {
			return err
		}
	}
	for _, p := range []string{machinePath(), filepath.Join(StateDir, "runs"), proxyLockPath(), filepath.Join(StateDir, "lock"), StateDir} {
		if err := os.Remove(p); err != nil && !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("removing %s: %w", p, err)
		}
	}
	return nil
}

// teardownRun undoes a run whose kubelet and containerd are gone (stopped,
// or killed with the test binary): what is left of its pods and shims, its
// mounts, cgroups and bridge, and what it left outside its directory.
func teardownRun(rec runRecord, sandboxes []string) error {
	var errs []error
	add := func(step string, err error) {
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", step, err))
		}
	}
	killCgroups(rec.CgroupRoot)
	add("killing leftover processes", killStragglers(rec.Dir))
	add("unmounting", unmountAll(rec.Dir))
	add("removing cgroups", removeCgroups(rec.CgroupRoot))
	if rec.Bridge != "" {
		add("removing the bridge", (&network{bridge: rec.Bridge, created: true}).remove())
	}
	add("cleaning up outside "+rec.Dir, cleanRunOutside(rec, sandboxes))
	if rec.KubeProxy != "" {
		add("removing kube-proxy's rules", cleanupDeadProxy(rec.KubeProxy))
	}
	return errors.Join(errs...)
}

func ownRecord(id, dir, cgroupRoot string, started time.Time) runRecord {
	pid := os.Getpid()
	return runRecord{ID: id, Owner: pid, OwnerStart: processStart(pid), Dir: dir, CgroupRoot: cgroupRoot, Started: started}
}

// LiveRuns is how many runs on this machine are alive now: while any is,
// the machine keeps the settings and paths the nodes need, and only the
// last run out restores them. It reads the registry without its lock,
// which would make StateDir when no run is left.
func LiveRuns() (int, error) {
	if _, err := os.Stat(filepath.Join(StateDir, "runs")); errors.Is(err, os.ErrNotExist) {
		return 0, nil
	}
	live, _, err := (&registry{}).runs()
	if errors.Is(err, os.ErrNotExist) {
		return 0, nil
	}
	return len(live), err
}
