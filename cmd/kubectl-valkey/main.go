// Command kubectl-valkey is the kubectl plugin for Valkey clusters run by
// the Valkey operator: "kubectl valkey status", "verify-tls", "backup" and
// "restore". kubectl finds it by its name on PATH.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"

	"github.com/gomomento/valkey-operator/internal/kubectlvalkey"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	err := kubectlvalkey.Run(ctx, os.Args[1:], kubectlvalkey.Env{Stdout: os.Stdout, Stderr: os.Stderr})
	stop()
	code := kubectlvalkey.ExitCode(err)
	if code != 0 {
		fmt.Fprintln(os.Stderr, "kubectl valkey:", err)
	}
	os.Exit(code)
}
