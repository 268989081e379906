package valkey

import (
	"context"
	"fmt"

	"github.com/valkey-io/valkey-go"
)

// DumpedKey is one key as DUMP serialises it (value, type and encoding,
// with the RDB version and checksum) and its absolute expiry.
type DumpedKey struct {
	Key     string
	Payload string
	// ExpireAtMs is the Unix time in milliseconds the key expires at, 0
	// for a key without one.
	ExpireAtMs int64
}

// ScanKeys is one SCAN step: the next cursor (0 once the scan is done)
// and the keys of this step.
func (n *Node) ScanKeys(ctx context.Context, cursor uint64, count int64) (uint64, []string, error) {
	e, err := n.do(ctx, func(b valkey.Builder) valkey.Completed {
		return b.Scan().Cursor(cursor).Count(count).Build()
	}).AsScanEntry()
	if err != nil {
		return 0, nil, n.wrap("SCAN", err)
	}
	return e.Cursor, e.Elements, nil
}

// DumpKeys serialises keys with DUMP and reads their expiry with
// PEXPIRETIME, all in one round trip. A key gone meanwhile (expired) is
// left out.
func (n *Node) DumpKeys(ctx context.Context, keys []string) ([]DumpedKey, error) {
	if len(keys) == 0 {
		return nil, nil
	}
	b := n.client.B()
	cmds := make(valkey.Commands, 0, 2*len(keys))
	for _, k := range keys {
		cmds = append(cmds, b.Dump().Key(k).Build(), b.Pexpiretime().Key(k).Build())
	}
	ctx, cancel := context.WithTimeout(ctx, n.timeout)
	defer cancel()
	res := n.client.DoMulti(ctx, cmds...)
	out := make([]DumpedKey, 0, len(keys))
	for i, k := range keys {
		payload, err := res[2*i].ToString()
		if valkey.IsValkeyNil(err) {
			continue
		}
		if err != nil {
			return nil, n.wrap("DUMP "+k, err)
		}
		at, err := res[2*i+1].AsInt64()
		if err != nil {
			return nil, n.wrap("PEXPIRETIME "+k, err)
		}
		switch {
		case at == -2: // gone between DUMP and PEXPIRETIME
			continue
		case at < 0:
			at = 0
		}
		out = append(out, DumpedKey{Key: k, Payload: payload, ExpireAtMs: at})
	}
	return out, nil
}

// RestoreKeys writes keys with RESTORE ... REPLACE, an expiry as ABSTTL,
// all in one round trip. REPLACE makes a repeated restore of the same
// keys, after an interruption, land on the same data. A key whose expiry
// has passed is not created.
func (n *Node) RestoreKeys(ctx context.Context, keys []DumpedKey) error {
	if len(keys) == 0 {
		return nil
	}
	b := n.client.B()
	cmds := make(valkey.Commands, 0, len(keys))
	for _, k := range keys {
		r := b.Restore().Key(k.Key).Ttl(k.ExpireAtMs).SerializedValue(k.Payload).Replace()
		if k.ExpireAtMs > 0 {
			cmds = append(cmds, r.Absttl().Build())
		} else {
			cmds = append(cmds, r.Build())
		}
	}
	ctx, cancel := context.WithTimeout(ctx, n.timeout)
	defer cancel()
	for i, r := range n.client.DoMulti(ctx, cmds...) {
		if err := r.Error(); err != nil {
			return n.wrap(fmt.Sprintf("RESTORE %s", keys[i].Key), err)
		}
	}
	return nil
}

// ReplicaOf makes a server that is not in cluster mode replicate from
// host:port, or, with host "", stop replicating and keep its data.
func (n *Node) ReplicaOf(ctx context.Context, host string, port int) error {
	if host == "" {
		return n.exec(ctx, "REPLICAOF NO ONE", func(b valkey.Builder) valkey.Completed {
			return b.Replicaof().No().One().Build()
		})
	}
	return n.exec(ctx, "REPLICAOF", func(b valkey.Builder) valkey.Completed {
		return b.Replicaof().Host(host).Port(int64(port)).Build()
	})
}
