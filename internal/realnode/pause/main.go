// Command pause is the sandbox ("pause") image of the real-node tests, and a
// do-nothing container: it waits for SIGTERM or SIGINT and exits 0. It is
// built static (CGO_ENABLED=0), so an image holding this file alone runs.
package main

import (
	"os"
	"os/signal"
	"syscall"
)

func main() {
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGTERM, syscall.SIGINT)
	<-sig
}
