package kubectlvalkey

import (
	"fmt"
	"os"
	"strings"
)

// EnvPassword is the environment variable a password may come from when
// no --password-file is given.
const EnvPassword = "KUBECTL_VALKEY_PASSWORD"

// errPasswordOnCommandLine refuses --password: anything on a command line
// is readable by every user of the machine (ps, /proc/PID/cmdline) and
// stays in the shell's history.
var errPasswordOnCommandLine = usageErrorf("--password is not accepted: a password on the command line is visible " +
	"to every user of the machine and kept in shell history; use --password-file FILE or $" + EnvPassword)

// password reads the password from file when one is named, else from the
// environment; "" when neither gives one. A file's one trailing line break
// is not part of the password, as echo and most editors add one.
func password(file string, getenv func(string) string) (string, error) {
	if file == "" {
		return getenv(EnvPassword), nil
	}
	b, err := os.ReadFile(file)
	if err != nil {
		return "", fmt.Errorf("reading --password-file: %w", err)
	}
	p := strings.TrimSuffix(strings.TrimSuffix(string(b), "\n"), "\r")
	if p == "" {
		return "", usageErrorf("--password-file %s is empty", file)
	}
	return p, nil
}
