// Command valkey-operator runs the Valkey operator's controllers.
package main

import (
	"os"

	"github.com/gomomento/valkey-operator/internal/controller"
	"github.com/gomomento/valkey-operator/internal/operatorcmd"
)

func main() {
	os.Exit(operatorcmd.Run(os.Args[1:], controller.Runtime{}))
}
