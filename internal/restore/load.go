package restore

import (
	"context"
	"fmt"
	"time"

	"github.com/gomomento/valkey-operator/internal/valkey"
)

// loadPoll is how often a loader is asked whether its sync is done.
const loadPoll = 100 * time.Millisecond

// Load has loader replicate from feeder, reachable from the loader at
// host:port, until it holds the whole file src opens, then stop
// replicating with the data kept. The loader must be a server not in
// cluster mode whose default user the caller authenticated as.
func Load(ctx context.Context, feeder *valkey.Feeder, host string, port int, loader *valkey.Node, src valkey.FeedSource) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	token, sent, err := feeder.Offer(ctx, src)
	if err != nil {
		return err
	}
	if err := loader.ConfigSet(ctx, "masterauth", token); err != nil {
		return fmt.Errorf("giving the loader its feed token: %w", err)
	}
	if err := loader.ReplicaOf(ctx, host, port); err != nil {
		return err
	}
	fed := false
	tick := time.NewTicker(loadPoll)
	defer tick.Stop()
	for {
		select {
		case err := <-sent:
			if err != nil {
				return fmt.Errorf("feeding the loader: %w", err)
			}
			fed = true
		case <-ctx.Done():
			return fmt.Errorf("waiting for the loader to load the file: %w", ctx.Err())
		case <-tick.C:
		}
		if !fed {
			continue
		}
		repl, err := loader.InfoReplication(ctx)
		if err != nil {
			return fmt.Errorf("asking the loader how far it is: %w", err)
		}
		if repl.LinkUp() {
			break
		}
	}
	if err := loader.ReplicaOf(ctx, "", 0); err != nil {
		return err
	}
	return nil
}
