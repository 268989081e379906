package restore

import (
	"context"
	"fmt"

	"github.com/gomomento/valkey-operator/internal/valkey"
)

// CopyBatch is how many keys one SCAN step asks for and one RESTORE
// round trip carries.
const CopyBatch = 500

// Writer writes a batch of keys where they belong.
type Writer func(ctx context.Context, keys []valkey.DumpedKey) error

// CopyKeys reads every key of loader (SCAN, then DUMP and PEXPIRETIME in
// one round trip per batch) and hands each batch to write. It returns
// how many keys were written. SCAN returns every key present for the
// whole scan at least once; the loader takes no writes, so that is every
// key it loaded.
func CopyKeys(ctx context.Context, loader *valkey.Node, write Writer) (int64, error) {
	var cursor uint64
	var written int64
	for {
		next, keys, err := loader.ScanKeys(ctx, cursor, CopyBatch)
		if err != nil {
			return written, fmt.Errorf("reading the loader's keys: %w", err)
		}
		dumped, err := loader.DumpKeys(ctx, keys)
		if err != nil {
			return written, fmt.Errorf("reading the loader's keys: %w", err)
		}
		if err := write(ctx, dumped); err != nil {
			return written, err
		}
		written += int64(len(dumped))
		if next == 0 {
			return written, nil
		}
		cursor = next
	}
}
