// Command build-images writes the images the operator's pods name (Valkey
// 8 and 9, the metrics exporter, the operator) as OCI image layout tars
// into a directory, for `ctr -n k8s.io images import` on a node without a
// registry:
//
//	go run ./internal/nodeimages/cmd/build-images -out bin/images
//	for f in bin/images/*.oci.tar; do ctr -n k8s.io images import "$f"; done
//
// It prints one line per image: name, manifest digest, archive.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"

	"github.com/gomomento/valkey-operator/internal/nodeimages"
	"github.com/gomomento/valkey-operator/internal/testbin"
)

func main() {
	out := flag.String("out", "bin/images", "directory to write the image archives to")
	operatorName := flag.String("operator-image", "", "name of the operator image (default gomomento/valkey-operator:latest, as config/manager and the chart)")
	version := flag.String("version", "", "version stamped into the operator (default dev, as the Dockerfile)")
	client := flag.Bool("client", false, "also build "+nodeimages.Client().Name+", the image test/realnode's client pods run valkey-cli and openssl from")
	flag.Parse()
	root, err := testbin.RepoRoot()
	if err != nil {
		fmt.Fprintln(os.Stderr, "build-images:", err)
		os.Exit(1)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	imgs, err := nodeimages.BuildAll(ctx, nodeimages.Options{
		RepoRoot: root, OutDir: *out, OperatorName: *operatorName, OperatorVersion: *version,
	})
	if err == nil && *client {
		var img nodeimages.Image
		img, err = nodeimages.BuildClient(ctx, nodeimages.Client(), *out)
		if err == nil {
			imgs = append(imgs, img)
		}
	}
	for _, img := range imgs {
		fmt.Printf("%s\t%s\t%s\n", img.FullName, img.Digest, img.Path)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "build-images:", err)
		os.Exit(1)
	}
}
