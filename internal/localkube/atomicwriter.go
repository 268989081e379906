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
	clean, err := cleanPayload(payload)
	if err != nil {
		return false, err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return false, err
	}
	oldTs, err := os.Readlink(filepath.Join(dir, dataDirName))
	if err != nil && !os.IsNotExist(err) {
		return false, err
	}
	var remove []string
	write := true
	if oldTs != "" {
		oldPath := filepath.Join(dir, oldTs)
		if remove, err = stalePaths(clean, oldPath); err != nil {
			return false, err
		}
		write = len(remove) > 0 || payloadDiffers(clean, oldPath)
	}
	if write {
		tsDir, err := writeVersionDir(dir, clean)
		if err != nil {
			return false, err
		}
		if err := swapDataLink(dir, tsDir); err != nil {
			return false, err
		}
	}
	if err := linkVisiblePaths(dir, clean); err != nil {
		return false, err
	}
	if err := removeStaleLinks(dir, remove); err != nil {
		return false, err
	}
	if write && oldTs != "" {
		if err := os.RemoveAll(filepath.Join(dir, oldTs)); err != nil {
			return false, err
		}
	}
	return write, nil
}

// cleanPayload rejects paths that could escape dir or clash with ..data,
// and normalises the rest so that "a//b" and "a/b" name one file.
func cleanPayload(payload map[string]fileProjection) (map[string]fileProjection, error) {
	clean := make(map[string]fileProjection, len(payload))
	for k, v := range payload {
		if err := validateProjectedPath(k); err != nil {
			return nil, err
		}
		clean[filepath.Clean(k)] = v
	}
	return clean, nil
}

// payloadDiffers reports whether any file of payload is missing from
// oldDir or differs from it in content or mode.
func payloadDiffers(payload map[string]fileProjection, oldDir string) bool {
	for k, v := range payload {
		cur, err := os.ReadFile(filepath.Join(oldDir, k))
		if err != nil || !bytes.Equal(cur, v.data) {
			return true
		}
		if st, err := os.Stat(filepath.Join(oldDir, k)); err != nil || st.Mode().Perm() != v.mode.Perm() {
			return true
		}
	}
	return false
}

// writeVersionDir writes payload into a fresh timestamped directory under
// dir, removing it again if any file fails.
func writeVersionDir(dir string, payload map[string]fileProjection) (string, error) {
	tsDir, err := os.MkdirTemp(dir, time.Now().UTC().Format("..2006_01_02_15_04_05."))
	if err != nil {
		return "", err
	}
	if err := os.Chmod(tsDir, 0o755); err != nil {
		return "", err
	}
	for k, v := range payload {
		if err := writeProjectedFile(filepath.Join(tsDir, k), v); err != nil {
			os.RemoveAll(tsDir)
			return "", err
		}
	}
	return tsDir, nil
}

// writeProjectedFile sets the mode explicitly too: WriteFile's is masked
// by the umask.
func writeProjectedFile(p string, v fileProjection) error {
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return err
	}
	if err := os.WriteFile(p, v.data, v.mode); err != nil {
		return err
	}
	return os.Chmod(p, v.mode)
}

// swapDataLink points ..data at tsDir in one rename, so readers switch
// from the old version to the new at once; on failure tsDir is removed.
func swapDataLink(dir, tsDir string) error {
	tmpLink := filepath.Join(dir, newDataDirName)
	_ = os.Remove(tmpLink)
	if err := os.Symlink(filepath.Base(tsDir), tmpLink); err != nil {
		os.RemoveAll(tsDir)
		return err
	}
	if err := os.Rename(tmpLink, filepath.Join(dir, dataDirName)); err != nil {
		os.Remove(tmpLink)
		os.RemoveAll(tsDir)
		return err
	}
	return nil
}

// linkVisiblePaths makes each top-level name of payload a link through
// ..data, leaving links already there alone.
func linkVisiblePaths(dir string, payload map[string]fileProjection) error {
	for k := range payload {
		top := strings.SplitN(k, string(os.PathSeparator), 2)[0]
		visible := filepath.Join(dir, top)
		if _, err := os.Readlink(visible); err != nil {
			if !os.IsNotExist(err) {
				return fmt.Errorf("%s exists and is not a projection link", visible)
			}
			if err := os.Symlink(filepath.Join(dataDirName, top), visible); err != nil {
				return err
			}
		}
	}
	return nil
}

// removeStaleLinks removes the top-level links of dropped paths; nested
// ones went with the old version's directory.
func removeStaleLinks(dir string, stale []string) error {
	for _, p := range stale {
		if !strings.Contains(p, string(os.PathSeparator)) {
			if err := os.Remove(filepath.Join(dir, p)); err != nil && !os.IsNotExist(err) {
				return err
			}
		}
	}
	return nil
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
