package chartinstall

import (
	"reflect"
	"testing"
)

func TestImageValues(t *testing.T) {
	for _, tc := range []struct {
		image, repo, tag string
		wantErr          bool
	}{
		{image: "gomomento/valkey-operator:latest", repo: "gomomento/valkey-operator", tag: "latest"},
		{image: "registry.example.com:5000/team/valkey-operator:v0.1.0", repo: "registry.example.com:5000/team/valkey-operator", tag: "v0.1.0"},
		// A registry's port is not a tag.
		{image: "registry.example.com:5000/valkey-operator", wantErr: true},
		{image: "valkey-operator", wantErr: true},
		{image: "gomomento/valkey-operator@sha256:03c120a878fcd2be7cf7778b3c3f0e1a4ef8ab01913410f09de985020693eb25", wantErr: true},
	} {
		got, err := ImageValues(tc.image, "IfNotPresent")
		if (err != nil) != tc.wantErr {
			t.Errorf("ImageValues(%q): error %v, want one: %v", tc.image, err, tc.wantErr)
			continue
		}
		if tc.wantErr {
			continue
		}
		want := map[string]any{"image": map[string]any{"repository": tc.repo, "tag": tc.tag, "pullPolicy": "IfNotPresent"}}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("ImageValues(%q) = %v, want %v", tc.image, got, want)
		}
	}
}
