package render

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gomomento/valkey-operator/api/v1alpha1"
	"github.com/gomomento/valkey-operator/internal/valkey"
)

// The memory budget of a node under a container limit L. maxmemory bounds
// only the data set Valkey accounts for (used_memory); crossing L gets the
// container OOM-killed, and with restartPolicy Never the node is lost. On
// top of maxmemory come:
//
//   - a replica's output buffer during a full sync: every write the primary
//     takes while it streams its snapshot waits there, outside used_memory.
//     The operator bounds it at L/8 (replicaBufferFraction) instead of
//     Valkey's fixed 256mb, which alone is more than the whole headroom of
//     a node under 2Gi; a sync whose writes outgrow it is cut and retried
//     rather than costing the node.
//   - Valkey's fixed costs: the server itself (about 15Mi resident), the
//     10mb replication backlog, client and cluster-bus buffers: 32Mi, or a
//     quarter of L under 128Mi, where a fixed 32Mi would leave the data set
//     next to nothing.
//   - the fork that streams the snapshot to a replica: every page the
//     primary writes while it runs is copied, and allocator fragmentation
//     adds to the data set's resident size. A quarter of what remains, a
//     third of maxmemory, is kept for both. A persistent node's rewrite of
//     its append-only file forks the same way, and needs no share of its
//     own: Valkey runs one child at a time, so a sync waits for a rewrite
//     and a rewrite for a sync (TestRewriteAndSyncNeverForkTogether), and
//     since Valkey 7 a rewrite keeps no buffer of the writes made meanwhile
//     (they go to a new incremental file).
//
// So maxmemory = 3/4 × (L − L/8 − min(32Mi, L/4)).
const (
	replicaBufferFraction = 8
	fixedOverhead         = 32 << 20
	// A quarter of what is left after the buffer and the fixed costs goes
	// to the fork's copy-on-write and fragmentation.
	forkShareDenominator = 4
)

const (
	keyMaxmemory    = "maxmemory"
	keyOutputBuffer = "client-output-buffer-limit"
	// valkeyReplicaBuffer is Valkey's own replica hard limit, which applies
	// when client-output-buffer-limit is set without a replica class.
	valkeyReplicaBuffer = 256 << 20
)

// nodeSettings are the settings a new node records: the merged user map
// with the forced settings applied (see settings), the defaults where the
// user set none, plus a maxmemory and a replica output buffer limit derived
// from the container memory limit where the user set none. Without a limit
// there is nothing to derive from and Valkey's defaults (no maxmemory, a
// 256mb replica buffer) stay.
func nodeSettings(user map[string]string, tls bool, p *v1alpha1.NodePersistence, memory string) (map[string]string, error) {
	out, err := settings(user, tls, p)
	if err != nil {
		return nil, err
	}
	for _, d := range defaults {
		if !hasKey(out, d.key) {
			out[d.key] = d.value
		}
	}
	if memory == "" {
		return out, nil
	}
	limit, err := resource.ParseQuantity(memory)
	if err != nil {
		return nil, fmt.Errorf("memory %q: %w", memory, err)
	}
	if !hasKey(out, keyOutputBuffer) {
		out[keyOutputBuffer] = replicaBufferSetting(replicaBufferFor(limit.Value()))
	}
	if !hasKey(out, keyMaxmemory) {
		out[keyMaxmemory] = strconv.FormatInt(maxmemoryFor(limit.Value(), replicaBufferFor(limit.Value())), 10)
	}
	return out, nil
}

// replicaBufferSetting sets only the hard limit: the soft limit would cut
// a long full sync on a busy primary after its 60 seconds even though the
// memory reserved for it still has room, and the sync would start over.
func replicaBufferSetting(hard int64) string {
	return fmt.Sprintf("replica %d 0 0", hard)
}

func replicaBufferFor(limit int64) int64 {
	return limit / replicaBufferFraction
}

// maxmemoryFor is the largest maxmemory that a limit holds next to a
// replica output buffer of the given hard limit; 0 or less when it holds
// none.
func maxmemoryFor(limit, replicaBuffer int64) int64 {
	rest := limit - replicaBuffer - min(fixedOverhead, limit/4)
	return rest - rest/forkShareDenominator
}

func hasKey(settings map[string]string, key string) bool {
	for k := range settings {
		if strings.EqualFold(k, key) {
			return true
		}
	}
	return false
}

// lookup finds a directive in any case. Of several spellings the one
// sorting last wins, as in valkey.conf, whose lines are in key order and
// where a later line overrides an earlier one.
func lookup(settings map[string]string, key string) (string, bool) {
	var value string
	found := false
	for _, k := range slices.Sorted(maps.Keys(settings)) {
		if strings.EqualFold(k, key) {
			value, found = settings[k], true
		}
	}
	return value, found
}

// Headroom is the verdict on the memory a config chain leaves outside
// maxmemory, for the MemoryHeadroom condition.
type Headroom struct {
	Status  metav1.ConditionStatus
	Reason  string
	Message string
}

