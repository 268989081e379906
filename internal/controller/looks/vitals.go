package looks

import (
	"net"
	"strconv"

	"github.com/gomomento/valkey-operator/internal/valkey"
)

// vitals are what of a node's INFO says its place in the cluster has
// changed: a primary that became a replica or the reverse, a replica whose
// link to its primary went down or that follows another primary, a primary
// that lost or gained a replica. Usage figures move on every look and say
// nothing to the cluster controller.
type vitals struct {
	role     string
	linkUp   bool
	syncing  bool
	replicas int
	primary  string
	// unreadable: the answer did not parse as a node's INFO.
	unreadable bool
}

// vitalsOf reads a look's vitals from its parsed sections. A node loading
// its data after a start is a restarted process, which the pod's watch
// reports; a replica loading its primary's data shows as syncing.
func vitalsOf(l valkey.Look) vitals {
	info, err := l.NodeInfo()
	if err != nil {
		return vitals{unreadable: true}
	}
	r := info.Replication
	v := vitals{role: r.Role, replicas: len(r.Replicas)}
	if !r.IsPrimary() {
		v.linkUp, v.syncing = r.LinkUp(), r.PrimarySyncInProgress
		v.primary = net.JoinHostPort(r.PrimaryHost, strconv.Itoa(r.PrimaryPort))
	}
	return v
}
