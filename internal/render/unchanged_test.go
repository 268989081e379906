package render

import (
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"testing"
)

var updateGolden = flag.Bool("update-golden", false, "rewrite testdata/golden from the current renderers")

// A cluster without persistence renders exactly what it rendered before
// persistence existed: the node, its pod and its valkey.conf, plaintext and
// TLS. The golden files were written by the renderers of that time; a
// change here is a change to every running cluster.
func TestWithoutPersistenceRendersAsBefore(t *testing.T) {
	for _, tls := range []bool{false, true} {
		name := "plaintext"
		if tls {
			name = "tls"
		}
		t.Run(name, func(t *testing.T) {
			c := testCluster(tls)
			node := testNode(c, 1)
			pod, err := c.Pod(node)
			if err != nil {
				t.Fatal(err)
			}
			cm, err := c.NodeConfigMap(node)
			if err != nil {
				t.Fatal(err)
			}
			claim, err := c.NodeClaim(node)
			if err != nil || claim != nil {
				t.Fatalf("a node without persistence got a claim: %v, %v", claim, err)
			}
			for kind, obj := range map[string]any{"node": node, "pod": pod, "configmap": cm} {
				got, err := json.MarshalIndent(obj, "", "  ")
				if err != nil {
					t.Fatal(err)
				}
				path := filepath.Join("testdata", "golden", name+"-"+kind+".json")
				if *updateGolden {
					if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
						t.Fatal(err)
					}
					if err := os.WriteFile(path, append(got, '\n'), 0o644); err != nil {
						t.Fatal(err)
					}
					continue
				}
				want, err := os.ReadFile(path)
				if err != nil {
					t.Fatal(err)
				}
				if string(want) != string(got)+"\n" {
					t.Errorf("%s renders differently from %s:\n%s", kind, path, got)
				}
			}
		})
	}
}
