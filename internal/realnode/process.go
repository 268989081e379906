package realnode

import (
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"sync"
	"syscall"
	"time"
)

// Pdeathsig fires when the thread that forked the child exits, not the
// process; every child is forked from one goroutine locked to a thread that
// never exits, so a test binary killed by its timeout takes kubelet and
// containerd with it.
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

// daemon is kubelet or containerd, run in its own process group with its
// output in a log file.
type daemon struct {
	name string
	log  string
	cmd  *exec.Cmd
	done chan struct{}
	err  error // valid once done is closed
}

func startDaemon(name, logPath, dir string, bin string, args ...string) (*daemon, error) {
	logFile, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("starting %s: %w", name, err)
	}
	defer logFile.Close()
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	cmd.Dir = dir
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := spawn(cmd); err != nil {
		return nil, fmt.Errorf("starting %s: %w", name, err)
	}
	d := &daemon{name: name, log: logPath, cmd: cmd, done: make(chan struct{})}
	go func() {
		d.err = cmd.Wait()
		close(d.done)
	}()
	return d, nil
}

func (d *daemon) exited() bool {
	select {
	case <-d.done:
		return true
	default:
		return false
	}
}

func (d *daemon) pid() int { return d.cmd.Process.Pid }

// stop sends SIGTERM to the group, SIGKILL after grace, and waits.
func (d *daemon) stop(grace time.Duration) {
	if d == nil {
		return
	}
	if !d.exited() {
		_ = syscall.Kill(-d.pid(), syscall.SIGTERM)
	}
	select {
	case <-d.done:
	case <-time.After(grace):
		_ = syscall.Kill(-d.pid(), syscall.SIGKILL)
		<-d.done
	}
}
