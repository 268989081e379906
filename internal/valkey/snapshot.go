package valkey

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"time"
)

// snapshotIdle bounds how long a snapshot stream may stay silent: a node
// preparing its RDB sends a newline every second, so a longer silence is
// a node or a network lost mid-stream.
const snapshotIdle = 60 * time.Second

// eofMarkLength is the size of the random mark that ends a diskless
// ("$EOF:<mark>") RDB transfer.
const eofMarkLength = 40

// Snapshot is a node's RDB payload as it streams in, as valkey-cli --rdb
// reads it: exactly the file's bytes, nothing of the replication stream
// that follows. Close drops the connection.
type Snapshot struct {
	io.Reader
	conn net.Conn
	stop func() bool
}

// Close ends the stream and the connection.
func (s *Snapshot) Close() error {
	s.stop()
	return s.conn.Close()
}

// SyncSnapshot asks the node at t for a full copy of its data with SYNC,
// the way a replica does on its first sync, and returns the RDB payload
// as it arrives: nothing is buffered beyond what the caller reads. The
// user of t needs +replconf and +sync. Cancelling ctx ends the stream.
func SyncSnapshot(ctx context.Context, t Target) (*Snapshot, error) {
	var tlsConfig *tls.Config
	if t.TLS != nil {
		var err error
		if tlsConfig, err = t.TLS.ClientConfig(); err != nil {
			return nil, fmt.Errorf("snapshot of %s: %w", t.Address, err)
		}
	}
	conn, err := dialConn(ctx, t, tlsConfig)
	if err != nil {
		return nil, fmt.Errorf("snapshot of %s: %w", t.Address, err)
	}
	stop := context.AfterFunc(ctx, func() { _ = conn.Close() })
	fail := func(err error) (*Snapshot, error) {
		stop()
		_ = conn.Close()
		if ctx.Err() != nil {
			err = fmt.Errorf("%w (%w)", err, ctx.Err())
		}
		return nil, fmt.Errorf("snapshot of %s: %w", t.Address, err)
	}
	r := bufio.NewReaderSize(&idleReader{conn: conn, idle: max(snapshotIdle, t.timeout())}, 64<<10)
	_ = conn.SetWriteDeadline(time.Now().Add(t.timeout()))
	if t.Password != "" {
		auth := []string{"AUTH", t.Password}
		if t.Username != "" {
			auth = []string{"AUTH", t.Username, t.Password}
		}
		if err := roundTrip(conn, r, auth...); err != nil {
			return fail(fmt.Errorf("authenticating as %q: %w", t.Username, err))
		}
	}
	// rdb-only: the node sends the file and no replication stream after
	// it. capa eof lets a node configured for diskless sync stream the
	// file as it writes it, with nothing on its disk.
	if err := roundTrip(conn, r, "REPLCONF", "rdb-only", "1"); err != nil {
		return fail(fmt.Errorf("REPLCONF rdb-only: %w", err))
	}
	if err := roundTrip(conn, r, "REPLCONF", "capa", "eof"); err != nil {
		return fail(fmt.Errorf("REPLCONF capa eof: %w", err))
	}
	if _, err := conn.Write(encodeCommand("SYNC")); err != nil {
		return fail(fmt.Errorf("sending SYNC: %w", err))
	}
	_ = conn.SetWriteDeadline(time.Time{})
	payload, err := readSyncHeader(r)
	if err != nil {
		return fail(fmt.Errorf("SYNC: %w", err))
	}
	return &Snapshot{Reader: payload, conn: conn, stop: stop}, nil
}

