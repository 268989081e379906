package valkey

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// feedPing is how often a fed server hears from its stand-in primary once
// the file is sent, well inside Valkey's repl-timeout (60 s by default).
const feedPing = 10 * time.Second

// FeedSource opens the RDB file a feed sends and says its size.
type FeedSource func(ctx context.Context) (io.ReadCloser, int64, error)

// Feeder hands RDB files to Valkey servers that replicate from it. Valkey
// loads a file only from its own disk or from its primary; a restore has
// the file in an object store, so the Feeder stands in as the primary of
// a scratch server for one full sync: it answers the replica's handshake
// as a primary does and sends the file as the FULLRESYNC payload. Each
// feed is claimed by the AUTH password the replica sends (its masterauth),
// a random token, so the listener serves nobody it was not told of.
type Feeder struct {
	ln    net.Listener
	mu    sync.Mutex
	feeds map[string]*feed
	wg    sync.WaitGroup
}

type feed struct {
	open FeedSource
	sent chan error
	ctx  context.Context
	// claimed: the file was asked for once. A replica asks again only
	// when it could not load what it was sent.
	claimed atomic.Bool
}

// report hands the feed's outcome over once; later ones are dropped.
func (fd *feed) report(err error) {
	select {
	case fd.sent <- err:
	default:
	}
}

// NewFeeder serves replicas on ln until ln is closed.
func NewFeeder(ln net.Listener) *Feeder {
	f := &Feeder{ln: ln, feeds: map[string]*feed{}}
	f.wg.Add(1)
	go f.serve()
	return f
}

// Addr is where the Feeder listens.
func (f *Feeder) Addr() net.Addr { return f.ln.Addr() }

// Close stops listening and ends every feed's connection.
func (f *Feeder) Close() error {
	err := f.ln.Close()
	f.wg.Wait()
	return err
}

// Offer registers a feed and returns the token the replica must send as
// its masterauth. sent receives once: nil when the whole file was
// written to the replica, or why not; a replica that asks for the file a
// second time could not load it, and that is the outcome if the first
// was not yet taken. Cancelling ctx withdraws the feed
// and ends its connection.
func (f *Feeder) Offer(ctx context.Context, open FeedSource) (token string, sent <-chan error, err error) {
	b := make([]byte, 20)
	if _, err := rand.Read(b); err != nil {
		return "", nil, fmt.Errorf("making a feed token: %w", err)
	}
	token = hex.EncodeToString(b)
	fd := &feed{open: open, sent: make(chan error, 1), ctx: ctx}
	f.mu.Lock()
	f.feeds[token] = fd
	f.mu.Unlock()
	context.AfterFunc(ctx, func() {
		f.mu.Lock()
		delete(f.feeds, token)
		f.mu.Unlock()
	})
	return token, fd.sent, nil
}

func (f *Feeder) serve() {
	defer f.wg.Done()
	for {
		conn, err := f.ln.Accept()
		if err != nil {
			return
		}
		f.wg.Add(1)
		go func() {
			defer f.wg.Done()
			defer func() { _ = conn.Close() }()
			f.handle(conn)
		}()
	}
}

// handle answers one replica: PING, AUTH <token>, REPLCONF (all
// accepted), then PSYNC or SYNC, answered with the file. After the file
// it only pings until the replica, told REPLICAOF NO ONE, hangs up.
func (f *Feeder) handle(conn net.Conn) {
	r := bufio.NewReader(conn)
	var fd *feed
	for {
		_ = conn.SetReadDeadline(time.Now().Add(time.Minute))
		args, err := readCommand(r)
		if err != nil {
			return
		}
		cmd := strings.ToUpper(args[0])
		switch {
		case cmd == "PING":
			_, err = io.WriteString(conn, "+PONG\r\n")
		case cmd == "AUTH":
			f.mu.Lock()
			fd = f.feeds[args[len(args)-1]]
			f.mu.Unlock()
			if fd == nil {
				_, _ = io.WriteString(conn, "-ERR invalid password\r\n")
				return
			}
			_, err = io.WriteString(conn, "+OK\r\n")
		case fd == nil:
			_, _ = io.WriteString(conn, "-NOAUTH Authentication required.\r\n")
			return
		case cmd == "REPLCONF":
			_, err = io.WriteString(conn, "+OK\r\n")
		case cmd == "PSYNC" || cmd == "SYNC":
			if fd.claimed.Swap(true) {
				fd.report(errors.New("the replica asked for the file again: it could not load what it was sent (its log says why)"))
				_, _ = io.WriteString(conn, "-ERR the file was sent once\r\n")
				return
			}
			err = fd.send(conn, cmd == "PSYNC")
			fd.report(err)
			if err == nil {
				fd.idle(conn, r)
			}
			return
		default:
			_, err = fmt.Fprintf(conn, "-ERR %s is not served here\r\n", cmd)
		}
		if err != nil {
			return
		}
	}
}

