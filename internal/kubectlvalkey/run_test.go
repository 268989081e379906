package kubectlvalkey

import (
	"context"
	"os"
	"strings"
	"testing"
)

// Command lines that fail or stop before any cluster access.
func TestRunCommandLine(t *testing.T) {
	cases := []struct {
		name     string
		args     []string
		wantCode int
		wantErr  string
		wantOut  string // on stdout or stderr
	}{
		{name: "no command", args: nil, wantCode: 2, wantErr: "no command given", wantOut: "Usage:"},
		{name: "unknown command", args: []string{"scale"}, wantCode: 2, wantErr: `unknown command "scale"`},
		{name: "help", args: []string{"help"}, wantCode: 0, wantOut: "verify-tls CLUSTER"},
		{name: "command help", args: []string{"verify-tls", "--help"}, wantCode: 0, wantOut: "--address"},
		{name: "no cluster", args: []string{"status", "-n", "app"}, wantCode: 2, wantErr: "want exactly one CLUSTER argument, got 0"},
		{name: "two clusters", args: []string{"status", "a", "b"}, wantCode: 2, wantErr: "got 2"},
		{name: "unknown flag", args: []string{"status", "a", "--bogus"}, wantCode: 2, wantErr: "unknown flag: --bogus"},
		{name: "user without password", args: []string{"verify-tls", "a", "--user", "alice"}, wantCode: 2, wantErr: "--user needs a password: --password-file FILE or $VALKEY_PASSWORD"},
		{name: "a password on the command line is refused", args: []string{"verify-tls", "a", "--user", "alice", "--password", "s3cret"}, wantCode: 2, wantErr: "--password is refused"},
		{name: "unreadable password file", args: []string{"verify-tls", "a", "--user", "alice", "--password-file", "/nonexistent/pw"}, wantCode: 1, wantErr: "reading --password-file"},
		{name: "unreadable CA file", args: []string{"verify-tls", "a", "--ca", "/nonexistent/ca.crt"}, wantCode: 1, wantErr: "reading --ca"},
		{
			name:     "flags after the cluster reach the kubeconfig",
			args:     []string{"status", "cache", "-n", "app", "--kubeconfig", "/nonexistent/kubeconfig"},
			wantCode: 1,
			wantErr:  "loading kubeconfig",
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var stdout, stderr strings.Builder
			err := Run(context.Background(), tc.args, Env{Stdout: &stdout, Stderr: &stderr})
			if got := ExitCode(err); got != tc.wantCode {
				t.Errorf("exit code = %d (err %v), want %d", got, err, tc.wantCode)
			}
			if tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)) {
				t.Errorf("err = %v, want it to contain %q", err, tc.wantErr)
			}
			if both := stdout.String() + stderr.String(); !strings.Contains(both, tc.wantOut) {
				t.Errorf("output lacks %q:\n%s", tc.wantOut, both)
			}
		})
	}
}

func TestReadPassword(t *testing.T) {
	dir := t.TempDir()
	file := dir + "/pw"
	if err := os.WriteFile(file, []byte("from-file\nsecond line\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	env := Env{Getenv: func(k string) string {
		if k == EnvPassword {
			return "from-env"
		}
		return ""
	}}
	for _, tc := range []struct {
		file string
		env  Env
		want string
	}{
		{file: file, env: env, want: "from-file"},
		{env: env, want: "from-env"},
		{env: Env{Getenv: func(string) string { return "" }}, want: ""},
	} {
		got, err := readPassword(tc.file, tc.env)
		if err != nil || got != tc.want {
			t.Errorf("readPassword(%q) = %q, %v; want %q", tc.file, got, err, tc.want)
		}
	}
}
