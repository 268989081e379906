package kubectlvalkey

import (
	"context"
	"os"
	"path/filepath"
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
		{name: "user without password", args: []string{"verify-tls", "a", "--user", "alice"}, wantCode: 2, wantErr: "--user needs a password: --password-file FILE or $KUBECTL_VALKEY_PASSWORD"},
		{name: "password on the command line", args: []string{"verify-tls", "a", "--user", "alice", "--password", "s3cret"}, wantCode: 2,
			wantErr: "--password is not accepted: a password on the command line is visible to every user of the machine"},
		{name: "password on the command line, after =", args: []string{"verify-tls", "a", "--password=s3cret"}, wantCode: 2, wantErr: "use --password-file FILE"},
		{name: "missing password file", args: []string{"verify-tls", "a", "--password-file", "/nonexistent/pw"}, wantCode: 1, wantErr: "reading --password-file"},
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
			both := stdout.String() + stderr.String()
			if !strings.Contains(both, tc.wantOut) {
				t.Errorf("output lacks %q:\n%s", tc.wantOut, both)
			}
			if err != nil && strings.Contains(err.Error()+both, "s3cret") {
				t.Errorf("the password is repeated back: %v\n%s", err, both)
			}
		})
	}
}

// A password reaches the verifier from --password-file or the environment,
// and from nothing else; the file wins over the environment.
func TestVerifyTLSPassword(t *testing.T) {
	dir := t.TempDir()
	file := func(name, content string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	for _, tc := range []struct {
		name    string
		args    []string
		env     string
		want    string
		wantErr string
	}{
		{name: "none", want: ""},
		{name: "environment", env: "from-env", want: "from-env"},
		{name: "file with a line break", args: []string{"--password-file", file("nl", "from-file\n")}, want: "from-file"},
		{name: "file with CRLF", args: []string{"--password-file", file("crlf", "from-file\r\n")}, want: "from-file"},
		{name: "file without a line break keeps inner ones", args: []string{"--password-file", file("raw", "a\nb")}, want: "a\nb"},
		{name: "file wins over the environment", args: []string{"--password-file", file("both", "from-file")}, env: "from-env", want: "from-file"},
		{name: "empty file", args: []string{"--password-file", file("empty", "\n")}, wantErr: "is empty"},
		{name: "user with the environment", args: []string{"--user", "alice"}, env: "from-env", want: "from-env"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			env := Env{Getenv: func(k string) string {
				if k == EnvPassword {
					return tc.env
				}
				return ""
			}}
			v, _, err := parseVerifyTLS(append([]string{"cache"}, tc.args...), env)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if v.Password != tc.want || v.Cluster != "cache" {
				t.Fatalf("password %q cluster %q, want %q and cache", v.Password, v.Cluster, tc.want)
			}
		})
	}
}
