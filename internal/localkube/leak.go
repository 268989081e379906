package localkube

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// LeakedProcess is a live process that belongs to a runtime's directory.
type LeakedProcess struct {
	PID     int
	Cwd     string
	Cmdline string
}

func (p LeakedProcess) String() string {
	return fmt.Sprintf("pid %d cwd=%s cmd=%q", p.PID, p.Cwd, p.Cmdline)
}

// LeakedProcesses lists the processes on this machine whose working
// directory or command line starts with prefix (a runtime's base dir, or
// Runtime.PodDirPrefix for one namespace). Pods run with their pod directory
// as working directory, so this finds every container process, even ones
// that escaped the registry.
func LeakedProcesses(prefix string) ([]LeakedProcess, error) {
	if prefix == "" || prefix == "/" {
		return nil, fmt.Errorf("refusing to match every process with prefix %q", prefix)
	}
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil, err
	}
	self := os.Getpid()
	var found []LeakedProcess
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == self {
			continue
		}
		dir := filepath.Join("/proc", e.Name())
		cwd, _ := os.Readlink(filepath.Join(dir, "cwd"))
		raw, _ := os.ReadFile(filepath.Join(dir, "cmdline"))
		cmdline := strings.TrimSpace(strings.ReplaceAll(string(raw), "\x00", " "))
		if strings.HasPrefix(cwd, prefix) || strings.Contains(cmdline, prefix) {
			found = append(found, LeakedProcess{PID: pid, Cwd: cwd, Cmdline: cmdline})
		}
	}
	return found, nil
}

// TB is the part of testing.TB the assertion needs.
type TB interface {
	Helper()
	Errorf(format string, args ...any)
}

// AssertNoLeakedProcesses fails t if any process under prefix is still alive
// a few seconds from now (killed processes take a moment to be reaped).
func AssertNoLeakedProcesses(t TB, prefix string) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		leaked, err := LeakedProcesses(prefix)
		if err != nil {
			t.Errorf("listing processes: %v", err)
			return
		}
		if len(leaked) == 0 {
			return
		}
		if time.Now().After(deadline) {
			var b strings.Builder
			for _, p := range leaked {
				b.WriteString("\n  " + p.String())
			}
			t.Errorf("%d process(es) under %s leaked:%s", len(leaked), prefix, b.String())
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
}
