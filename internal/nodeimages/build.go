package nodeimages

import (
	"context"
	"fmt"
	"path/filepath"
)

// Options of BuildAll.
type Options struct {
	// RepoRoot is the repository: bin/valkey9 and cmd/valkey-operator.
	RepoRoot string
	// OutDir receives the archives.
	OutDir string
	// OperatorName and OperatorVersion override Operator(RepoRoot)'s
	// name and stamped version when set.
	OperatorName, OperatorVersion string
}

// BuildAll builds every image the rendered pods and the operator's
// Deployment name: Valkey8, Valkey9, Exporter and Operator.
func BuildAll(ctx context.Context, o Options) ([]Image, error) {
	op := Operator(o.RepoRoot)
	if o.OperatorName != "" {
		op.Name = o.OperatorName
	}
	if o.OperatorVersion != "" {
		op.Version = o.OperatorVersion
	}
	var imgs []Image
	steps := []func() (Image, error){
		func() (Image, error) { return BuildValkey(ctx, Valkey8(), o.OutDir) },
		func() (Image, error) {
			return BuildValkey(ctx, Valkey9(filepath.Join(o.RepoRoot, "bin", "valkey9")), o.OutDir)
		},
		func() (Image, error) { return BuildExporter(ctx, Exporter(), o.OutDir) },
		func() (Image, error) { return BuildOperator(ctx, op, o.OutDir) },
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
