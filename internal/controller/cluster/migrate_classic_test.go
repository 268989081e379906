package cluster

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	vk "github.com/valkey-io/valkey-go"

	"github.com/gomomento/valkey-operator/internal/classicmigrate"
	"github.com/gomomento/valkey-operator/internal/render"
	"github.com/gomomento/valkey-operator/internal/testcerts"
	"github.com/gomomento/valkey-operator/internal/valkey"
)

// The classic mover against two real Valkey 8 nodes that load the ACL file
// the operator renders, so the operator user's grants are the production
// ones: a fresh move, a move interrupted at each stage and run again, and
// the same over TLS, where MIGRATE has to use the cluster's TLS.
func TestClassicMigration(t *testing.T) {
	for _, useTLS := range []bool{false, true} {
		t.Run(fmt.Sprintf("tls=%v", useTLS), func(t *testing.T) {
			c := startPair(t, useTLS)
			ctx := context.Background()
			a, b := c.nodes[0], c.nodes[1]

			want := map[string]string{}
			for _, slot := range []int{0, 1, 50, 99, 100, 105, 110, 119, 120, 200} {
				for i := range 3 {
					k := fmt.Sprintf("{%s}:%d", tagForSlot(slot), i)
					want[k] = fmt.Sprintf("v%d-%d", slot, i)
				}
			}
			c.write(t, want)

			// A fresh move.
			if err := c.mover(a, b).run(ctx, valkey.SlotRange{Start: 0, End: 99}); err != nil {
				t.Fatal(err)
			}
			c.assertOwner(t, b, 0, 99)
			c.check(t, want)

			// Interrupted after IMPORTING/MIGRATING, with one key copied to
			// the target and then changed on the source: the rerun must not
			// keep the stale copy.
			for slot := 100; slot <= 119; slot++ {
				c.setSlot(t, b, slot, valkey.SlotImporting, a.id)
				if slot < 110 {
					c.setSlot(t, a, slot, valkey.SlotMigrating, b.id)
				}
			}
			stale := fmt.Sprintf("{%s}:0", tagForSlot(105))
			if err := a.node.Migrate(ctx, valkey.MigrateArgs{Host: b.host, Port: b.port, Keys: []string{stale},
				Username: render.OperatorUser, Password: c.password, Copy: true}); err != nil {
				t.Fatal(err)
			}
			want[stale] = "changed on the source"
			c.write(t, map[string]string{stale: want[stale]})
			if err := c.mover(a, b).run(ctx, valkey.SlotRange{Start: 100, End: 119}); err != nil {
				t.Fatal(err)
			}
			c.assertOwner(t, b, 100, 119)
			c.check(t, want)

			// Interrupted after the target claimed the slot, before the
			// source was told.
			c.setSlot(t, b, 120, valkey.SlotImporting, a.id)
			c.setSlot(t, a, 120, valkey.SlotMigrating, b.id)
			keys, err := a.node.ClusterGetKeysInSlot(ctx, 120, 100)
			if err != nil || len(keys) == 0 {
				t.Fatalf("keys in slot 120: %v, %v", keys, err)
			}
			if err := a.node.Migrate(ctx, valkey.MigrateArgs{Host: b.host, Port: b.port, Keys: keys,
				Username: render.OperatorUser, Password: c.password}); err != nil {
				t.Fatal(err)
			}
			c.setSlot(t, b, 120, valkey.SlotNode, b.id)
			if err := c.mover(a, b).run(ctx, valkey.SlotRange{Start: 120, End: 120}); err != nil {
				t.Fatal(err)
			}
			c.assertOwner(t, b, 100, 120)

			// Slots already moved: nothing to do, no error.
			if err := c.mover(a, b).run(ctx, valkey.SlotRange{Start: 0, End: 120}); err != nil {
				t.Fatal(err)
			}
			c.assertOwner(t, b, 0, 120)
			c.check(t, want)

			// And back, so a source that received slots also gives them up.
			if err := c.mover(b, a).run(ctx, valkey.SlotRange{Start: 0, End: 120}); err != nil {
				t.Fatal(err)
			}
			c.assertOwner(t, a, 0, 120)
			c.check(t, want)
		})
	}
}