// MemoryHeadroom weighs the maxmemory and replica output buffer limit that
// nodes of a resolved config chain run with (the user's, else the derived
// ones) against its memory limit. A maxmemory the limit cannot hold is not
// refused: the user may know the data set stays small, or its writes few,
// but it must not go unseen.
func MemoryHeadroom(user map[string]string, memory string) Headroom {
	if memory == "" {
		return Headroom{metav1.ConditionUnknown, v1alpha1.ReasonNoMemoryLimit,
			"no memory limit in the config chain: nothing bounds the nodes' memory and nothing to weigh maxmemory against; set resources.memory"}
	}
	q, err := resource.ParseQuantity(memory)
	if err != nil {
		return unreadable("memory", memory, err)
	}
	limit := q.Value()

	buffer := replicaBufferFor(limit)
	bufferFrom := "derived"
	if v, ok := lookup(user, keyOutputBuffer); ok {
		hard, set, err := replicaHardLimit(v)
		switch {
		case err != nil:
			return unreadable(keyOutputBuffer, v, err)
		case !set:
			buffer, bufferFrom = valkeyReplicaBuffer, "Valkey's default"
		case hard == 0:
			return Headroom{metav1.ConditionFalse, v1alpha1.ReasonHeadroomTooSmall, fmt.Sprintf(
				"%s %q sets no hard limit for replicas: the buffer of a full sync can grow until the node is OOM-killed at its memory limit %s; set one, or remove the directive to get the derived %s",
				keyOutputBuffer, v, size(limit), size(replicaBufferFor(limit)))}
		default:
			buffer, bufferFrom = hard, "set"
		}
	}
	safe := maxmemoryFor(limit, buffer)
	if safe <= 0 {
		return Headroom{metav1.ConditionFalse, v1alpha1.ReasonHeadroomTooSmall, fmt.Sprintf(
			"the replica output buffer hard limit %s (%s) leaves no room for data in the memory limit %s; lower it, or remove %s to get the derived %s",
			size(buffer), bufferFrom, size(limit), keyOutputBuffer, size(replicaBufferFor(limit)))}
	}

	v, ok := lookup(user, keyMaxmemory)
	if !ok {
		return Headroom{metav1.ConditionTrue, v1alpha1.ReasonHeadroomSufficient, fmt.Sprintf(
			"maxmemory %s, derived from the memory limit %s, leaves %s for a full sync's fork, the replica output buffer (hard limit %s, %s) and Valkey's own memory",
			size(safe), size(limit), size(limit-safe), size(buffer), bufferFrom)}
	}
	set, err := valkey.ParseMemory(v)
	switch {
	case err != nil:
		return unreadable(keyMaxmemory, v, err)
	case set == 0:
		return Headroom{metav1.ConditionFalse, v1alpha1.ReasonMaxmemoryUnlimited, fmt.Sprintf(
			"maxmemory %q sets no limit: the data set can grow until the node is OOM-killed at its memory limit %s and is lost; set maxmemory to at most %s, or remove it to get that derived value",
			v, size(limit), size(safe))}
	case set > safe:
		return Headroom{metav1.ConditionFalse, v1alpha1.ReasonHeadroomTooSmall, fmt.Sprintf(
			"maxmemory %q (%s) leaves %s of the memory limit %s, less than the %s a full sync's fork, the replica output buffer (hard limit %s, %s) and Valkey's own memory need: a full sync can get the node OOM-killed; set maxmemory to at most %s, or remove it to get that derived value",
			v, size(set), size(max(limit-set, 0)), size(limit), size(limit-safe), size(buffer), bufferFrom, size(safe))}
	}
	return Headroom{metav1.ConditionTrue, v1alpha1.ReasonHeadroomSufficient, fmt.Sprintf(
		"maxmemory %q (%s) leaves %s of the memory limit %s for a full sync's fork, the replica output buffer (hard limit %s, %s) and Valkey's own memory; up to %s would",
		v, size(set), size(limit-set), size(limit), size(buffer), bufferFrom, size(safe))}
}

func unreadable(key, value string, err error) Headroom {
	return Headroom{metav1.ConditionUnknown, v1alpha1.ReasonMemorySettingUnreadable,
		fmt.Sprintf("%s %q cannot be read (%v); nodes do not start with a value Valkey refuses", key, value, err)}
}

// replicaHardLimit reads the replica class of a client-output-buffer-limit
// value, "<class> <hard> <soft> <seconds>" repeated; set is false when the
// value names no replica class (slave is its old name).
func replicaHardLimit(value string) (hard int64, set bool, err error) {
	f := strings.Fields(value)
	if len(f) == 0 || len(f)%4 != 0 {
		return 0, false, fmt.Errorf("want <class> <hard> <soft> <seconds>, repeated")
	}
	for i := 0; i < len(f); i += 4 {
		if !strings.EqualFold(f[i], "replica") && !strings.EqualFold(f[i], "slave") {
			continue
		}
		h, err := valkey.ParseMemory(f[i+1])
		if err != nil {
			return 0, false, err
		}
		hard, set = h, true
	}
	return hard, set, nil
}

// size writes a byte count the way a memory limit is usually written.
func size(b int64) string {
	switch {
	case b != 0 && b%(1<<30) == 0:
		return fmt.Sprintf("%dGi", b>>30)
	case b%(1<<20) == 0:
		return fmt.Sprintf("%dMi", b>>20)
	default:
		return fmt.Sprintf("%.1fMi", float64(b)/(1<<20))
	}
}
