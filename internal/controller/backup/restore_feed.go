package backup

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync"

	"github.com/gomomento/valkey-operator/internal/valkey"
)

// restoreFeed is the operator's one listener for restore loaders, opened
// by the first restore that needs it (an operator that never restores
// never listens) and closed with the manager.
type restoreFeed struct {
	address, host string

	mu     sync.Mutex
	feeder *valkey.Feeder
	port   int
}

// get returns the feeder and the host and port loaders dial.
func (f *restoreFeed) get() (*valkey.Feeder, string, int, error) {
	if f.host == "" {
		return nil, "", 0, errors.New("the operator does not know an address its restore loaders can reach it at: set --restore-feed-host, or POD_IP in its environment")
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.feeder == nil {
		ln, err := net.Listen("tcp", f.address)
		if err != nil {
			return nil, "", 0, fmt.Errorf("listening for restore loaders on %s: %w", f.address, err)
		}
		f.feeder, f.port = valkey.NewFeeder(ln), ln.Addr().(*net.TCPAddr).Port
	}
	return f.feeder, f.host, f.port, nil
}

// Start waits for the manager to stop, then closes the listener.
func (f *restoreFeed) Start(ctx context.Context) error {
	<-ctx.Done()
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.feeder != nil {
		_ = f.feeder.Close()
		f.feeder = nil
	}
	return nil
}

// NeedLeaderElection: only the leader restores.
func (f *restoreFeed) NeedLeaderElection() bool { return true }
