// Command crdref writes the API reference from the CRDs:
//
//	go run ./hack/crdref [-crds config/crd/bases] [-out docs/reference.md]
//
// make generate runs it after controller-gen, and a test in internal/crdref
// fails while the committed reference differs from what this writes.
package main

import (
	"flag"
	"fmt"
	"os"

	"github.com/gomomento/valkey-operator/internal/crdref"
)

func main() {
	crds := flag.String("crds", "config/crd/bases", "directory of the CRD YAML files")
	out := flag.String("out", "docs/reference.md", "file to write")
	flag.Parse()
	doc, err := crdref.RenderDir(*crds)
	if err == nil {
		err = os.WriteFile(*out, []byte(doc), 0o644)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "crdref:", err)
		os.Exit(1)
	}
}
