package backup

import (
	"fmt"
	"path"
)

// ManifestName is the object written last: a backup without it is
// incomplete.
const ManifestName = "manifest.json"

// Base is the key prefix of one backup's objects:
// <prefix>/<namespace>/<cluster>/<backup>/, so that backups of different
// clusters and namespaces sharing a bucket never collide.
func Base(prefix, namespace, cluster, backup string) string {
	return path.Join(prefix, namespace, cluster, backup) + "/"
}

// ShardObject is the key of shard i's RDB file.
func ShardObject(base string, i int) string {
	return fmt.Sprintf("%sshard-%d.rdb", base, i)
}

// ManifestObject is the key of the manifest.
func ManifestObject(base string) string { return base + ManifestName }

// Location is the backup's address as status.path shows it.
func Location(bucket, base string) string { return "s3://" + bucket + "/" + base }