type pairNode struct {
	host string
	port int
	id   string
	node *valkey.Node
}

type pair struct {
	nodes    []*pairNode
	password string
	client   vk.Client
}

func (c *pair) mover(from, to *pairNode) classicMigration {
	return classicMigration{from: from.node, to: to.node, fromID: from.id, toID: to.id,
		toHost: to.host, toPort: to.port, user: render.OperatorUser, password: c.password}
}

func (c *pair) setSlot(t *testing.T, n *pairNode, slot int, state valkey.SlotState, id string) {
	t.Helper()
	if err := n.node.ClusterSetSlot(context.Background(), slot, state, id); err != nil {
		t.Fatal(err)
	}
}

func (c *pair) write(t *testing.T, kv map[string]string) {
	t.Helper()
	for k, v := range kv {
		if err := c.client.Do(context.Background(), c.client.B().Set().Key(k).Value(v).Build()).Error(); err != nil {
			t.Fatalf("SET %s: %v", k, err)
		}
	}
}

func (c *pair) check(t *testing.T, want map[string]string) {
	t.Helper()
	for k, v := range want {
		got, err := c.client.Do(context.Background(), c.client.B().Get().Key(k).Build()).ToString()
		if err != nil || got != v {
			t.Fatalf("GET %s = %q, %v; want %q", k, got, err, v)
		}
	}
}

// assertOwner checks that both nodes agree owner holds start..end, nothing
// is left MIGRATING or IMPORTING and the other node keeps no key there.
func (c *pair) assertOwner(t *testing.T, owner *pairNode, start, end int) {
	t.Helper()
	ctx := context.Background()
	for _, n := range c.nodes {
		nodes, err := n.node.ClusterNodes(ctx)
		if err != nil {
			t.Fatal(err)
		}
		me, _ := nodes.Myself()
		if len(me.Migrating)+len(me.Importing) > 0 {
			t.Fatalf("node %s still migrating %v importing %v", n.id, me.Migrating, me.Importing)
		}
		for slot := start; slot <= end; slot++ {
			if classicmigrate.Owns(me, slot) != (n == owner) {
				t.Fatalf("slot %d: node %s owns=%v", slot, n.id, classicmigrate.Owns(me, slot))
			}
			if n != owner {
				if k, err := n.node.ClusterGetKeysInSlot(ctx, slot, 1); err != nil || len(k) != 0 {
					t.Fatalf("slot %d: keys %q left on the source (%v)", slot, k, err)
				}
			}
		}
	}
}

