package backup

import (
	"fmt"
	"strconv"
	"strings"
)

// KeyCount sums the keys of every database in INFO keyspace's fields
// ("db0" → "keys=12,expires=3,avg_ttl=0"); a cluster node has only db0.
func KeyCount(keyspace map[string]string) (int64, error) {
	var total int64
	for db, v := range keyspace {
		if !strings.HasPrefix(db, "db") {
			continue
		}
		found := false
		for _, field := range strings.Split(v, ",") {
			if n, ok := strings.CutPrefix(field, "keys="); ok {
				keys, err := strconv.ParseInt(n, 10, 64)
				if err != nil {
					return 0, fmt.Errorf("INFO keyspace %s: %q: %w", db, v, err)
				}
				total += keys
				found = true
			}
		}
		if !found {
			return 0, fmt.Errorf("INFO keyspace %s: no key count in %q", db, v)
		}
	}
	return total, nil
}
