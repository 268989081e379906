package valkey

import (
	"bufio"
	"bytes"
	"context"
	"io"
	"net"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

func TestReadSyncHeader(t *testing.T) {
	mark := strings.Repeat("m", eofMarkLength)
	payload := "REDIS0011" + strings.Repeat("x", 100_000) + "end"
	cases := []struct {
		name    string
		stream  string
		want    string
		wantErr string
	}{
		{name: "length form", stream: "$" + strconv.Itoa(len(payload)) + "\r\n" + payload, want: payload},
		{name: "length form with newlines first and data after", stream: "\n\n$" + strconv.Itoa(len(payload)) + "\r\n" + payload + "*1\r\n$4\r\nPING\r\n", want: payload},
		{name: "diskless form", stream: "$EOF:" + mark + "\r\n" + payload + mark, want: payload},
		{name: "diskless form with data after the mark", stream: "\n$EOF:" + mark + "\r\n" + payload + mark + "*1\r\n$4\r\nPING\r\n", want: payload},
		{name: "diskless payload shorter than the mark", stream: "$EOF:" + mark + "\r\nab" + mark, want: "ab"},
		{name: "length form cut short", stream: "$" + strconv.Itoa(len(payload)) + "\r\n" + payload[:500], wantErr: "bytes before the end of the file"},
		{name: "diskless form cut short", stream: "$EOF:" + mark + "\r\n" + payload, wantErr: "before the end-of-file mark"},
		{name: "error reply", stream: "-NOMASTERLINK Can't SYNC while not connected with my master\r\n", wantErr: "NOMASTERLINK"},
		{name: "short mark", stream: "$EOF:abc\r\n", wantErr: "mark is 3 bytes"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			// One byte per read, so that the mark straddles reads.
			r := bufio.NewReaderSize(iotestOneByte{strings.NewReader(tc.stream)}, 16)
			body, err := readSyncHeader(r)
			var got []byte
			if err == nil {
				got, err = io.ReadAll(body)
			}
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error = %v, want one containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != tc.want {
				t.Fatalf("payload is %d bytes, want %d (equal: %v)", len(got), len(tc.want), bytes.Equal(got, []byte(tc.want)))
			}
		})
	}
}

type iotestOneByte struct{ r io.Reader }

func (o iotestOneByte) Read(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	return o.r.Read(p[:1])
}

// A real node streams its RDB both ways: written to disk first and
// diskless; the payload is a whole RDB file holding the key written.
func TestSyncSnapshotFromServer(t *testing.T) {
	for _, diskless := range []string{"no", "yes"} {
		t.Run("diskless="+diskless, func(t *testing.T) {
			s := startServer(t, valkeyArgv(t), "port", "repl-diskless-sync "+diskless, "repl-diskless-sync-delay 0")
			conn, err := net.DialTimeout("tcp", s.Addr(), 5*time.Second)
			if err != nil {
				t.Fatal(err)
			}
			defer func() { _ = conn.Close() }()
			r := bufio.NewReader(conn)
			if err := roundTrip(conn, r, "AUTH", moverUser, moverPassword); err != nil {
				t.Fatal(err)
			}
			if err := roundTrip(conn, r, "SET", "snapshot-key", "snapshot-value"); err != nil {
				t.Fatal(err)
			}
			// Not testCtx: its deadline closes the connection, and on a
			// loaded machine that can come before the kill it is meant to
			// show.
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			snap, err := SyncSnapshot(ctx, Target{Address: s.Addr(), Username: moverUser, Password: moverPassword})
			if err != nil {
				t.Fatal(err)
			}
			got, err := io.ReadAll(snap)
			_ = snap.Close()
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.HasPrefix(got, []byte("REDIS")) || !bytes.Contains(got, []byte("snapshot-value")) {
				t.Fatalf("payload of %d bytes is not an RDB holding the key: %q", len(got), got[:min(len(got), 64)])
			}
			// An RDB ends with the EOF opcode (0xFF) and an 8-byte checksum.
			if len(got) < 9 || got[len(got)-9] != 0xFF {
				t.Fatalf("payload does not end with the RDB EOF opcode and checksum: % x", got[max(0, len(got)-12):])
			}
		})
	}
}

func TestSyncSnapshotRefusedWithoutGrant(t *testing.T) {
	s := startServer(t, valkeyArgv(t), "port")
	_, err := SyncSnapshot(testCtx(t), s.operatorTarget())
	if err == nil || !strings.Contains(err.Error(), "NOPERM") {
		t.Fatalf("error = %v, want a NOPERM refusal", err)
	}
}

// A node lost mid-stream ends the snapshot with an error, in both forms,
// never with a short file that reads as whole.
func TestSyncSnapshotNodeLostMidStream(t *testing.T) {
	for _, diskless := range []string{"no", "yes"} {
		t.Run("diskless="+diskless, func(t *testing.T) {
			s := startServer(t, valkeyArgv(t), "port", "repl-diskless-sync "+diskless, "repl-diskless-sync-delay 0", "enable-debug-command yes")
			conn, err := net.DialTimeout("tcp", s.Addr(), 5*time.Second)
			if err != nil {
				t.Fatal(err)
			}
			defer func() { _ = conn.Close() }()
			r := bufio.NewReader(conn)
			if err := roundTrip(conn, r, "AUTH", moverUser, moverPassword); err != nil {
				t.Fatal(err)
			}
			// Far more than the socket buffers hold, so the stream is cut.
			_ = conn.SetReadDeadline(time.Now().Add(time.Minute))
			if err := roundTrip(conn, r, "DEBUG", "POPULATE", "1000000", "lost", "64"); err != nil {
				t.Fatal(err)
			}
			// Not testCtx: its deadline closes the connection, and on a
			// loaded machine that can come before the kill it is meant to
			// show.
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			snap, err := SyncSnapshot(ctx, Target{Address: s.Addr(), Username: moverUser, Password: moverPassword})
			if err != nil {
				t.Fatal(err)
			}
			defer func() { _ = snap.Close() }()
			if _, err := io.ReadFull(snap, make([]byte, 4096)); err != nil {
				t.Fatal(err)
			}
			if err := syscall.Kill(-s.pid, syscall.SIGKILL); err != nil {
				t.Fatal(err)
			}
			n, err := io.Copy(io.Discard, snap)
			want := map[string]string{"no": "before the end of the file", "yes": "before the end-of-file mark"}[diskless]
			if err == nil || !strings.Contains(err.Error(), want) {
				t.Fatalf("after %d more bytes: error %v, want the stream reported cut (%q)", n, err, want)
			}
			t.Logf("cut after %d more bytes: %v", n, err)
		})
	}
}
