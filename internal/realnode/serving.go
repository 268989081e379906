package realnode

import (
	"context"
	"fmt"
	"net/http"
	"time"
)

// waitServing waits until the daemon d answers 200 at url (its readiness
// or health endpoint), failing at once when it exits.
func waitServing(ctx context.Context, d *daemon, url string, timeout time.Duration, what string) error {
	hc := &http.Client{Timeout: 2 * time.Second}
	defer hc.CloseIdleConnections()
	if err := poll(ctx, timeout, func() (bool, error) {
		if d.exited() {
			return false, fmt.Errorf("%s exited: %v", d.name, d.err)
		}
		resp, err := hc.Get(url)
		if err != nil {
			return false, nil
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK, nil
	}); err != nil {
		return fmt.Errorf("waiting for %s (log %s): %w", what, d.log, err)
	}
	return nil
}
