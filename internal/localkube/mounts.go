package localkube

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"
)

// mountsFile, in a pod's directory, maps the pod's mount paths to the
// directories standing in for them. The runtime answers HostPath from
// memory; the file lets a process of its own, such as an operator run
// apart from the runtime, answer the same question.
const mountsFile = "mounts.json"

// podDir is the directory standing in for a pod's filesystem. Names and
// namespaces hold no '_', so the three parts cannot run into each other.
func podDir(baseDir, namespace, name, uid string) string {
	return filepath.Join(baseDir, "pods", namespace+"_"+name+"_"+uid)
}

func writeMounts(podDir string, mounts map[string]string) error {
	if err := os.MkdirAll(podDir, 0o755); err != nil {
		return fmt.Errorf("creating pod directory: %w", err)
	}
	b, err := json.Marshal(mounts)
	if err != nil {
		return err
	}
	tmp := filepath.Join(podDir, mountsFile+".tmp")
	if err := os.WriteFile(tmp, b, 0o644); err != nil {
		return fmt.Errorf("writing %s: %w", mountsFile, err)
	}
	return os.Rename(tmp, filepath.Join(podDir, mountsFile))
}

// HostPathsUnder answers what Runtime.HostPath answers, for the runtime
// whose BaseDir is baseDir, from the files its pods leave there: a process
// apart from the runtime (an operator run on its own) maps a path inside a
// pod to the path the pod's processes use. When a pod of that name was
// recreated, the newest directory is the running one.
func HostPathsUnder(baseDir string) func(namespace, pod, containerPath string) (string, error) {
	return func(namespace, pod, containerPath string) (string, error) {
		if !filepath.IsAbs(containerPath) {
			return "", fmt.Errorf("container path %q is not absolute", containerPath)
		}
		dirs, err := filepath.Glob(filepath.Join(podDir(baseDir, namespace, pod, "*"), mountsFile))
		if err != nil {
			return "", err
		}
		var newest string
		var at time.Time
		for _, f := range dirs {
			st, err := os.Stat(f)
			if err != nil {
				continue
			}
			if newest == "" || st.ModTime().After(at) {
				newest, at = f, st.ModTime()
			}
		}
		if newest == "" {
			return "", fmt.Errorf("pod %s/%s has no directory under %s", namespace, pod, baseDir)
		}
		b, err := os.ReadFile(newest)
		if err != nil {
			return "", err
		}
		var mounts map[string]string
		if err := json.Unmarshal(b, &mounts); err != nil {
			return "", fmt.Errorf("reading %s: %w", newest, err)
		}
		if p, ok := newPathMap(mounts).resolve(containerPath); ok {
			return p, nil
		}
		return "", errors.New(containerPath + " is not under a volume mount of pod " + namespace + "/" + pod)
	}
}
