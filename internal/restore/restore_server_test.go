package restore

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"testing"
	"time"

	vgo "github.com/valkey-io/valkey-go"

	"github.com/gomomento/valkey-operator/internal/testbin"
	"github.com/gomomento/valkey-operator/internal/valkey"
)

// startPlain runs a valkey-server not in cluster mode, without a password,
// on a free loopback port, and returns a connection to it.
func startPlain(t *testing.T) *valkey.Node {
	t.Helper()
	addr := testbin.StartPlainValkey(t, "--repl-diskless-load", "on-empty-db")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	n, err := valkey.Dial(ctx, valkey.Target{Address: addr})
	if err != nil {
		t.Fatalf("connecting to valkey-server on %s: %v", addr, err)
	}
	t.Cleanup(n.Close)
	return n
}

// do sends one command to n with a client of the test's own.
func do(t *testing.T, n *valkey.Node, args ...string) {
	t.Helper()
	c, err := vgo.NewClient(vgo.ClientOption{InitAddress: []string{n.Address()}, ForceSingleClient: true, DisableCache: true})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := c.Do(context.Background(), c.B().Arbitrary(args...).Build()).Error(); err != nil {
		t.Fatalf("%v: %v", args, err)
	}
}

// A file taken from one server is loaded by a loader the Feeder feeds, and
// its keys copied to a third server come back identical: every type, its
// encoding (DUMP payloads are equal) and its absolute expiry.
func TestLoadAndCopyKeys(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	source, loader, target := startPlain(t), startPlain(t), startPlain(t)
	var keys []string
	for i := range 300 {
		k := fmt.Sprintf("k%d", i)
		switch i % 7 {
		case 0:
			do(t, source, "SET", k, "v"+k)
		case 1:
			do(t, source, "HSET", k, "f1", "a", "f2", "b")
		case 2:
			do(t, source, "RPUSH", k, "a", "b", "c")
		case 3:
			do(t, source, "SADD", k, "x", "y", "1")
		case 4:
			do(t, source, "ZADD", k, "1.5", "a", "2", "b")
		case 5:
			do(t, source, "XADD", k, "*", "f", "v")
		case 6:
			do(t, source, "SET", k, "expiring", "PX", "3600000")
		}
		keys = append(keys, k)
	}
	snap, err := valkey.SyncSnapshot(ctx, valkey.Target{Address: source.Address()})
	if err != nil {
		t.Fatal(err)
	}
	rdb, err := io.ReadAll(snap)
	_ = snap.Close()
	if err != nil {
		t.Fatal(err)
	}

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	feeder := valkey.NewFeeder(ln)
	defer func() { _ = feeder.Close() }()
	port := ln.Addr().(*net.TCPAddr).Port
	src := func(context.Context) (io.ReadCloser, int64, error) {
		return io.NopCloser(bytes.NewReader(rdb)), int64(len(rdb)), nil
	}
	if err := Load(ctx, feeder, "127.0.0.1", port, loader, src); err != nil {
		t.Fatal(err)
	}
	repl, err := loader.InfoReplication(ctx)
	if err != nil || !repl.IsPrimary() {
		t.Fatalf("the loader is %q after the load (%v), want a primary", repl.Role, err)
	}
	n, err := CopyKeys(ctx, loader, func(ctx context.Context, batch []valkey.DumpedKey) error {
		return target.RestoreKeys(ctx, batch)
	})
	if err != nil {
		t.Fatal(err)
	}
	if n < int64(len(keys)) {
		t.Fatalf("copied %d keys, want %d", n, len(keys))
	}
	want, err := source.DumpKeys(ctx, keys)
	if err != nil {
		t.Fatal(err)
	}
	got, err := target.DumpKeys(ctx, keys)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(want) {
		t.Fatalf("target holds %d of %d keys", len(got), len(want))
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("key %s: got payload %q expiring %d, want %q expiring %d",
				want[i].Key, got[i].Payload, got[i].ExpireAtMs, want[i].Payload, want[i].ExpireAtMs)
		}
	}
}

// A replica that does not know a feed's token is refused at AUTH and
// never handed a file.
func TestFeederRefusesUnknownToken(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	feeder := valkey.NewFeeder(ln)
	defer func() { _ = feeder.Close() }()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	opened := false
	if _, _, err := feeder.Offer(ctx, func(context.Context) (io.ReadCloser, int64, error) {
		opened = true
		return io.NopCloser(bytes.NewReader(nil)), 0, nil
	}); err != nil {
		t.Fatal(err)
	}
	conn, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = conn.Close() }()
	_, _ = conn.Write([]byte("*2\r\n$4\r\nAUTH\r\n$5\r\nguess\r\n*3\r\n$5\r\nPSYNC\r\n$1\r\n?\r\n$2\r\n-1\r\n"))
	_ = conn.SetReadDeadline(time.Now().Add(5 * time.Second))
	reply, _ := io.ReadAll(conn)
	if !bytes.HasPrefix(reply, []byte("-ERR invalid password")) || bytes.Contains(reply, []byte("FULLRESYNC")) || opened {
		t.Fatalf("reply %q (file opened: %v), want a refusal and nothing sent", reply, opened)
	}
}
