package valkey

import (
	"context"
	"fmt"
	"time"

	"github.com/valkey-io/valkey-go"
)

// LookSections are the INFO sections one look asks for: everything the
// cluster controller's observation (server, replication, memory) and the
// autoscaler's sample (server, memory, cpu, stats) read, so one INFO per
// node and interval serves both.
var LookSections = []string{"server", "replication", "memory", "cpu", "stats"}

// Look is one INFO answer of a node: its sections, when it was received
// and the run ID of the process that gave it.
type Look struct {
	Sections InfoSections
	Time     time.Time
	RunID    string
}

// Look asks the node for LookSections in one round trip.
func (n *Node) Look(ctx context.Context) (Look, error) {
	text, err := n.text(ctx, "INFO", func(b valkey.Builder) valkey.Completed {
		return b.Info().Section(LookSections...).Build()
	})
	if err != nil {
		return Look{}, err
	}
	return newLook(text, time.Now()), nil
}

// newLook parses an INFO answer received at t.
func newLook(text string, t time.Time) Look {
	sections := parseInfo(text)
	return Look{Sections: sections, Time: t, RunID: sections["server"]["run_id"]}
}

// NodeInfo is what the look tells about the node for planning.
func (l Look) NodeInfo() (NodeInfo, error) {
	out, err := nodeInfoFrom(l.Sections.flat())
	if err != nil {
		return NodeInfo{}, fmt.Errorf("reading INFO: %w", err)
	}
	return out, nil
}

// Usage is what the look tells about the node for autoscaling and
// metering.
func (l Look) Usage() (UsageInfo, error) {
	return usageInfoFrom(l.Sections.flat())
}
