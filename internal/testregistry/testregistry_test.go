package testregistry

import (
	"context"
	"errors"
	"net/http"
	"testing"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/remote/transport"
)

// An image pushed with the user's credentials is read back with them, by
// digest; without them, or with a wrong password, the registry refuses.
func TestPushPullNeedsCredentials(t *testing.T) {
	r := Start(t)
	img, err := random.Image(1024, 1)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	full, err := r.Push(ctx, img, "valkey/valkey:8.0.1")
	if err != nil {
		t.Fatal(err)
	}
	ref, err := name.ParseReference(full, name.Insecure)
	if err != nil {
		t.Fatal(err)
	}
	got, err := remote.Image(ref, remote.WithAuth(&authn.Basic{Username: r.User, Password: r.Password}))
	if err != nil {
		t.Fatalf("pulling %s with the credentials: %v", full, err)
	}
	want, _ := img.Digest()
	if d, _ := got.Digest(); d != want {
		t.Fatalf("pulled digest %s, pushed %s", d, want)
	}
	for _, auth := range []authn.Authenticator{authn.Anonymous, &authn.Basic{Username: r.User, Password: "wrong"}} {
		_, err := remote.Image(ref, remote.WithAuth(auth))
		var terr *transport.Error
		if !errors.As(err, &terr) || terr.StatusCode != http.StatusUnauthorized {
			t.Errorf("pull with %T: %v, want 401", auth, err)
		}
	}
}
