package render

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// The operator's own Valkey users. Their names and grants are the documented
// ones, byte for byte; they are rendered after every user binding so nothing
// earlier in the ACL file can shadow them, and they get no key or channel.
const (
	// OperatorUser is what the operator authenticates as on every node.
	OperatorUser = "_momento_operator"
	// ReplicationUser is what replicas authenticate to their primary as.
	ReplicationUser = "_momento_repl"
)

var (
	operatorGrants    = []string{"+cluster", "+acl|load", "+ping", "+info", "+config|set"}
	replicationGrants = []string{"+psync", "+replconf", "+ping"}
)

// syncSlotsGrant lets replicas follow atomic slot migration. CLUSTER
// SYNCSLOTS exists from Valkey 9.0 on; Valkey 8 rejects the whole ACL file
// when it names an unknown subcommand (and refuses to start), so the grant
// is rendered only when every node of the cluster runs 9.0 or later.
const (
	syncSlotsGrant        = "+cluster|syncslots"
	syncSlotsMinimumMajor = 9
)

// replicationGrantsFor the lowest Valkey version (MAJOR.MINOR.PATCH) any
// node of the cluster runs.
func replicationGrantsFor(version string) ([]string, error) {
	majorText, _, _ := strings.Cut(version, ".")
	major, err := strconv.Atoi(majorText)
	if err != nil {
		return nil, fmt.Errorf("valkey version %q: not MAJOR.MINOR.PATCH", version)
	}
	grants := slices.Clone(replicationGrants)
	if major >= syncSlotsMinimumMajor {
		grants = append(grants, syncSlotsGrant)
	}
	return grants, nil
}

// defaultUser is Valkey's built-in user, which every ACL file must define:
// left out, Valkey recreates it fully open.
const defaultUser = "default"

// Lines for the default user when no binding is named default: open while
// the cluster has no binding at all (the documented behaviour), disabled as
// soon as it has one.
const (
	defaultUserOpen     = "user default on nopass ~* &* +@all"
	defaultUserDisabled = "user default off"
)
