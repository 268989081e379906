package nodeimages

import (
	"archive/tar"
	"bytes"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// tree is the content of an image's single layer: paths inside the image
// (absolute, slash-separated) to what is there. Regular files copied from
// the build machine are read when the layer is written, so a tree is cheap
// to assemble.
type tree struct {
	entries map[string]*entry
}

type entry struct {
	typeflag byte
	mode     int64
	uid, gid int
	// src is the file a regular entry copies; data its content otherwise.
	src  string
	data []byte
	// link is a symlink's target, as written in the image.
	link string
}

func newTree() *tree { return &tree{entries: map[string]*entry{}} }

// put records e at p, creating missing parent directories (root-owned,
// 0755). Putting the same kind of entry twice keeps the last; replacing a
// directory by a file or the other way round is an error.
func (t *tree) put(p string, e *entry) error {
	p = path.Clean("/" + p)
	if p == "/" {
		return nil
	}
	if err := t.parents(p); err != nil {
		return err
	}
	if old, ok := t.entries[p]; ok && (old.typeflag == tar.TypeDir) != (e.typeflag == tar.TypeDir) {
		return fmt.Errorf("image path %s: both a directory and a file", p)
	}
	t.entries[p] = e
	return nil
}

func (t *tree) parents(p string) error {
	for dir := path.Dir(p); dir != "/"; dir = path.Dir(dir) {
		old, ok := t.entries[dir]
		switch {
		case !ok:
			t.entries[dir] = &entry{typeflag: tar.TypeDir, mode: 0o755}
		case old.typeflag != tar.TypeDir:
			return fmt.Errorf("image path %s: parent %s is not a directory", p, dir)
		}
	}
	return nil
}

// dir adds a directory owned by uid:gid.
func (t *tree) dir(p string, mode int64, uid, gid int) error {
	return t.put(p, &entry{typeflag: tar.TypeDir, mode: mode, uid: uid, gid: gid})
}

// file adds a root-owned regular file with the given content.
func (t *tree) file(p string, mode int64, data []byte) error {
	return t.put(p, &entry{typeflag: tar.TypeReg, mode: mode, data: data})
}

// copyFile adds a root-owned regular file copied from src, keeping its
// permission bits.
func (t *tree) copyFile(p, src string) error {
	st, err := os.Stat(src)
	if err != nil {
		return err
	}
	if !st.Mode().IsRegular() {
		return fmt.Errorf("%s: not a regular file", src)
	}
	return t.put(p, &entry{typeflag: tar.TypeReg, mode: int64(st.Mode().Perm()), src: src})
}

// symlink adds a symbolic link to target.
func (t *tree) symlink(p, target string) error {
	return t.put(p, &entry{typeflag: tar.TypeSymlink, mode: 0o777, link: target})
}

// maxLinks bounds symlink chains, as the kernel's ELOOP does.
const maxLinks = 40

// addFrom adds p as it is in the file system tree at root ("/" for this
// machine's): every directory on the way, every symlink met on the way
// (with its target, so an image path that is a link on the build machine
// is a link in the image too) and the regular file at the end. A
// directory at the end is added empty.
func (t *tree) addFrom(root, p string) error {
	return t.addFromDepth(root, p, 0)
}

func (t *tree) addFromDepth(root, p string, links int) error {
	if links > maxLinks {
		return fmt.Errorf("%s: too many levels of symbolic links", p)
	}
	p = path.Clean("/" + p)
	parts := strings.Split(strings.TrimPrefix(p, "/"), "/")
	cur := "/"
	for i, part := range parts {
		next := path.Join(cur, part)
		host := filepath.Join(root, filepath.FromSlash(next))
		st, err := os.Lstat(host)
		if err != nil {
			return err
		}
		last := i == len(parts)-1
		switch {
		case st.Mode()&fs.ModeSymlink != 0:
			target, err := os.Readlink(host)
			if err != nil {
				return err
			}
			if err := t.symlink(next, target); err != nil {
				return err
			}
			resolved := target
			if !path.IsAbs(target) {
				resolved = path.Join(cur, target)
			}
			return t.addFromDepth(root, path.Join(append([]string{resolved}, parts[i+1:]...)...), links+1)
		case st.IsDir():
			// A directory added already keeps its owner and mode.
			if _, ok := t.entries[next]; !ok {
				if err := t.dir(next, int64(st.Mode().Perm()), 0, 0); err != nil {
					return err
				}
			}
			cur = next
		case st.Mode().IsRegular() && last:
			return t.copyFile(next, host)
		default:
			return fmt.Errorf("%s: %s is neither a directory, a regular file nor a symlink", p, host)
		}
	}
	return nil
}

// epoch is every timestamp in the images: the Unix epoch, as in images
// built with SOURCE_DATE_EPOCH=0.
var epoch = time.Unix(0, 0).UTC()

// tar writes the tree as an uncompressed layer tar: sorted paths, parents
// first, no timestamps, numeric owners only, so that the same tree always
// gives the same bytes.
func (t *tree) tar(w io.Writer) error {
	names := make([]string, 0, len(t.entries))
	for p := range t.entries {
		names = append(names, p)
	}
	sort.Strings(names)
	tw := tar.NewWriter(w)
	for _, p := range names {
		e := t.entries[p]
		hdr := &tar.Header{
			Typeflag: e.typeflag,
			Name:     strings.TrimPrefix(p, "/"),
			Mode:     e.mode,
			Uid:      e.uid,
			Gid:      e.gid,
			ModTime:  epoch,
		}
		if err := writeEntry(tw, hdr, e); err != nil {
			return fmt.Errorf("%s: %w", p, err)
		}
	}
	return tw.Close()
}

func writeEntry(tw *tar.Writer, hdr *tar.Header, e *entry) error {
	var body io.Reader
	switch e.typeflag {
	case tar.TypeDir:
		hdr.Name += "/"
	case tar.TypeSymlink:
		hdr.Linkname = e.link
	case tar.TypeReg:
		if e.src != "" {
			f, err := os.Open(e.src)
			if err != nil {
				return err
			}
			defer f.Close()
			st, err := f.Stat()
			if err != nil {
				return err
			}
			hdr.Size = st.Size()
			body = f
		} else {
			hdr.Size = int64(len(e.data))
			body = bytes.NewReader(e.data)
		}
	}
	if err := tw.WriteHeader(hdr); err != nil {
		return err
	}
	if body == nil {
		return nil
	}
	if n, err := io.Copy(tw, body); err != nil {
		return err
	} else if n != hdr.Size {
		return fmt.Errorf("changed while being read")
	}
	return nil
}

// layer is the tree as a gzip-compressed OCI layer. The tar is built in
// memory once: the images are tens of megabytes.
func (t *tree) layer() (v1.Layer, error) {
	var buf bytes.Buffer
	if err := t.tar(&buf); err != nil {
		return nil, err
	}
	b := buf.Bytes()
	return tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(b)), nil
	}, tarball.WithMediaType(types.OCILayer), tarball.WithCompressedCaching)
}
