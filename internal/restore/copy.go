package restore

import (
	"context"
	"fmt"
	"sync/atomic"

	"golang.org/x/sync/errgroup"

	"github.com/gomomento/valkey-operator/internal/valkey"
)

// CopyBatch is how many keys one SCAN step asks for and one RESTORE
// round trip carries.
const CopyBatch = 500

// copyWorkers is how many batches are in flight at once: each is a DUMP
// round trip to the loader and RESTORE round trips to the primaries, so a
// few at once keep both sides busy instead of waiting on each other.
const copyWorkers = 4

// Writer writes a batch of keys where they belong.
type Writer func(ctx context.Context, keys []valkey.DumpedKey) error

// CopyKeys reads every key of loader (SCAN, then DUMP and PEXPIRETIME in
// one round trip per batch) and hands each batch to write, several
// batches at once. It returns how many keys were written. SCAN returns
// every key present for the whole scan at least once; the loader takes no
// writes, so that is every key it loaded.
func CopyKeys(ctx context.Context, loader *valkey.Node, write Writer) (int64, error) {
	var written atomic.Int64
	g, ctx := errgroup.WithContext(ctx)
	batches := make(chan []string, copyWorkers)
	g.Go(func() error {
		defer close(batches)
		var cursor uint64
		for {
			next, keys, err := loader.ScanKeys(ctx, cursor, CopyBatch)
			if err != nil {
				return fmt.Errorf("reading the loader's keys: %w", err)
			}
			if len(keys) > 0 {
				select {
				case batches <- keys:
				case <-ctx.Done():
					return ctx.Err()
				}
			}
			if next == 0 {
				return nil
			}
			cursor = next
		}
	})
	for range copyWorkers {
		g.Go(func() error {
			for keys := range batches {
				dumped, err := loader.DumpKeys(ctx, keys)
				if err != nil {
					return fmt.Errorf("reading the loader's keys: %w", err)
				}
				if err := write(ctx, dumped); err != nil {
					return err
				}
				written.Add(int64(len(dumped)))
			}
			return nil
		})
	}
	err := g.Wait()
	return written.Load(), err
}
