package restore

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
)

// ErrCorrupt is a file whose bytes are not the ones the manifest recorded.
var ErrCorrupt = errors.New("the file does not match the manifest")

// Verified passes r through and, instead of its end, returns ErrCorrupt
// when what came through is not size bytes with the SHA-256 sum: a loader
// fed this never sees a whole file that is not the backup's.
func Verified(r io.Reader, size int64, sum string) io.Reader {
	return &verified{r: r, size: size, sum: sum, h: sha256.New()}
}

type verified struct {
	r    io.Reader
	size int64
	seen int64
	sum  string
	h    hash.Hash
}

func (v *verified) Read(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	left := v.size - v.seen
	if left <= 0 {
		n, err := v.r.Read(p[:1])
		if n > 0 {
			return 0, fmt.Errorf("%w: longer than the %d bytes recorded", ErrCorrupt, v.size)
		}
		return 0, err
	}
	// The last byte is read on its own, and handed over only once the
	// whole file's sum is known to match: a reader never gets a whole
	// file that is not the backup's.
	switch {
	case left == 1:
		p = p[:1]
	case int64(len(p)) >= left:
		p = p[:left-1]
	}
	n, err := v.r.Read(p)
	v.h.Write(p[:n])
	v.seen += int64(n)
	if v.seen == v.size {
		if got := hex.EncodeToString(v.h.Sum(nil)); got != v.sum {
			return 0, fmt.Errorf("%w: SHA-256 %s, recorded %s", ErrCorrupt, got, v.sum)
		}
	}
	if errors.Is(err, io.EOF) && v.seen < v.size {
		return n, fmt.Errorf("%w: %d of the %d bytes recorded", ErrCorrupt, v.seen, v.size)
	}
	return n, err
}
