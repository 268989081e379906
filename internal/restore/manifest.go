package restore

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"github.com/gomomento/valkey-operator/internal/backup"
	"github.com/gomomento/valkey-operator/internal/slotrange"
	"github.com/gomomento/valkey-operator/internal/valkey"
)

// ParseManifest reads a backup's manifest and refuses one a restore cannot
// trust: a format this operator does not know, a shard without its file,
// size or checksum, or shards that do not serve every slot exactly once.
func ParseManifest(body []byte) (backup.Manifest, error) {
	var m backup.Manifest
	if err := json.Unmarshal(body, &m); err != nil {
		return m, fmt.Errorf("the manifest is not valid JSON: %w", err)
	}
	if m.Version != backup.ManifestVersion {
		return m, fmt.Errorf("manifest format %d; this operator reads format %d", m.Version, backup.ManifestVersion)
	}
	if len(m.Shards) == 0 {
		return m, fmt.Errorf("the manifest lists no shard")
	}
	var served [slotrange.Max + 1]int
	for i, s := range m.Shards {
		if s.Index != i {
			return m, fmt.Errorf("manifest shard at position %d has index %d", i, s.Index)
		}
		if s.Object == "" || s.Bytes <= 0 || len(s.SHA256) != 64 {
			return m, fmt.Errorf("manifest shard %d lacks its object, size or checksum", i)
		}
		if _, err := valkey.ParseVersion(s.ValkeyVersion); err != nil {
			return m, fmt.Errorf("manifest shard %d: %w", i, err)
		}
		for _, text := range s.Slots {
			r, err := parseRange(text)
			if err != nil {
				return m, fmt.Errorf("manifest shard %d: %w", i, err)
			}
			for slot := r.Start; slot <= r.End; slot++ {
				served[slot]++
			}
		}
	}
	for slot, n := range served {
		if n != 1 {
			return m, fmt.Errorf("slot %d is served by %d of the manifest's shards, not exactly one", slot, n)
		}
	}
	return m, nil
}

// parseRange reads "a-b" (or a single slot "a").
func parseRange(s string) (slotrange.Range, error) {
	a, b, found := strings.Cut(s, "-")
	if !found {
		b = a
	}
	start, err1 := strconv.Atoi(a)
	end, err2 := strconv.Atoi(b)
	r := slotrange.Range{Start: start, End: end}
	if err1 != nil || err2 != nil {
		return r, fmt.Errorf("slot range %q is not START-END", s)
	}
	if err := r.Validate(); err != nil {
		return r, fmt.Errorf("slot range %q: %w", s, err)
	}
	return r, nil
}

// CanLoad says whether a server of version loader reads a file written by
// version written: RDB files are read by the same or a later Valkey, not
// by an earlier one.
func CanLoad(loader, written string) error {
	l, err := valkey.ParseVersion(loader)
	if err != nil {
		return err
	}
	w, err := valkey.ParseVersion(written)
	if err != nil {
		return err
	}
	if l.Major < w.Major || (l.Major == w.Major && l.Minor < w.Minor) {
		return fmt.Errorf("the backup was written by Valkey %s; this cluster runs %s, which cannot read its files: restore into a cluster of Valkey %d.%d or later", w, l, w.Major, w.Minor)
	}
	return nil
}

// Base is the key prefix of a backup's objects, given as a ValkeyBackup's
// status.path ("s3://bucket/base/") or as a path in the bucket.
func Base(bucket, location string) (string, error) {
	base := strings.TrimPrefix(location, "s3://"+bucket+"/")
	if strings.HasPrefix(base, "s3://") {
		return "", fmt.Errorf("backup path %s is not in bucket %s", location, bucket)
	}
	base = strings.Trim(base, "/")
	if base == "" {
		return "", fmt.Errorf("backup path %q names no folder", location)
	}
	return base + "/", nil
}
