package valkey

import (
	"fmt"
	"strconv"
	"strings"
)

// Version is a MAJOR.MINOR.PATCH server version.
type Version struct {
	Major, Minor, Patch int
}

// ParseVersion parses "MAJOR.MINOR.PATCH". All three parts are required,
// matching how ValkeyImage versions are written.
func ParseVersion(s string) (Version, error) {
	parts := strings.Split(strings.TrimSpace(s), ".")
	if len(parts) != 3 {
		return Version{}, fmt.Errorf("parsing version %q: want MAJOR.MINOR.PATCH", s)
	}
	var nums [3]int
	for i, p := range parts {
		n, err := strconv.Atoi(p)
		if err != nil || n < 0 {
			return Version{}, fmt.Errorf("parsing version %q: part %q is not a non-negative integer", s, p)
		}
		nums[i] = n
	}
	return Version{Major: nums[0], Minor: nums[1], Patch: nums[2]}, nil
}

func (v Version) String() string {
	return fmt.Sprintf("%d.%d.%d", v.Major, v.Minor, v.Patch)
}

// Compare returns -1, 0 or +1 as v is older than, equal to or newer than o.
func (v Version) Compare(o Version) int {
	for _, d := range [...]int{v.Major - o.Major, v.Minor - o.Minor, v.Patch - o.Patch} {
		if d < 0 {
			return -1
		}
		if d > 0 {
			return 1
		}
	}
	return 0
}

// AtLeast reports whether v is o or newer.
func (v Version) AtLeast(o Version) bool { return v.Compare(o) >= 0 }

// atomicSlotMigrationVersion is the first release with CLUSTER MIGRATESLOTS.
var atomicSlotMigrationVersion = Version{Major: 9}

// aclLoadFixed is the first Valkey 8 release whose replicas survive ACL
// LOAD: from 8.0.0 up to 8.0.2 the command dereferences the user of the
// replication link's client, which has none, and the replica crashes
// (valkey-io/valkey#1832, fixed in 8.0.3 by #1842). Later majors have the
// fix; earlier ones are not supported.
var aclLoadFixed = Version{Major: 8, Minor: 0, Patch: 3}

// ACLLoadFixedVersion is the release that made ACL LOAD safe on replicas.
func ACLLoadFixedVersion() Version { return aclLoadFixed }

// ACLLoadCrashesReplicas reports whether a replica running v crashes on ACL
// LOAD. ACL SETUSER and ACL DELUSER are safe on the same replicas.
func ACLLoadCrashesReplicas(v Version) bool {
	return v.Major == 8 && v.Minor == 0 && !v.AtLeast(aclLoadFixed)
}
