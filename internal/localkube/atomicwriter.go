package localkube

import (
	"bytes"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// fileProjection is one file of a projected volume.
type fileProjection struct {
	data []byte
	mode os.FileMode
}

const (
	dataDirName    = "..data"
	newDataDirName = "..data_tmp"
)

// writeAtomic projects payload into dir with the kubelet's layout, so that a
// reader sees either the old or the new set of files, never a mix:
//
//	dir/..2026_01_02_15_04_05.123456789/   the real files of one version
//	dir/..data -> ..2026_01_02_15_04_05.123456789
//	dir/key    -> ..data/key                (one per top-level name)
//
// A new version is written to a fresh timestamped directory, then ..data is
// swapped to it by renaming a temporary symlink over it (rename is atomic),
// then the old directory is removed. It returns whether anything changed.
func writeAtomic(dir string, payload map[string]fileProjection) (bool, error) {
	clean := make(map[string]fileProjection, len(payload))
	for k, v := range payload {
		if err := validateProjectedPath(k); err != nil {
			return false, err
		}
		clean[filepath.Clean(k)] = v
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return false, err
	}
	dataDir := filepath.Join(dir, dataDirName)
	oldTs, err := os.Readlink(dataDir)
	if err != nil && !os.IsNotExist(err) {
		return false, err
	}
	var remove []string
	write := true
	if oldTs != "" {
		oldPath := filepath.Join(dir, oldTs)
		remove, err = stalePaths(clean, oldPath)
		if err != nil {
			return false, err
		}
		changed := len(remove) > 0
		for k, v := range clean {
			if changed {
				break
			}
			cur, err := os.ReadFile(filepath.Join(oldPath, k))
			if err != nil || !bytes.Equal(cur, v.data) {
				changed = true
				break
			}
			if st, err := os.Stat(filepath.Join(oldPath, k)); err != nil || st.Mode().Perm() != v.mode.Perm() {
				changed = true
			}
		}
		write = changed
	}
	if write {
		tsDir, err := os.MkdirTemp(dir, time.Now().UTC().Format("..2006_01_02_15_04_05."))
		if err != nil {
			return false, err
		}
		if err := os.Chmod(tsDir, 0o755); err != nil {
			return false, err
		}
		for k, v := range clean {
			p := filepath.Join(tsDir, k)
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				os.RemoveAll(tsDir)
				return false, err
			}
			if err := os.WriteFile(p, v.data, v.mode); err != nil {
				os.RemoveAll(tsDir)
				return false, err
			}
			if err := os.Chmod(p, v.mode); err != nil {
				os.RemoveAll(tsDir)
				return false, err
			}
		}
		tmpLink := filepath.Join(dir, newDataDirName)
		_ = os.Remove(tmpLink)
		if err := os.Symlink(filepath.Base(tsDir), tmpLink); err != nil {
			os.RemoveAll(tsDir)
			return false, err
		}
		if err := os.Rename(tmpLink, dataDir); err != nil {
			os.Remove(tmpLink)
			os.RemoveAll(tsDir)
			return false, err
		}
	}
	for k := range clean {
		top := strings.SplitN(k, string(os.PathSeparator), 2)[0]
		visible := filepath.Join(dir, top)
		if _, err := os.Readlink(visible); err != nil {
			if !os.IsNotExist(err) {
				return false, fmt.Errorf("%s exists and is not a projection link", visible)
			}
			if err := os.Symlink(filepath.Join(dataDirName, top), visible); err != nil {
				return false, err
			}
		}
	}
	for _, p := range remove {
		if !strings.Contains(p, string(os.PathSeparator)) {
			if err := os.Remove(filepath.Join(dir, p)); err != nil && !os.IsNotExist(err) {
				return false, err
			}
		}
	}
	if write && oldTs != "" {
		if err := os.RemoveAll(filepath.Join(dir, oldTs)); err != nil {
			return false, err
		}
	}
	return write, nil
}

// stalePaths lists paths of the old version that the new payload drops.
func stalePaths(payload map[string]fileProjection, oldDir string) ([]string, error) {
	keep := map[string]bool{}
	for k := range payload {
		for p := k; p != "." && p != ""; p = filepath.Dir(p) {
			keep[p] = true
		}
	}
	var stale []string
	err := filepath.WalkDir(oldDir, func(p string, _ fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(oldDir, p)
		if rel != "." && !keep[rel] {
			stale = append(stale, rel)
		}
		return nil
	})
	if os.IsNotExist(err) {
		return nil, nil
	}
	return stale, err
}

func validateProjectedPath(p string) error {
	if p == "" || filepath.IsAbs(p) {
		return fmt.Errorf("invalid projected path %q", p)
	}
	parts := strings.Split(p, string(os.PathSeparator))
	for _, item := range parts {
		if item == ".." {
			return fmt.Errorf("invalid projected path %q: contains '..'", p)
		}
	}
	if strings.HasPrefix(parts[0], "..") {
		return fmt.Errorf("invalid projected path %q: starts with '..'", p)
	}
	return nil
}
