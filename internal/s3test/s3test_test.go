package s3test

import (
	"bytes"
	"context"
	"io"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/minio/minio-go/v7"
)

// The server stores what it is given and refuses a wrong secret.
func TestServerStoresObjects(t *testing.T) {
	s := Start(t)
	s.MakeBucket(t, "things")
	ctx := context.Background()
	c := s.Client(t)
	body := bytes.Repeat([]byte("x"), 6<<20)
	// Unknown size: the multipart streaming upload a backup uses.
	if _, err := c.PutObject(ctx, "things", "a/b.bin", bytes.NewReader(body), -1, minio.PutObjectOptions{PartSize: 5 << 20}); err != nil {
		t.Fatal(err)
	}
	o, err := c.GetObject(ctx, "things", "a/b.bin", minio.GetObjectOptions{})
	if err != nil {
		t.Fatal(err)
	}
	got, err := io.ReadAll(o)
	if err != nil || !bytes.Equal(got, body) {
		t.Fatalf("read back %d bytes (%v), want %d", len(got), err, len(body))
	}
	wrong := *s
	wrong.SecretKey = "wrong"
	if _, err := wrong.Client(t).BucketExists(ctx, "things"); err == nil {
		t.Fatal("a wrong secret was accepted")
	}
}

// ListenOn puts the server on the address given, and only there.
func TestListenOn(t *testing.T) {
	// Linux answers on every address of 127.0.0.0/8, so this one needs no
	// interface of its own.
	s := Start(t, ListenOn("127.0.0.2"))
	if !strings.HasPrefix(s.Endpoint, "http://127.0.0.2:") {
		t.Fatalf("endpoint %s, want one on 127.0.0.2", s.Endpoint)
	}
	s.MakeBucket(t, "things")
	_, port, err := net.SplitHostPort(s.Host)
	if err != nil {
		t.Fatal(err)
	}
	if c, err := net.DialTimeout("tcp", net.JoinHostPort("127.0.0.1", port), time.Second); err == nil {
		_ = c.Close()
		t.Fatalf("the server answers on 127.0.0.1:%s too", port)
	}
}
