package backup

import (
	"context"
	"fmt"
	"sync"

	"sigs.k8s.io/controller-runtime/pkg/client"

	valkeyv1 "github.com/gomomento/valkey-operator/api/v1alpha1"
	"github.com/gomomento/valkey-operator/internal/backup"
	"github.com/gomomento/valkey-operator/internal/controller/nodeconn"
	"github.com/gomomento/valkey-operator/internal/slotrange"
	"github.com/gomomento/valkey-operator/internal/valkey"
)

// slotRouter writes restored keys to the primary that owns each key's slot
// now, as each primary says itself: the backup's shape does not matter.
type slotRouter struct {
	owner     [slotrange.Max + 1]*valkey.Node
	primaries []*valkey.Node
}

func newSlotRouter(ctx context.Context, c client.Reader, vc *valkeyv1.ValkeyCluster, conn *nodeconn.Connector) (*slotRouter, error) {
	pods, err := nodeconn.RunningPods(ctx, c, vc)
	if err != nil {
		return nil, err
	}
	s := &slotRouter{}
	for _, pod := range pods {
		n, err := conn.Dial(ctx, pod.Name, pod.Status.PodIP)
		if err != nil {
			s.close()
			return nil, err
		}
		nodes, err := n.ClusterNodes(ctx)
		if err != nil {
			n.Close()
			s.close()
			return nil, fmt.Errorf("node %s: %w", pod.Name, err)
		}
		me, ok := nodes.Myself()
		if !ok || !me.IsPrimary() || len(me.Slots) == 0 {
			n.Close()
			continue
		}
		s.primaries = append(s.primaries, n)
		for _, r := range me.Slots {
			for slot := r.Start; slot <= r.End; slot++ {
				s.owner[slot] = n
			}
		}
	}
	for slot, n := range s.owner {
		if n == nil {
			s.close()
			return nil, fmt.Errorf("no running primary says it serves slot %d", slot)
		}
	}
	return s, nil
}

// write sends each primary its share of the batch, all primaries at once.
func (s *slotRouter) write(ctx context.Context, keys []valkey.DumpedKey) error {
	groups := map[*valkey.Node][]valkey.DumpedKey{}
	for _, k := range keys {
		n := s.owner[valkey.KeySlot(k.Key)]
		groups[n] = append(groups[n], k)
	}
	var wg sync.WaitGroup
	errs := make(chan error, len(groups))
	for n, batch := range groups {
		wg.Go(func() {
			if err := n.RestoreKeys(ctx, batch); err != nil {
				errs <- err
			}
		})
	}
	wg.Wait()
	close(errs)
	return <-errs
}

// keys counts the keys the primaries hold.
func (s *slotRouter) keys(ctx context.Context) (int64, error) {
	var total int64
	for _, n := range s.primaries {
		info, err := n.Info(ctx, "keyspace")
		if err != nil {
			return 0, err
		}
		k, err := backup.KeyCount(info["keyspace"])
		if err != nil {
			return 0, fmt.Errorf("%s: %w", n.Address(), err)
		}
		total += k
	}
	return total, nil
}

func (s *slotRouter) close() {
	for _, n := range s.primaries {
		n.Close()
	}
	s.primaries = nil
}
