package localkube

import (
	"errors"
	"fmt"
	"path/filepath"
	"syscall"
)

// kill is KillContainer: SIGKILL in place.
func (w *podWorker) kill(name string) error { return w.signal(name, syscall.SIGKILL) }

// signal sends sig to a container's process, for stalls (SIGSTOP, SIGCONT)
// and crashes (SIGKILL) that a test provokes.
func (w *podWorker) signal(name string, sig syscall.Signal) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, c := range w.ctrs {
		if c.spec.Name != name {
			continue
		}
		if c.proc == nil {
			return fmt.Errorf("container %s of pod %s/%s is not running", name, w.ns, w.name)
		}
		c.proc.signal(sig)
		return nil
	}
	return fmt.Errorf("pod %s/%s has no container %s", w.ns, w.name, name)
}

func (w *podWorker) hostPath(containerPath string) (string, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if !filepath.IsAbs(containerPath) {
		return "", fmt.Errorf("container path %q is not absolute", containerPath)
	}
	if p, ok := w.paths.resolve(containerPath); ok {
		return p, nil
	}
	return "", fmt.Errorf("%s is not under a volume mount of pod %s/%s", containerPath, w.ns, w.name)
}

func (w *podWorker) logPath(container string) (string, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, c := range w.ctrs {
		if c.spec.Name == container {
			if c.logFile == "" {
				return "", errors.New("container has not started")
			}
			return c.logFile, nil
		}
	}
	return "", fmt.Errorf("pod %s/%s has no container %s", w.ns, w.name, container)
}
