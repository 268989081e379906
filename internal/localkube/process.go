package localkube

import (
	"errors"
	"os"
	"os/exec"
	"runtime"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// Pdeathsig fires when the *thread* that forked the child exits, not when the
// process does. Go may retire threads, so every child is forked from one
// goroutine locked to a thread that never exits.
var (
	spawnOnce sync.Once
	spawnCh   chan spawnRequest
)

type spawnRequest struct {
	cmd  *exec.Cmd
	done chan error
}

func spawn(cmd *exec.Cmd) error {
	spawnOnce.Do(func() {
		spawnCh = make(chan spawnRequest)
		go func() {
			runtime.LockOSThread()
			for req := range spawnCh {
				req.done <- req.cmd.Start()
			}
		}()
	})
	req := spawnRequest{cmd: cmd, done: make(chan error, 1)}
	spawnCh <- req
	return <-req.done
}

// process is one started program: the leader of its own process group.
type process struct {
	cmd  *exec.Cmd
	pid  int
	done chan struct{}

	// valid once done is closed
	exitCode int
	signaled bool
	finished time.Time
}

// processes is the registry of everything a runtime or control plane started,
// so that Stop can kill every group and wait for it.
type processes struct {
	mu     sync.Mutex
	procs  map[int]*process
	closed bool
	wg     sync.WaitGroup
}

func newProcesses() *processes {
	return &processes{procs: map[int]*process{}}
}

var errStopped = errors.New("runtime stopped")

// start runs cmd in its own process group, with SIGKILL delivered should this
// process die first. Stdout and Stderr must be files (or nil): a pipe would
// make Wait hang on any grandchild that keeps it open.
func (ps *processes) start(cmd *exec.Cmd) (*process, error) {
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Setpgid = true
	cmd.SysProcAttr.Pdeathsig = syscall.SIGKILL
	ps.mu.Lock()
	if ps.closed {
		ps.mu.Unlock()
		return nil, errStopped
	}
	// Hold the lock across the fork so killAll cannot miss a process
	// that is starting.
	if err := spawn(cmd); err != nil {
		ps.mu.Unlock()
		return nil, err
	}
	p := &process{cmd: cmd, pid: cmd.Process.Pid, done: make(chan struct{})}
	ps.procs[p.pid] = p
	ps.wg.Add(1)
	ps.mu.Unlock()
	go ps.wait(p)
	return p, nil
}

func (ps *processes) wait(p *process) {
	defer ps.wg.Done()
	// Wait without reaping first: while the leader is a zombie its pid, and so
	// the group id, cannot be reused, so killing the group here only reaches
	// what the container left behind. A container's processes die with it,
	// as they do when a real container's PID namespace goes away.
	var info unix.Siginfo
	for {
		err := unix.Waitid(unix.P_PID, p.pid, &info, unix.WEXITED|unix.WNOWAIT, nil)
		if err != unix.EINTR {
			break
		}
	}
	_ = syscall.Kill(-p.pid, syscall.SIGKILL)
	_ = p.cmd.Wait()
	if st := p.cmd.ProcessState; st != nil {
		if ws, ok := st.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			p.signaled = true
			p.exitCode = 128 + int(ws.Signal())
		} else {
			p.exitCode = st.ExitCode()
		}
	} else {
		p.exitCode = -1
	}
	p.finished = time.Now()
	ps.mu.Lock()
	delete(ps.procs, p.pid)
	ps.mu.Unlock()
	close(p.done)
}

// signal sends sig to the whole group unless the process has been reaped.
func (p *process) signal(sig syscall.Signal) {
	select {
	case <-p.done:
	default:
		_ = syscall.Kill(-p.pid, sig)
	}
}

func (p *process) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// stop sends SIGTERM, then SIGKILL once grace has passed, and waits.
// stopAfter runs a preStop hold, then stop with what is left of the grace
// period. As in the kubelet, the hold counts against the grace period and a
// hold that uses it all up still leaves the process a short SIGTERM window.
func (p *process) stopAfter(hold, grace time.Duration) {
	if hold > 0 && grace > 0 {
		hold = min(hold, grace)
		t := time.NewTimer(hold)
		select {
		case <-p.done:
			t.Stop()
			return
		case <-t.C:
		}
		grace = max(grace-hold, preStopOverrun)
	}
	p.stop(grace)
}

// preStopOverrun is the kubelet's one-off extension for a container whose
// preStop hook ran out the grace period.
const preStopOverrun = 2 * time.Second

func (p *process) stop(grace time.Duration) {
	if grace <= 0 {
		p.signal(syscall.SIGKILL)
		<-p.done
		return
	}
	p.signal(syscall.SIGTERM)
	t := time.NewTimer(grace)
	defer t.Stop()
	select {
	case <-p.done:
	case <-t.C:
		p.signal(syscall.SIGKILL)
		<-p.done
	}
}

// killAll refuses new processes, kills every group and waits for all of them.
func (ps *processes) killAll() {
	ps.mu.Lock()
	ps.closed = true
	for _, p := range ps.procs {
		_ = syscall.Kill(-p.pid, syscall.SIGKILL)
	}
	ps.mu.Unlock()
	ps.wg.Wait()
}

// openLog opens (appending) a file for a process's output.
func openLog(path string) (*os.File, error) {
	return os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
}
