package render

import (
	"maps"
	"strconv"
	"strings"

	"github.com/gomomento/valkey-operator/api/v1alpha1"
	"github.com/gomomento/valkey-operator/internal/valkey"
)

// setting is one directive of the forced table.
type setting struct{ key, value string }

// forcedAlways are the directives every node runs with, whatever the config
// says. bind is deliberately absent: the container passes --bind $(POD_IP)
// because the local test runtime gives every pod its own loopback address on
// one shared host network, where a wildcard bind would collide; binding the
// pod IP is equally right in a real pod. The replication password is not a
// directive here either: valkey.conf includes it from a Secret mount.
var forcedAlways = []setting{
	{"cluster-enabled", "yes"},
	{"cluster-node-timeout", "5000"},
	{"cluster-config-file", nodesConfFile},
	{"dir", dataDir},
	{"port", strconv.Itoa(int(PortValkey))},
	{"protected-mode", "no"},
	{"aclfile", aclFilePath},
	{"primaryuser", ReplicationUser},
	// Without persistence data lives on an emptyDir and is gone with the
	// pod, so a snapshot saves nothing, while its fork can double the
	// memory of a node near its limit and get it OOM-killed. With it, the
	// append-only file is the one copy on disk: a snapshot would only be a
	// second, older one.
	{"save", ""},
}

// forcedPersistence are applied after forcedAlways on a node that keeps its
// data on a volume: every write goes to the append-only file in dir, which
// is the volume, next to nodes.conf.
func forcedPersistence(p *v1alpha1.NodePersistence) []setting {
	if p == nil {
		return nil
	}
	mode := p.Appendfsync
	if mode == "" {
		mode = v1alpha1.AppendFsyncEverysec
	}
	return []setting{
		{"appendonly", "yes"},
		{"appendfsync", string(mode)},
	}
}

// defaults are directives a node gets when no config in the chain sets
// them; unlike the forced ones, the user's value wins.
var defaults = []setting{
	// A primary delays a diskless full sync this long (5 s by Valkey's
	// default) so that one fork serves every replica that asks meanwhile.
	// The operator attaches a shard's replicas in one wave, milliseconds
	// apart, so a second is enough to batch them, and the other four only
	// delayed every new replica: in a bootstrap, a replacement, a roll.
	{"repl-diskless-sync-delay", "1"},
}

// forcedTLS are applied after forcedAlways in TLS mode (port 0 closes the
// plaintext listener). The per-node cluster-announce-hostname is added when
// the node's ConfigMap is rendered, see nodeSettings.
var forcedTLS = []setting{
	{"port", "0"},
	{"tls-port", strconv.Itoa(int(PortValkey))},
	{"tls-cluster", "yes"},
	{"tls-replication", "yes"},
	{"tls-cert-file", TLSCertFile},
	{"tls-key-file", TLSKeyFile},
	{"tls-ca-cert-file", TLSCAFile},
	{"tls-auth-clients", "no"},
	{"cluster-preferred-endpoint-type", "hostname"},
}

// keyAnnounceHostname is forced per node in TLS mode.
const keyAnnounceHostname = "cluster-announce-hostname"

// settings applies the cluster-wide forced settings over the merged user
// map and returns a new map, the value recorded in ValkeyNode.spec.valkeySettings.
// Valkey directive names are case-insensitive, so a user key differing from
// a forced one only in case is dropped rather than left to compete with it.
func settings(user map[string]string, tls bool, p *v1alpha1.NodePersistence) (map[string]string, error) {
	if err := validateSettings(user); err != nil {
		return nil, err
	}
	out := maps.Clone(user)
	if out == nil {
		out = map[string]string{}
	}
	apply(out, forcedAlways)
	apply(out, forcedPersistence(p))
	if tls {
		apply(out, forcedTLS)
	}
	return out, nil
}

func apply(into map[string]string, forced []setting) {
	for _, s := range forced {
		override(into, s.key, s.value)
	}
}

func override(into map[string]string, key, value string) {
	for k := range into {
		if k != key && strings.EqualFold(k, key) {
			delete(into, k)
		}
	}
	into[key] = value
}

// keyShutdownOnSigterm decides what a node does with SIGTERM, which is how
// every planned disruption reaches it (pod deletion, eviction, drain). The
// operator hands a stopping primary's role over while the pod's preStop
// hold keeps it serving (see preStopHoldSeconds); this is the backstop for
// when the operator cannot: with "failover" a primary pauses writes, waits
// for its most caught-up replica and sends it CLUSTER FAILOVER before
// exiting. It is the second choice because the primary exits without
// waiting for the switch (a moment in which clients fail, and in a
// one-shard cluster an election with no other primary to vote, which never
// completes). Valkey accepts the flag from 9.0; 8.x refuses to start with it.
const keyShutdownOnSigterm = "shutdown-on-sigterm"

// sigtermFailoverVersion is the first release with shutdown-on-sigterm failover.
var sigtermFailoverVersion = valkey.Version{Major: 9}

// withSigtermFailover forces shutdown-on-sigterm failover on versions that
// support it. version is the ValkeyImage's declared version; one that does
// not parse gets nothing, as if it predated the flag, since an unknown
// directive would stop the server from starting.
func withSigtermFailover(settings map[string]string, version string) {
	v, err := valkey.ParseVersion(version)
	if err != nil || !v.AtLeast(sigtermFailoverVersion) {
		return
	}
	override(settings, keyShutdownOnSigterm, "failover")
}