// send writes the FULLRESYNC header (for PSYNC) and the file as one bulk
// payload of its exact size.
func (fd *feed) send(conn net.Conn, psync bool) error {
	_ = conn.SetDeadline(time.Time{})
	body, size, err := fd.open(fd.ctx)
	if err != nil {
		return fmt.Errorf("opening the file to send: %w", err)
	}
	defer func() { _ = body.Close() }()
	stop := context.AfterFunc(fd.ctx, func() { _ = conn.Close() })
	defer stop()
	w := bufio.NewWriterSize(conn, 64<<10)
	if psync {
		id := make([]byte, 20)
		_, _ = rand.Read(id)
		fmt.Fprintf(w, "+FULLRESYNC %s 0\r\n", hex.EncodeToString(id))
	}
	fmt.Fprintf(w, "$%d\r\n", size)
	n, err := io.Copy(w, body)
	if err == nil && n != size {
		err = fmt.Errorf("the file is %d bytes, %d announced", n, size)
	}
	if err == nil {
		err = w.Flush()
	}
	if err != nil {
		return fmt.Errorf("sending the file after %d of %d bytes: %w", n, size, err)
	}
	return nil
}

// idle keeps the link up, reading the replica's acknowledgements, until
// the replica or the feed's context ends it.
func (fd *feed) idle(conn net.Conn, r *bufio.Reader) {
	stop := context.AfterFunc(fd.ctx, func() { _ = conn.Close() })
	defer stop()
	done := make(chan struct{})
	go func() {
		defer close(done)
		_, _ = io.Copy(io.Discard, r)
	}()
	tick := time.NewTicker(feedPing)
	defer tick.Stop()
	for {
		select {
		case <-done:
			return
		case <-tick.C:
			_ = conn.SetWriteDeadline(time.Now().Add(feedPing))
			if _, err := conn.Write(encodeCommand("PING")); err != nil {
				return
			}
		}
	}
}

// readCommand reads one RESP array of bulk strings, or an inline command.
func readCommand(r *bufio.Reader) ([]string, error) {
	line, err := r.ReadString('\n')
	if err != nil {
		return nil, err
	}
	line = strings.TrimRight(line, "\r\n")
	if !strings.HasPrefix(line, "*") {
		if f := strings.Fields(line); len(f) > 0 {
			return f, nil
		}
		return nil, errors.New("empty command")
	}
	n, err := strconv.Atoi(line[1:])
	if err != nil || n < 1 || n > 64 {
		return nil, fmt.Errorf("bad array header %q", line)
	}
	args := make([]string, n)
	for i := range args {
		h, err := r.ReadString('\n')
		if err != nil {
			return nil, err
		}
		h = strings.TrimRight(h, "\r\n")
		size, err := strconv.Atoi(strings.TrimPrefix(h, "$"))
		if !strings.HasPrefix(h, "$") || err != nil || size < 0 || size > 1<<20 {
			return nil, fmt.Errorf("bad bulk header %q", h)
		}
		b := make([]byte, size+2)
		if _, err := io.ReadFull(r, b); err != nil {
			return nil, err
		}
		args[i] = string(b[:size])
	}
	return args, nil
}
