package valkey

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"strings"
	"sync/atomic"
	"time"

	"github.com/valkey-io/valkey-go"
)

// connCeiling bounds how long valkey-go waits on a connection regardless
// of the caller's context (its background health-check PINGs included).
// Per-call deadlines are shorter; the ceiling only has to leave room for a
// long MIGRATE.
const connCeiling = time.Minute

// keepAlive is the TCP keep-alive period and, in valkey-go, the idle time
// after which it PINGs the node; its 1 s default is needless chatter for
// a connection that sees a few commands per reconcile.
const keepAlive = 15 * time.Second

// Node is an authenticated connection to one Valkey node. It reconnects
// by itself after a broken connection, with the same TLS verification and
// credentials. Safe for concurrent use.
type Node struct {
	addr    string
	timeout time.Duration
	client  valkey.Client
	// release gives a Pool's connection back instead of closing it; lent
	// says it is out on loan (guarded by the Pool's lock).
	release func()
	lent    bool
}

// The per-connection sizes of a Node's client (see Dial).
const (
	readBuffer  = 8 << 10
	writeBuffer = 4 << 10
	ringScale   = 4
)

// Dial connects to t, verifies TLS when asked and authenticates. It fails
// rather than return a Node that cannot answer.
func Dial(ctx context.Context, t Target) (*Node, error) {
	if t.Address == "" {
		return nil, errors.New("dialing valkey: empty address")
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("dialing %s: %w", t.Address, err)
	}
	var tlsConfig *tls.Config
	if t.TLS != nil {
		var err error
		if tlsConfig, err = t.TLS.ClientConfig(); err != nil {
			return nil, fmt.Errorf("dialing %s: %w", t.Address, err)
		}
	}

	// valkey-go dials the first connection with a background context; while
	// Dial runs, the caller's context also bounds it.
	var dialing atomic.Pointer[context.Context]
	dialing.Store(&ctx)
	defer dialing.Store(nil)

	timeout := t.timeout()
	client, err := valkey.NewClient(valkey.ClientOption{
		InitAddress: []string{t.Address},
		Username:    t.Username,
		Password:    t.Password,
		// TLS is done in DialCtxFn so that a custom dialer gets it too and
		// no valkey-go code path can open a plaintext connection instead.
		DialCtxFn: func(vctx context.Context, addr string, _ *net.Dialer, _ *tls.Config) (net.Conn, error) {
			if callerCtx := dialing.Load(); callerCtx != nil {
				var cancel context.CancelFunc
				vctx, cancel = mergeCancel(vctx, *callerCtx)
				defer cancel()
			}
			return dialConn(vctx, Target{Address: addr, Dialer: t.Dialer, Timeout: timeout, KeepAlive: t.KeepAlive}, tlsConfig)
		},
		Dialer:            net.Dialer{Timeout: timeout, KeepAlive: t.keepAlive()},
		ConnWriteTimeout:  connCeiling,
		ForceSingleClient: true,
		DisableCache:      true,
		DisableRetry:      true,
		// One connection per node is plenty for admin traffic.
		PipelineMultiplex: -1,
		BlockingPoolSize:  1,
		// The pool keeps a connection to every node of every cluster;
		// valkey-go's defaults (0.5 MiB buffers each way and a ring of
		// 1,024 pending commands) cost 1.3 MiB a node, most of the
		// operator's memory in a fleet, for commands sent one at a
		// time. A reply larger than the buffer is read in pieces.
		ReadBufferEachConn:  readBuffer,
		WriteBufferEachConn: writeBuffer,
		RingScaleEachConn:   ringScale,
		// CLIENT SETINFO is outside the operator user's grants; skipping it
		// keeps NOPERM entries out of the node's ACL LOG.
		ClientSetInfo: valkey.DisableClientSetInfo,
	})
	if err != nil {
		// With ForceSingleClient valkey-go returns a client even when the
		// first dial failed.
		if client != nil {
			client.Close()
		}
		return nil, fmt.Errorf("dialing %s: %w", t.Address, err)
	}
	return &Node{addr: t.Address, timeout: timeout, client: client}, nil
}

// mergeCancel returns a context that carries a's values and deadline and
// is also cancelled when b is done (b's deadline included).
func mergeCancel(a, b context.Context) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancelCause(a)
	stop := context.AfterFunc(b, func() { cancel(context.Cause(b)) })
	return ctx, func() { stop(); cancel(nil) }
}

// Address returns the address the node was dialled at.
func (n *Node) Address() string { return n.addr }

// Close closes the connection.
func (n *Node) Close() {
	if n.release != nil {
		n.release()
		return
	}
	n.client.Close()
}

// do runs one command under the node's command timeout, or the caller's
// earlier deadline.
func (n *Node) do(ctx context.Context, build func(b valkey.Builder) valkey.Completed) valkey.ValkeyResult {
	return n.doWithin(ctx, n.timeout, build)
}

func (n *Node) doWithin(ctx context.Context, timeout time.Duration, build func(b valkey.Builder) valkey.Completed) valkey.ValkeyResult {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	return n.client.Do(ctx, build(n.client.B()))
}

func (n *Node) wrap(what string, err error) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("%s on %s: %w", what, n.addr, err)
}

// exec runs a command whose reply is only OK or an error.
func (n *Node) exec(ctx context.Context, what string, build func(b valkey.Builder) valkey.Completed) error {
	return n.wrap(what, n.do(ctx, build).Error())
}

// text runs a command that returns text (INFO, CLUSTER INFO/NODES). Over
// RESP3 these are verbatim strings, which valkey-go hands over with their
// "txt:" format prefix still attached.
func (n *Node) text(ctx context.Context, what string, build func(b valkey.Builder) valkey.Completed) (string, error) {
	s, err := n.do(ctx, build).ToString()
	if err != nil {
		return "", n.wrap(what, err)
	}
	return stripVerbatimPrefix(s), nil
}

func stripVerbatimPrefix(s string) string {
	if len(s) >= 4 && s[3] == ':' && (strings.HasPrefix(s, "txt") || strings.HasPrefix(s, "mkd")) {
		return s[4:]
	}
	return s
}