// readSyncHeader skips the newlines a node sends while it prepares the
// file and returns a reader of exactly the payload the header announces:
// "$<length>" (a file written to disk first) or "$EOF:<mark>" (diskless:
// the payload ends with the mark).
func readSyncHeader(r *bufio.Reader) (io.Reader, error) {
	for {
		line, err := r.ReadString('\n')
		if err != nil {
			return nil, fmt.Errorf("reading the reply: %w", err)
		}
		line = strings.TrimRight(line, "\r\n")
		switch {
		case line == "":
			continue
		case strings.HasPrefix(line, "-"):
			return nil, fmt.Errorf("node replied: %s", line[1:])
		case strings.HasPrefix(line, "$EOF:"):
			mark := line[len("$EOF:"):]
			if len(mark) != eofMarkLength {
				return nil, fmt.Errorf("diskless header %q: mark is %d bytes, want %d", line, len(mark), eofMarkLength)
			}
			return &eofMarkReader{r: r, mark: []byte(mark), buf: make([]byte, 32<<10)}, nil
		case strings.HasPrefix(line, "$"):
			n, err := strconv.ParseInt(line[1:], 10, 64)
			if err != nil || n < 0 {
				return nil, fmt.Errorf("bad payload header %q", line)
			}
			return &exactReader{r: io.LimitReader(r, n), left: n}, nil
		default:
			return nil, fmt.Errorf("unexpected reply %q", line)
		}
	}
}

// exactReader is a LimitReader that calls a short stream an error rather
// than the end of the file.
type exactReader struct {
	r    io.Reader
	left int64
}

func (e *exactReader) Read(p []byte) (int, error) {
	n, err := e.r.Read(p)
	e.left -= int64(n)
	if err == io.EOF && e.left > 0 {
		return n, fmt.Errorf("stream ended %d bytes before the end of the file: %w", e.left, io.ErrUnexpectedEOF)
	}
	if err != nil && !errors.Is(err, io.EOF) {
		return n, fmt.Errorf("reading the file, %d bytes left: %w", e.left, err)
	}
	return n, err
}

// eofMarkReader passes a diskless payload through, holding back the last
// len(mark) bytes it has seen until it knows they are not the mark.
type eofMarkReader struct {
	r       io.Reader
	mark    []byte
	buf     []byte
	pending []byte
	done    bool
}

func (e *eofMarkReader) Read(p []byte) (int, error) {
	for {
		if e.done {
			if len(e.pending) == 0 {
				return 0, io.EOF
			}
			n := copy(p, e.pending)
			e.pending = e.pending[n:]
			return n, nil
		}
		if safe := len(e.pending) - len(e.mark); safe > 0 {
			n := copy(p, e.pending[:safe])
			e.pending = e.pending[n:]
			return n, nil
		}
		n, err := e.r.Read(e.buf)
		e.pending = append(e.pending, e.buf[:n]...)
		if i := bytes.Index(e.pending, e.mark); i >= 0 {
			e.pending, e.done = e.pending[:i], true
			continue
		}
		if err != nil {
			if errors.Is(err, io.EOF) {
				err = io.ErrUnexpectedEOF
			}
			return 0, fmt.Errorf("stream ended before the end-of-file mark: %w", err)
		}
	}
}

// idleReader fails a read that waits longer than idle.
type idleReader struct {
	conn net.Conn
	idle time.Duration
}

func (i *idleReader) Read(p []byte) (int, error) {
	_ = i.conn.SetReadDeadline(time.Now().Add(i.idle))
	return i.conn.Read(p)
}

// roundTrip sends one command and expects a simple "+..." reply.
func roundTrip(w io.Writer, r *bufio.Reader, args ...string) error {
	if _, err := w.Write(encodeCommand(args...)); err != nil {
		return fmt.Errorf("sending %s: %w", args[0], err)
	}
	line, err := r.ReadString('\n')
	if err != nil {
		return fmt.Errorf("reading the reply to %s: %w", args[0], err)
	}
	line = strings.TrimRight(line, "\r\n")
	if !strings.HasPrefix(line, "+") {
		return fmt.Errorf("node replied %q", strings.TrimPrefix(line, "-"))
	}
	return nil
}

// encodeCommand is args as a RESP array of bulk strings.
func encodeCommand(args ...string) []byte {
	var b bytes.Buffer
	fmt.Fprintf(&b, "*%d\r\n", len(args))
	for _, a := range args {
		fmt.Fprintf(&b, "$%d\r\n%s\r\n", len(a), a)
	}
	return b.Bytes()
}