// startPair runs two cluster-mode Valkey 8 nodes splitting the slots.
func startPair(t *testing.T, useTLS bool) *pair {
	t.Helper()
	bin, err := exec.LookPath("valkey-server")
	if err != nil {
		t.Fatal("no valkey-server installed (make valkey)")
	}
	c := &pair{password: "operator-test-password"}
	acl, err := render.ACLFile(nil, render.Passwords{Operator: c.password, Replication: "repl-test-password"}, "8.0.1", false)
	if err != nil {
		t.Fatal(err)
	}
	var ca *testcerts.CA
	var leaf *testcerts.LeafCert
	const serverName = "node-0.pair.ns.svc.cluster.local"
	if useTLS {
		ca = testcerts.NewCA("classic-migration-ca")
		leaf = testcerts.Leaf(ca, "pair", "ns", "cluster.local")
	}
	ctx := context.Background()
	for range 2 {
		dir := t.TempDir()
		port, bus := freePort(t), freePort(t)
		lines := []string{
			"bind 127.0.0.1", "dir " + dir, "logfile " + filepath.Join(dir, "valkey.log"),
			"aclfile " + filepath.Join(dir, "users.acl"), `save ""`, "appendonly no",
			"cluster-enabled yes", "cluster-config-file nodes.conf", "cluster-node-timeout 2000",
			fmt.Sprintf("cluster-port %d", bus),
		}
		files := map[string][]byte{"users.acl": []byte(acl)}
		if useTLS {
			files["tls.crt"], files["tls.key"], files["ca.crt"] = leaf.CertPEM, leaf.KeyPEM, ca.CertPEM
			lines = append(lines, "port 0", fmt.Sprintf("tls-port %d", port), "tls-cluster yes", "tls-replication yes",
				"tls-cert-file "+filepath.Join(dir, "tls.crt"), "tls-key-file "+filepath.Join(dir, "tls.key"),
				"tls-ca-cert-file "+filepath.Join(dir, "ca.crt"), "tls-auth-clients no")
		} else {
			lines = append(lines, fmt.Sprintf("port %d", port))
		}
		files["valkey.conf"] = []byte(strings.Join(lines, "\n") + "\n")
		for name, data := range files {
			if err := os.WriteFile(filepath.Join(dir, name), data, 0o600); err != nil {
				t.Fatal(err)
			}
		}
		var out bytes.Buffer
		cmd := exec.Command(bin, filepath.Join(dir, "valkey.conf"))
		cmd.Stdout, cmd.Stderr = &out, &out
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		exited := make(chan struct{})
		go func() { _ = cmd.Wait(); close(exited) }()
		t.Cleanup(func() {
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			<-exited
		})
		target := valkey.Target{Address: net.JoinHostPort("127.0.0.1", strconv.Itoa(port)),
			Username: render.OperatorUser, Password: c.password}
		if useTLS {
			target.TLS = &valkey.TLS{CA: ca.CertPEM, ServerName: serverName}
		}
		var n *valkey.Node
		poll(t, 10*time.Second, "valkey-server answering on "+target.Address, func() error {
			select {
			case <-exited:
				log, _ := os.ReadFile(filepath.Join(dir, "valkey.log"))
				t.Fatalf("valkey-server exited: %s\n%s", out.String(), log)
			default:
			}
			n, err = valkey.Dial(ctx, target)
			return err
		})
		t.Cleanup(n.Close)
		// The operator user learns a node's ID as the operator does, from
		// CLUSTER NODES: it may not run CLUSTER MYID.
		all, err := n.ClusterNodes(ctx)
		if err != nil {
			t.Fatal(err)
		}
		me, ok := all.Myself()
		if !ok {
			t.Fatalf("CLUSTER NODES of %s has no myself", target.Address)
		}
		c.nodes = append(c.nodes, &pairNode{host: "127.0.0.1", port: port, id: me.ID, node: n})
		if len(c.nodes) == 2 {
			if err := c.nodes[0].node.ClusterMeet(ctx, "127.0.0.1", c.nodes[1].port, bus); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := c.nodes[0].node.ClusterAddSlotsRange(ctx, valkey.SlotRange{Start: 0, End: 8191}); err != nil {
		t.Fatal(err)
	}
	if err := c.nodes[1].node.ClusterAddSlotsRange(ctx, valkey.SlotRange{Start: 8192, End: valkey.MaxSlot}); err != nil {
		t.Fatal(err)
	}
	poll(t, 20*time.Second, "a healthy two-node cluster", func() error {
		for _, n := range c.nodes {
			info, err := n.node.ClusterInfo(ctx)
			if err != nil {
				return err
			}
			if !info.OK() || info.KnownNodes != 2 {
				return fmt.Errorf("state %s, %d known nodes", info.State, info.KnownNodes)
			}
		}
		return nil
	})
	opt := vk.ClientOption{InitAddress: []string{net.JoinHostPort("127.0.0.1", strconv.Itoa(c.nodes[0].port))}, DisableCache: true}
	if useTLS {
		pool := x509.NewCertPool()
		pool.AppendCertsFromPEM(ca.CertPEM)
		opt.TLSConfig = &tls.Config{RootCAs: pool, ServerName: serverName, MinVersion: tls.VersionTLS12}
	}
	client, err := vk.NewClient(opt)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(client.Close)
	c.client = client
	return c
}

func poll(t *testing.T, timeout time.Duration, what string, cond func() error) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		err := cond()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s: %v", timeout, what, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// tagForSlot finds a hash tag that maps to slot.
func tagForSlot(slot int) string {
	for i := 0; ; i++ {
		tag := strconv.Itoa(i)
		if valkey.KeySlot(tag) == slot {
			return tag
		}
	}
}
