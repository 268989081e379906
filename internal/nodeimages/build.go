package nodeimages

import (
	"context"
	"fmt"
	"path/filepath"
)

// BuildAll builds every image the rendered pods and the operator's
// Deployment name into outDir, with the repository at repoRoot (for
// bin/valkey9 and cmd/valkey-operator).
func BuildAll(ctx context.Context, repoRoot, outDir string) ([]Image, error) {
	var imgs []Image
	steps := []func() (Image, error){
		func() (Image, error) { return BuildValkey(ctx, Valkey8(), outDir) },
		func() (Image, error) {
			return BuildValkey(ctx, Valkey9(filepath.Join(repoRoot, "bin", "valkey9")), outDir)
		},
		func() (Image, error) { return BuildExporter(ctx, Exporter(), outDir) },
		func() (Image, error) { return BuildOperator(ctx, Operator(repoRoot), outDir) },
	}
	for _, step := range steps {
		img, err := step()
		if err != nil {
			return imgs, fmt.Errorf("build images: %w", err)
		}
		imgs = append(imgs, img)
	}
	return imgs, nil
}
