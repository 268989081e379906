package s3test

import (
	"bytes"
	"context"
	"io"
	"testing"

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
