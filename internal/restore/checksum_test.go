package restore

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io"
	"testing"
	"testing/iotest"
)

func TestVerified(t *testing.T) {
	file := bytes.Repeat([]byte("valkey"), 1000)
	sum := sha256.Sum256(file)
	good := hex.EncodeToString(sum[:])
	corrupt := bytes.Clone(file)
	corrupt[len(corrupt)-1] ^= 1
	for _, tc := range []struct {
		name string
		body []byte
		size int64
		ok   bool
	}{
		{"whole", file, int64(len(file)), true},
		{"last byte flipped", corrupt, int64(len(file)), false},
		{"short", file[:len(file)-10], int64(len(file)), false},
		{"long", append(bytes.Clone(file), 'x'), int64(len(file)), false},
	} {
		for _, oneByte := range []bool{false, true} {
			var r io.Reader = bytes.NewReader(tc.body)
			if oneByte {
				r = iotest.OneByteReader(r)
			}
			got, err := io.ReadAll(Verified(r, tc.size, good))
			if tc.ok && (err != nil || !bytes.Equal(got, file)) {
				t.Errorf("%s: %d bytes, %v; want the file", tc.name, len(got), err)
			}
			if !tc.ok {
				if !errors.Is(err, ErrCorrupt) {
					t.Errorf("%s: error %v, want ErrCorrupt", tc.name, err)
				}
				if int64(len(got)) >= tc.size && tc.name != "long" {
					t.Errorf("%s: handed over %d bytes, a whole file", tc.name, len(got))
				}
			}
		}
	}
}
