package valkey

import (
	"fmt"
	"strconv"
	"testing"
	"time"
)

// A kept connection is lent to one caller at a time and given back by
// Close; a second caller meanwhile gets a connection of its own; a new key
// never gets another key's connection; more than maxIdle, or idle past
// idleFor, are closed. Counted by the server itself.
func TestPoolLendsKeptConnections(t *testing.T) {
	s := startServer(t, valkeyArgv(t), "port")
	ctx := testCtx(t)
	observer := dialT(t, s.operatorTarget())
	received := func() int {
		t.Helper()
		info, err := observer.Info(ctx, "stats")
		if err != nil {
			t.Fatal(err)
		}
		n, err := strconv.Atoi(info["stats"]["total_connections_received"])
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	clients := func() int {
		t.Helper()
		info, err := observer.Info(ctx, "clients")
		if err != nil {
			t.Fatal(err)
		}
		n, err := strconv.Atoi(info["clients"]["connected_clients"])
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	now := time.Now()
	p := NewPool(1, time.Minute)
	p.now = func() time.Time { return now }
	t.Cleanup(p.Close)
	lend := func(key string) *Node {
		t.Helper()
		n, err := p.Dial(ctx, key, s.operatorTarget())
		if err != nil {
			t.Fatal(err)
		}
		if err := n.Ping(ctx); err != nil {
			t.Fatal(err)
		}
		return n
	}

	base := received()
	a := lend("k")
	a.Close()
	a.Close() // a second Close of one loan gives back nothing more
	if got := p.Len(); got != 1 {
		t.Fatalf("%d idle after one loan given back twice, want 1", got)
	}
	b := lend("k")
	if got := received() - base; got != 1 {
		t.Fatalf("the server accepted %d connections for two loans in turn, want 1", got)
	}
	c := lend("k") // b is out: c gets its own
	d := lend("other key")
	if got := received() - base; got != 3 {
		t.Fatalf("the server accepted %d connections, want 3 (one reused, one while it was out, one for another key)", got)
	}
	b.Close()
	c.Close() // over maxIdle: closed
	d.Close()
	if got := p.Len(); got != 2 {
		t.Fatalf("%d idle, want one per key", got)
	}
	eventually(t, 10*time.Second, "the connection over maxIdle closed", func() error {
		if n := clients(); n != 3 { // the observer and one per key
			return fmt.Errorf("%d clients connected", n)
		}
		return nil
	})

	now = now.Add(2 * time.Minute)
	if n := p.take("k"); n != nil {
		t.Fatal("a connection idle past idleFor was lent")
	}
	if got := p.Len(); got != 0 {
		t.Fatalf("%d idle after idleFor, want 0", got)
	}
	eventually(t, 10*time.Second, "the idle connections closed", func() error {
		if n := clients(); n != 1 {
			return fmt.Errorf("%d clients connected", n)
		}
		return nil
	})

	var none *Pool
	n, err := none.Dial(ctx, "k", s.operatorTarget())
	if err != nil {
		t.Fatal(err)
	}
	n.Close()
}
