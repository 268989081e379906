// Package procscan finds the live processes that belong to a directory: the
// local runtime uses it to reach processes another library started for it,
// and its tests to prove that nothing it started outlives it.
package procscan

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// Process is a live process that belongs to a runtime's directory.
type Process struct {
	PID     int
	Cwd     string
	Cmdline string
}

func (p Process) String() string {
	return fmt.Sprintf("pid %d cwd=%s cmd=%q", p.PID, p.Cwd, p.Cmdline)
}

// Under lists the processes on this machine whose working directory or
// command line starts with prefix (a runtime's base dir, or
// Runtime.PodDirPrefix for one namespace). Pods run with their pod directory
// as working directory, so this finds every container process, even ones
// that escaped the registry.
func Under(prefix string) ([]Process, error) {
	if prefix == "" || prefix == "/" {
		return nil, fmt.Errorf("refusing to match every process with prefix %q", prefix)
	}
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil, err
	}
	self := os.Getpid()
	var found []Process
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
			found = append(found, Process{PID: pid, Cwd: cwd, Cmdline: cmdline})
		}
	}
	return found, nil
}
