package localkube

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Each runtime owns one block, marked with its base directory, so that two
// runtimes on one machine (a valkey-local and a test suite) keep their
// names side by side instead of overwriting each other.
const (
	hostsBegin = "# BEGIN valkey-local"
	hostsEnd   = "# END valkey-local"
	// hostsResync heals a block lost to another writer's concurrent
	// read-modify-write of the file.
	hostsResync = 2 * time.Second
)

// hostsWriter keeps a marked block in a hosts file in step with the
// resolver's names, so programs that do not go through DialContext
// (valkey-cli, openssl s_client) resolve pod and Service names too.
type hostsWriter struct {
	r      *Runtime
	path   string
	owner  string
	dirtyC chan struct{}
	stopC  chan struct{}
	done   chan struct{}
}

func (r *Runtime) startHostsWriter(path string) (*hostsWriter, error) {
	h := &hostsWriter{
		r:      r,
		path:   path,
		owner:  r.opts.BaseDir,
		dirtyC: make(chan struct{}, 1),
		stopC:  make(chan struct{}),
		done:   make(chan struct{}),
	}
	if err := h.sync(); err != nil {
		return nil, fmt.Errorf("writing %s: %w", path, err)
	}
	go h.loop()
	return h, nil
}

func (h *hostsWriter) dirty() {
	select {
	case h.dirtyC <- struct{}{}:
	default:
	}
}

func (h *hostsWriter) loop() {
	defer close(h.done)
	tick := time.NewTicker(hostsResync)
	defer tick.Stop()
	for {
		select {
		case <-h.stopC:
			return
		case <-tick.C:
		case <-h.dirtyC:
			// Let a burst of pod updates settle into one write.
			select {
			case <-h.stopC:
				return
			case <-time.After(100 * time.Millisecond):
			}
		}
		if err := h.sync(); err != nil {
			h.r.log.Error(err, "updating hosts file", "path", h.path)
		}
	}
}

func (h *hostsWriter) sync() error {
	return updateHostsFile(h.path, h.owner, renderHostsBlock(h.owner, os.Getpid(), h.r.Names()))
}

// stop ends the updates and removes the block.
func (h *hostsWriter) stop() error {
	close(h.stopC)
	<-h.done
	return updateHostsFile(h.path, h.owner, "")
}

// renderHostsBlock names the process that owns the block, so that a later
// writer can drop it once that process is gone.
func renderHostsBlock(owner string, pid int, names map[string][]string) string {
	var lines []string
	for name, addrs := range names {
		for _, a := range addrs {
			lines = append(lines, a+"\t"+name)
		}
	}
	sort.Strings(lines)
	return fmt.Sprintf("%s %s pid %d\n", hostsBegin, owner, pid) + strings.Join(append(lines, hostsEnd+" "+owner), "\n") + "\n"
}

// replaceHostsBlock drops owner's previous block from content, and the
// block of any owner whose process is no longer alive: a run that was
// killed never removes its own, and its names, listed first, would shadow
// the same names of every later run. It appends block (which may be empty).
func replaceHostsBlock(content, owner, block string, alive func(pid int) bool) string {
	var kept []string
	skipTo := ""
	for _, line := range strings.SplitAfter(content, "\n") {
		trimmed := strings.TrimSpace(line)
		if skipTo != "" {
			if trimmed == skipTo {
				skipTo = ""
			}
			continue
		}
		if o, pid, ok := parseHostsBegin(trimmed); ok && (o == owner || (pid > 0 && !alive(pid))) {
			skipTo = hostsEnd + " " + o
			continue
		}
		if line != "" {
			kept = append(kept, line)
		}
	}
	out := strings.Join(kept, "")
	if block != "" {
		if out != "" && !strings.HasSuffix(out, "\n") {
			out += "\n"
		}
		out += block
	}
	return out
}

// updateHostsFile rewrites path with owner's block replaced, through a
// rename so that no resolver reads a half-written file. Where the file is
// a bind mount (as in many containers) it cannot be renamed over, and it is
// rewritten in place instead.
func updateHostsFile(path, owner, block string) error {
	old, err := os.ReadFile(path)
	if err != nil && !os.IsNotExist(err) {
		return err
	}
	next := replaceHostsBlock(string(old), owner, block, processAlive)
	if next == string(old) {
		return nil
	}
	mode := os.FileMode(0o644)
	if st, err := os.Stat(path); err == nil {
		mode = st.Mode().Perm()
	}
	err = writeFileAtomic(path, []byte(next), mode)
	if err != nil && (errors.Is(err, syscall.EBUSY) || errors.Is(err, syscall.EXDEV)) {
		// Leftover temp files must not pile up next to the real file.
		matches, _ := filepath.Glob(filepath.Join(filepath.Dir(path), "."+filepath.Base(path)+".tmp-*"))
		for _, m := range matches {
			os.Remove(m)
		}
		return os.WriteFile(path, []byte(next), mode)
	}
	return err
}

// parseHostsBegin reads a block's first line: its owner and, when the
// line names one, the owning process.
func parseHostsBegin(line string) (owner string, pid int, ok bool) {
	rest, ok := strings.CutPrefix(line, hostsBegin+" ")
	if !ok {
		return "", 0, false
	}
	if i := strings.LastIndex(rest, " pid "); i >= 0 {
		if n, err := strconv.Atoi(rest[i+len(" pid "):]); err == nil {
			return rest[:i], n, true
		}
	}
	return rest, 0, true
}

// processAlive reports whether pid names a running process; a zombie is
// dead, only not yet reaped.
func processAlive(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	fields := strings.Fields(string(b[strings.LastIndex(string(b), ")")+1:]))
	return len(fields) > 0 && fields[0] != "Z"
}
