package render

import (
	"fmt"
	"slices"

	"github.com/gomomento/valkey-operator/internal/valkey"
)

// The operator's own Valkey users. They are rendered after every user
// binding so nothing earlier in the ACL file can shadow them, and they get
// no channel.
const (
	// OperatorUser is what the operator authenticates as on every node.
	OperatorUser = "_momento_operator"
	// ReplicationUser is what replicas authenticate to their primary as.
	ReplicationUser = "_momento_repl"
	// ExporterUser is what the metrics exporter authenticates as.
	ExporterUser = "_momento_exporter"
	// ACLCheckUser is a scratch user, never in the file: the ACL reloader
	// tries each user's rules on it before changing a node one user at a
	// time, so rules the node refuses change nothing.
	ACLCheckUser = "_momento_aclcheck"
)

// operatorGrants are exactly the commands the operator's code sends, one
// CLUSTER or ACL subcommand at a time, so that the operator's password
// cannot reset a node (CLUSTER RESET, FLUSHSLOTS) or read or write a
// value. CONFIG GET reads back the live settings to find drift; it also
// returns primaryauth, which gives a stolen operator password nothing it
// lacks: CONFIG SET can change any setting and MIGRATE copies any key to
// any host. A test
// extracts the commands from the code and fails on a command missing here
// and on a grant no code sends. PING is valkey-go's keep-alive. ACL LIST
// confirms a node runs the rendered file rather than an older one its
// mount still held. Then classic resharding: MIGRATE reads and deletes
// the keys on the source (~*) and authenticates on the target as this same
// user, where it sends SELECT and RESTORE-ASKING. RESTORE writes a
// restored backup's keys into a new cluster.
var operatorGrants = []string{
	"+cluster|nodes", "+cluster|info", "+cluster|meet", "+cluster|forget", "+cluster|addslotsrange",
	"+cluster|replicate", "+cluster|failover", "+cluster|setslot", "+cluster|getkeysinslot",
	"+info", "+ping", "+acl|load", "+acl|list", "+config|set", "+config|get",
	"~*", "+migrate", "+restore-asking", "+select", "+restore",
}

// atomicOperatorGrants start, follow and cancel atomic slot migrations: CLUSTER
// subcommands Valkey 8 does not have, so rendered like
// atomicMigrationGrants.
var atomicOperatorGrants = []string{"+cluster|migrateslots", "+cluster|getslotmigrations", "+cluster|cancelslotmigrations"}

// replicationGrants are what a replica sends its primary, and SYNC, with
// which a backup asks a node for its RDB file (REPLCONF rdb-only first) as
// valkey-cli --rdb does.
var replicationGrants = []string{"+psync", "+replconf", "+ping", "+sync"}

// exporterGrants are what redis_exporter reads on every scrape, and
// nothing that returns a key, a value or a credential: no key pattern, no
// CONFIG GET (it returns primaryauth in plaintext) and no SLOWLOG GET (its
// entries hold the slow commands' arguments, keys and values included).
// The exporter still sends SLOWLOG GET each scrape and is refused.
var exporterGrants = []string{"+info", "+cluster|info", "+latency|latest", "+slowlog|len"}

// aclPerUserGrants let the ACL reloader update, one user at a time, a
// replica whose Valkey release crashes on ACL LOAD; rendered only while a
// node of the cluster runs such a release.
var aclPerUserGrants = []string{"+acl|setuser", "+acl|deluser"}

// atomicMigrationGrants let a source node stream slots to a target on
// Valkey 9: CLUSTER MIGRATESLOTS connects to the target as the replication
// user (primaryuser) and, unlike replication, the target checks every
// command of the stream against that user's ACL: CLUSTER SYNCSLOTS, then
// SELECT and the writes that rebuild each key (the AOF rewrite of the
// slots: SET, RPUSH, the hash commands, SADD, ZADD, XADD and the stream
// group commands, PEXPIREAT), then the writes clients make to those keys
// meanwhile, which can be any keyed write; the source leaves keyless
// commands, MULTI and EXEC included, out of the stream. A command the
// target refuses closes the link and fails the migration; no write is
// skipped.
//
// -@dangerous and -function take away what a slot stream never carries
// and a stolen password should not do: FLUSHALL, FLUSHDB, SWAPDB, CLUSTER
// FLUSHSLOT, FUNCTION FLUSH and the like (whole-node destruction) and
// MIGRATE (which copies keys to any host). RESTORE and SORT are dangerous
// too, but a client's RESTORE or SORT ... STORE on a migrating key is
// streamed as sent, so they are given back. -@dangerous also covers PSYNC
// and REPLCONF, so these rules come before the replication grants.
//
// Valkey 8 rejects the whole ACL file when it names an unknown subcommand
// (and refuses to start), so these are rendered only when every node of
// the cluster runs 9.0 or later.
var atomicMigrationGrants = []string{"~*", "+@write", "-@dangerous", "-function", "+restore", "+sort", "+select", "+cluster|syncslots"}

const atomicMigrationMinimumMajor = 9

// systemGrantsFor the lowest Valkey version (MAJOR.MINOR.PATCH) any node
// of the cluster runs: the operator's and the replication user's grants.
func systemGrantsFor(version string) (operator, replication []string, err error) {
	v, err := valkey.ParseVersion(version)
	if err != nil {
		return nil, nil, fmt.Errorf("valkey version: %w", err)
	}
	operator, replication = slices.Clone(operatorGrants), slices.Clone(replicationGrants)
	if v.Major >= atomicMigrationMinimumMajor {
		operator = append(operator, atomicOperatorGrants...)
		replication = append(slices.Clone(atomicMigrationGrants), replication...)
	}
	if valkey.ACLLoadCrashesReplicas(v) {
		operator = append(operator, aclPerUserGrants...)
	}
	return operator, replication, nil
}

// DefaultUser is Valkey's built-in user, which every ACL file must define:
// left out, Valkey recreates it fully open.
const DefaultUser = "default"

// Lines for the default user when no binding is named default: open while
// the cluster has no binding at all (the documented behaviour), disabled as
// soon as it has one.
const (
	defaultUserOpen     = "user default on nopass ~* &* +@all"
	defaultUserDisabled = "user default off"
)
