package localkube

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func TestExpand(t *testing.T) {
	vars := map[string]string{"POD_IP": "127.10.0.7", "NAME": "n-0", "EMPTY": ""}
	for _, tc := range []struct{ in, want string }{
		{"--bind $(POD_IP)", "--bind 127.10.0.7"},
		{"$(NAME).$(NAME)", "n-0.n-0"},
		{"$(MISSING)", "$(MISSING)"},
		{"$$(POD_IP)", "$(POD_IP)"},
		{"$$$(POD_IP)", "$127.10.0.7"},
		{"cost $5", "cost $5"},
		{"trailing $", "trailing $"},
		{"open $(POD_IP", "open $(POD_IP"},
		{"[$(EMPTY)]", "[]"},
	} {
		if got := expand(tc.in, mapLookup(vars)); got != tc.want {
			t.Errorf("expand(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestPathRewrite(t *testing.T) {
	p := newPathMap(map[string]string{
		"/etc/valkey":     "/pods/p/volumes/config",
		"/etc/valkey/tls": "/pods/p/volumes/tls",
		"/var/lib/valkey": "/pods/p/volumes/data",
	})
	for _, tc := range []struct{ in, want string }{
		{"/etc/valkey/tls/tls.crt", "/pods/p/volumes/tls/tls.crt"},
		{"/etc/valkey/valkey.conf", "/pods/p/volumes/config/valkey.conf"},
		{"--tls-cert-file=/etc/valkey/tls/tls.crt", "--tls-cert-file=/pods/p/volumes/tls/tls.crt"},
		{"dir /var/lib/valkey\ncluster-config-file /var/lib/valkey/nodes.conf\n", "dir /pods/p/volumes/data\ncluster-config-file /pods/p/volumes/data/nodes.conf\n"},
		{`aclfile "/etc/valkey/acl/users.acl"`, `aclfile "/pods/p/volumes/config/acl/users.acl"`},
		{"/etc/valkey/tls.bak", "/pods/p/volumes/config/tls.bak"},
		{"/etc/valkeyx/a", "/etc/valkeyx/a"},
		{"/opt/etc/valkey/a", "/opt/etc/valkey/a"},
		{"no paths here", "no paths here"},
		{"/etc/valkey", "/pods/p/volumes/config"},
	} {
		if got := p.rewrite(tc.in); got != tc.want {
			t.Errorf("rewrite(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
	if got, ok := p.resolve("/etc/valkey/tls/ca.crt"); !ok || got != "/pods/p/volumes/tls/ca.crt" {
		t.Errorf("resolve = %q, %v", got, ok)
	}
	if _, ok := p.resolve("/tmp/x"); ok {
		t.Error("resolve of an unmounted path succeeded")
	}
}

func TestImageMapping(t *testing.T) {
	m := DefaultImageMappings("/opt/v9")
	for _, tc := range []struct {
		image string
		want  string // "" = no mapping
	}{
		{"valkey/valkey:8.0.1", "8"},
		{"valkey/valkey:9.0.1", "9"},
		{"docker.io/valkey/valkey:9.0.1-alpine", "9"},
		{"valkey:latest", "8"},
		{"registry:5000/valkey/valkey", "8"},
		{"valkey/valkey@sha256:abc", "8"},
		{"valkey/valkey:9.0.1@sha256:abc", "9"},
		{"bitnami/valkey-cluster:8.0", ""},
		{"busybox", ""},
		{"oliver006/redis_exporter:v1.45.0", "exporter"},
		{"registry.example/mirror/redis_exporter", "exporter"},
	} {
		got := findMapping(m, tc.image)
		switch {
		case tc.want == "" && got != nil:
			t.Errorf("%s mapped, want none", tc.image)
		case tc.want == "exporter" && (got == nil || got.Repository != "redis_exporter"):
			t.Errorf("%s not mapped to the exporter", tc.image)
		case tc.want == "9" && (got == nil || got.Tag != "9.*"):
			t.Errorf("%s not mapped to Valkey 9", tc.image)
		case tc.want == "8" && (got == nil || got.Tag != ""):
			t.Errorf("%s not mapped to the host Valkey", tc.image)
		}
	}
	argv, err := resolveArgv(m, "valkey/valkey:8.0.1", []string{"valkey-server"}, []string{"--port", "6379"})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasSuffix(argv[0], "/valkey-server") || argv[1] != "--port" {
		t.Errorf("argv = %q", argv)
	}
	// The entrypoint: arguments alone run under the default command.
	argv, err = resolveArgv(m, "valkey/valkey:8.0.1", nil, []string{"/etc/valkey/valkey.conf"})
	if err != nil || !strings.HasSuffix(argv[0], "/valkey-server") || argv[1] != "/etc/valkey/valkey.conf" {
		t.Errorf("argv = %q, %v", argv, err)
	}
	// The exporter's container sets only flags, for the image's entrypoint.
	exporter := []ImageMapping{{Repository: "redis_exporter", Commands: map[string][]string{"redis_exporter": {"/bin/true"}}, DefaultCommand: []string{"redis_exporter"}}}
	argv, err = resolveArgv(exporter, "oliver006/redis_exporter:v1.45.0", nil, []string{"--redis.user=x"})
	if err != nil || !slices.Equal(argv, []string{"/bin/true", "--redis.user=x"}) {
		t.Errorf("exporter argv = %q, %v", argv, err)
	}
	_, err = resolveArgv(m, "valkey/valkey:9.0.1", []string{"valkey-server"}, nil)
	if err == nil || !strings.Contains(err.Error(), "install-valkey9") {
		t.Errorf("missing Valkey 9 tree: err = %v, want a hint to install it", err)
	}
}

func TestWriteAtomic(t *testing.T) {
	dir := t.TempDir()
	changed, err := writeAtomic(dir, map[string]fileProjection{
		"a":     {data: []byte("1"), mode: 0o644},
		"sub/b": {data: []byte("2"), mode: 0o400},
	})
	if err != nil || !changed {
		t.Fatalf("first write: changed=%v err=%v", changed, err)
	}
	ts1, err := os.Readlink(filepath.Join(dir, "..data"))
	if err != nil || !strings.HasPrefix(ts1, "..20") {
		t.Fatalf("..data -> %q, %v", ts1, err)
	}
	if l, _ := os.Readlink(filepath.Join(dir, "a")); l != "..data/a" {
		t.Errorf("a -> %q", l)
	}
	if l, _ := os.Readlink(filepath.Join(dir, "sub")); l != "..data/sub" {
		t.Errorf("sub -> %q", l)
	}
	if st, _ := os.Stat(filepath.Join(dir, "sub", "b")); st == nil || st.Mode().Perm() != 0o400 {
		t.Errorf("mode of sub/b: %v", st)
	}
	changed, err = writeAtomic(dir, map[string]fileProjection{
		"a":     {data: []byte("1"), mode: 0o644},
		"sub/b": {data: []byte("2"), mode: 0o400},
	})
	if err != nil || changed {
		t.Fatalf("same payload: changed=%v err=%v", changed, err)
	}
	changed, err = writeAtomic(dir, map[string]fileProjection{"a": {data: []byte("3"), mode: 0o644}})
	if err != nil || !changed {
		t.Fatalf("update: changed=%v err=%v", changed, err)
	}
	ts2, _ := os.Readlink(filepath.Join(dir, "..data"))
	if ts2 == ts1 {
		t.Error("..data was not swapped to a new directory")
	}
	if _, err := os.Stat(filepath.Join(dir, ts1)); !os.IsNotExist(err) {
		t.Errorf("old version %s still there", ts1)
	}
	if _, err := os.Lstat(filepath.Join(dir, "sub")); !os.IsNotExist(err) {
		t.Error("dropped key sub/b still visible")
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "a")); string(b) != "3" {
		t.Errorf("a = %q", b)
	}
	if _, err := writeAtomic(dir, map[string]fileProjection{"../x": {data: nil, mode: 0o644}}); err == nil {
		t.Error("a path escaping the volume was accepted")
	}
}

func TestHostsBlock(t *testing.T) {
	base := "127.0.0.1\tlocalhost\n::1\tlocalhost\n"
	alive := func(pid int) bool { return pid != 666 }
	block := renderHostsBlock("/a", 1, map[string][]string{
		"a.s.ns.svc.cluster.local": {"127.10.0.2"},
		"s.ns.svc.cluster.local":   {"127.10.0.2", "127.10.0.3"},
	})
	want := "# BEGIN valkey-local /a pid 1\n127.10.0.2\ta.s.ns.svc.cluster.local\n127.10.0.2\ts.ns.svc.cluster.local\n127.10.0.3\ts.ns.svc.cluster.local\n# END valkey-local /a\n"
	if block != want {
		t.Fatalf("block:\n%s\nwant:\n%s", block, want)
	}
	with := replaceHostsBlock(base, "/a", block, alive)
	if with != base+block {
		t.Errorf("added:\n%s", with)
	}
	again := replaceHostsBlock(with, "/a", renderHostsBlock("/a", 1, nil), alive)
	if strings.Count(again, "# BEGIN") != 1 || strings.Contains(again, "127.10.0.2") {
		t.Errorf("replaced:\n%s", again)
	}
	other := renderHostsBlock("/b", 2, map[string][]string{"x.ns.svc.cluster.local": {"127.10.0.9"}})
	both := replaceHostsBlock(with, "/b", other, alive)
	if both != base+block+other {
		t.Errorf("second owner:\n%s", both)
	}
	if got := replaceHostsBlock(both, "/a", "", alive); got != base+other {
		t.Errorf("removed /a, want /b kept:\n%s", got)
	}
	if got := replaceHostsBlock(with, "/a", "", alive); got != base {
		t.Errorf("removed:\n%q\nwant\n%q", got, base)
	}
	// A block whose process is gone (a killed run) is dropped by the next
	// writer; one without a process (an older format) is kept.
	dead := renderHostsBlock("/dead", 666, map[string][]string{"s.ns.svc.cluster.local": {"127.10.0.66"}})
	legacy := "# BEGIN valkey-local /old\n127.10.0.77\tz.ns.svc.cluster.local\n# END valkey-local /old\n"
	if got := replaceHostsBlock(base+dead+legacy, "/a", block, alive); got != base+legacy+block {
		t.Errorf("with a dead owner's block:\n%s", got)
	}
	path := filepath.Join(t.TempDir(), "hosts")
	if err := os.WriteFile(path, []byte("10.0.0.1 x"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := updateHostsFile(path, "/a", block); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(path)
	if string(b) != "10.0.0.1 x\n"+block {
		t.Errorf("file:\n%s", b)
	}
}
