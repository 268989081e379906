package valkey

import (
	"context"
	"sync"
	"time"
)

// Pool keeps the connections of periodic visits for the next visit, so a
// cluster that nobody changes costs its nodes a few commands per pass
// instead of a TCP and TLS handshake and an authentication each time.
//
// A connection is lent to one caller at a time: a slow command of one
// caller (a slot move, say) never delays another's, and a node's answers
// on a lent connection are its own as on a fresh one. Connections are kept
// by key, which must name everything the connection was made with (the
// address, the credentials, the trust material): a changed password or CA
// is a new key, so a connection made with the old one is never lent again
// and is closed once it has been idle for idleFor.
type Pool struct {
	mu      sync.Mutex
	idle    map[string][]idleNode
	maxIdle int
	idleFor time.Duration
	swept   time.Time
	now     func() time.Time
}

type idleNode struct {
	node  *Node
	since time.Time
}

// NewPool keeps at most maxIdle connections per key, each for at most
// idleFor after its last use.
func NewPool(maxIdle int, idleFor time.Duration) *Pool {
	return &Pool{idle: map[string][]idleNode{}, maxIdle: maxIdle, idleFor: idleFor, now: time.Now}
}

// Dial lends a kept connection made under key, or dials t. The caller
// closes the Node as usual, which gives it back. A nil Pool dials.
func (p *Pool) Dial(ctx context.Context, key string, t Target) (*Node, error) {
	if p == nil {
		return Dial(ctx, t)
	}
	if n := p.take(key); n != nil {
		return n, nil
	}
	if t.KeepAlive == 0 {
		// Visits keep a kept connection busy; valkey-go's PING of an idle
		// one would only add commands between them.
		t.KeepAlive = p.idleFor
	}
	n, err := Dial(ctx, t)
	if err != nil {
		return nil, err
	}
	n.release, n.lent = func() { p.put(key, n) }, true
	return n, nil
}

func (p *Pool) take(key string) *Node {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.sweep()
	list := p.idle[key]
	if len(list) == 0 {
		return nil
	}
	n := list[len(list)-1].node
	p.idle[key] = list[:len(list)-1]
	if len(p.idle[key]) == 0 {
		delete(p.idle, key)
	}
	n.lent = true
	return n
}

// put gives n back; a second Close of the same loan does nothing.
func (p *Pool) put(key string, n *Node) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !n.lent {
		return
	}
	n.lent = false
	if len(p.idle[key]) >= p.maxIdle {
		n.client.Close()
		return
	}
	p.idle[key] = append(p.idle[key], idleNode{node: n, since: p.now()})
	p.sweep()
}

// sweep closes connections idle for longer than idleFor, at most once per
// idleFor so that a large pool is not scanned on every loan. Called with
// mu held.
func (p *Pool) sweep() {
	now := p.now()
	if now.Sub(p.swept) < p.idleFor {
		return
	}
	p.swept = now
	for key, list := range p.idle {
		kept := list[:0]
		for _, e := range list {
			if now.Sub(e.since) > p.idleFor {
				e.node.client.Close()
				continue
			}
			kept = append(kept, e)
		}
		if len(kept) == 0 {
			delete(p.idle, key)
		} else {
			p.idle[key] = kept
		}
	}
}

// Len is how many connections are kept idle, for tests and metrics.
func (p *Pool) Len() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	n := 0
	for _, list := range p.idle {
		n += len(list)
	}
	return n
}

// Close closes every idle connection; lent ones close when given back.
func (p *Pool) Close() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for key, list := range p.idle {
		for _, e := range list {
			e.node.client.Close()
		}
		delete(p.idle, key)
	}
	p.maxIdle = 0
}
