// Command pingloop is the limit beside the operator's idle cost in the
// fleet benchmark: the least a watcher of many Valkey nodes can do. It
// keeps one connection to each address, opened with the client the
// operator uses, and sends each node one PING per interval, until SIGTERM.
// It prints "ready" once every connection is open and, when stopped, how
// many PINGs it sent and how many failed.
//
//	pingloop -interval 30s ADDR...
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"sync"
	"syscall"
	"time"

	vk "github.com/gomomento/valkey-operator/internal/valkey"
)

func main() {
	interval := flag.Duration("interval", 30*time.Second, "how often each node gets a PING")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	sent, failed, err := run(ctx, *interval, flag.Args(), func() { fmt.Println("ready") })
	if err != nil {
		fmt.Fprintln(os.Stderr, "pingloop:", err)
		os.Exit(1)
	}
	fmt.Printf("pings %d failed %d\n", sent, failed)
}

// run dials every address, then PINGs them all once per interval, spread
// evenly over it as a steady resync spreads its visits, until ctx ends.
func run(ctx context.Context, interval time.Duration, addrs []string, ready func()) (sent, failed int, err error) {
	nodes := make([]*vk.Node, 0, len(addrs))
	defer func() {
		for _, n := range nodes {
			n.Close()
		}
	}()
	for _, a := range addrs {
		n, err := vk.Dial(ctx, vk.Target{Address: a})
		if err != nil {
			return 0, 0, err
		}
		nodes = append(nodes, n)
	}
	ready()
	var mu sync.Mutex
	var wg sync.WaitGroup
	for i, n := range nodes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			// Each node its own phase, so the loop does not wake every
			// node at the same instant.
			next := time.Now().Add(time.Duration(i) * interval / time.Duration(len(nodes)))
			for {
				select {
				case <-ctx.Done():
					return
				case <-time.After(time.Until(next)):
				}
				next = next.Add(interval)
				err := n.Ping(ctx)
				mu.Lock()
				sent++
				if err != nil && ctx.Err() == nil {
					failed++
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	return sent, failed, nil
}
