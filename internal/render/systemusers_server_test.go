package render

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gomomento/valkey-operator/api/v1alpha1"
	"github.com/gomomento/valkey-operator/internal/resolve"
	"github.com/gomomento/valkey-operator/internal/valkey"
)

// The system users' grants on real Valkey 8 and 9 nodes that load the
// rendered ACL file: the operator, through the same valkey.Node methods
// its controllers call, forms a cluster, attaches a replica (which syncs
// as the replication user), moves a slot the classic way and, on Valkey 9,
// slots holding a key of every type atomically (streamed to the target as
// the replication user), reloads and lists the ACL and sets a parameter;
// what it never sends is refused.
func TestSystemUsersOnValkey(t *testing.T) {
	for _, server := range valkeyServers(t) {
		t.Run(server.name, func(t *testing.T) {
			testSystemUsers(t, server)
		})
	}
}

const sysAdminPassword = "admin-secret"

func testSystemUsers(t *testing.T, server valkeyServer) {
	version, err := valkey.ParseVersion(server.version)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256([]byte(sysAdminPassword))
	admin := resolve.User{
		Binding: v1alpha1.AclBinding{
			Username:       "admin",
			PasswordHashes: []v1alpha1.PasswordHash{v1alpha1.PasswordHash(hex.EncodeToString(sum[:]))},
			Permissions:    []v1alpha1.Permission{{RoleRef: "all", Keys: []v1alpha1.KeyPattern{{Pattern: "*"}}, Channels: []v1alpha1.ChannelPattern{"*"}}},
		},
		Roles: []v1alpha1.ValkeyRoleSpec{{Categories: []v1alpha1.CategoryRule{{Name: "all", Access: v1alpha1.RuleAllow}}}},
	}
	file, err := ACLFile([]resolve.User{admin}, testPasswords, server.version, false)
	if err != nil {
		t.Fatal(err)
	}
	aclPath := filepath.Join(t.TempDir(), KeyACL)
	writeFile(t, aclPath, file)

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	type node struct {
		addr string
		port int
		bus  int
		n    *valkey.Node
		id   string
	}
	nodes := make([]*node, 3)
	for i := range nodes {
		bus := freePort(t)
		addr := server.start(t, "--aclfile", aclPath,
			"--cluster-enabled", "yes", "--cluster-port", strconv.Itoa(bus),
			"--cluster-config-file", "nodes.conf", "--cluster-node-timeout", "2000",
			"--primaryuser", ReplicationUser, "--primaryauth", testPasswords.Replication,
			"--repl-diskless-sync-delay", "0")
		n, err := valkey.Dial(ctx, valkey.Target{Address: addr, Username: OperatorUser, Password: testPasswords.Operator})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(n.Close)
		_, portText, _ := strings.Cut(addr, ":")
		port, _ := strconv.Atoi(portText)
		all, err := n.ClusterNodes(ctx)
		if err != nil {
			t.Fatal(err)
		}
		me, ok := all.Myself()
		if !ok {
			t.Fatalf("CLUSTER NODES of %s has no myself", addr)
		}
		if _, err := n.InfoNode(ctx); err != nil {
			t.Fatal(err)
		}
		nodes[i] = &node{addr: addr, port: port, bus: bus, n: n, id: me.ID}
	}
	a, b, r := nodes[0], nodes[1], nodes[2]

	// Forming the cluster: a and b are primaries, r a replica of a.
	for _, o := range []*node{b, r} {
		if err := a.n.ClusterMeet(ctx, "127.0.0.1", o.port, o.bus); err != nil {
			t.Fatal(err)
		}
	}
	if err := a.n.ClusterAddSlotsRange(ctx, valkey.SlotRange{Start: 0, End: 8191}); err != nil {
		t.Fatal(err)
	}
	if err := b.n.ClusterAddSlotsRange(ctx, valkey.SlotRange{Start: 8192, End: valkey.MaxSlot}); err != nil {
		t.Fatal(err)
	}
	pollUntil(t, 20*time.Second, "a healthy three-node cluster", func() error {
		for _, o := range nodes {
			info, err := o.n.ClusterInfo(ctx)
			if err != nil {
				return err
			}
			if !info.OK() || info.KnownNodes != 3 {
				return fmt.Errorf("%s: state %s, %d known nodes", o.addr, info.State, info.KnownNodes)
			}
		}
		return nil
	})
	if err := r.n.ClusterReplicate(ctx, a.id); err != nil {
		t.Fatal(err)
	}
	// The replica's link authenticates as the replication user.
	pollUntil(t, 20*time.Second, "the replica in sync with its primary", func() error {
		info, err := r.n.InfoNode(ctx)
		if err != nil {
			return err
		}
		if info.Replication.Role != valkey.RoleReplica || info.Replication.PrimaryLinkStatus != "up" {
			return fmt.Errorf("role %s, link %q", info.Replication.Role, info.Replication.PrimaryLinkStatus)
		}
		return nil
	})

	data := dial(t, a.addr)
	data.must(t, "AUTH", "admin", sysAdminPassword)
	target := dial(t, b.addr)
	target.must(t, "AUTH", "admin", sysAdminPassword)

	// A classic move of one slot: SETSLOT, GETKEYSINSLOT, MIGRATE (which
	// authenticates on the target as the operator user).
	tag, slot := hashTagIn(t, data, 1000, 8191)
	classic := map[string]string{"{" + tag + "}a": "1", "{" + tag + "}b": "2"}
	for k, v := range classic {
		data.must(t, "SET", k, v)
	}
	for _, step := range []struct {
		n     *valkey.Node
		state valkey.SlotState
		id    string
	}{{b.n, valkey.SlotImporting, a.id}, {a.n, valkey.SlotMigrating, b.id}} {
		if err := step.n.ClusterSetSlots(ctx, []int{slot}, step.state, step.id); err != nil {
			t.Fatal(err)
		}
	}
	keys, err := a.n.ClusterGetKeysInSlots(ctx, []int{slot}, 100)
	if err != nil {
		t.Fatal(err)
	}
	if len(keys[slot]) != len(classic) {
		t.Fatalf("keys in slot %d: %q", slot, keys[slot])
	}
	if err := a.n.MigrateEach(ctx, valkey.MigrateArgs{Host: "127.0.0.1", Port: b.port, Username: OperatorUser,
		Password: testPasswords.Operator, Timeout: 5 * time.Second}, [][]string{keys[slot]}); err != nil {
		t.Fatal(err)
	}
	for _, n := range []*valkey.Node{b.n, a.n} {
		if err := n.ClusterSetSlots(ctx, []int{slot}, valkey.SlotNode, b.id); err != nil {
			t.Fatal(err)
		}
	}
	for k, v := range classic {
		if got, err := target.do("GET", k); err != nil || got != v {
			t.Errorf("GET %s on the target after the classic move = %v, %v; want %q", k, got, err, v)
		}
	}

	if version.Major >= atomicMigrationMinimumMajor {
		atomicMove(ctx, t, a.n, b.id, data, target)
	}

	// The ACL reloader's and the certificate reloader's commands.
	if err := a.n.AclLoad(ctx); err != nil {
		t.Fatal(err)
	}
	lines, err := a.n.AclList(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(strings.Join(lines, "\n"), "user "+OperatorUser+" on") {
		t.Errorf("ACL LIST has no %s: %q", OperatorUser, lines)
	}
	if err := a.n.ConfigSet(ctx, "lazyfree-lazy-user-del", "no"); err != nil {
		t.Fatal(err)
	}

	// Nothing so far was refused to a system user, on any node.
	for _, o := range nodes {
		c := dial(t, o.addr)
		c.must(t, "AUTH", "admin", sysAdminPassword)
		if entries := fmt.Sprint(c.must(t, "ACL", "LOG")); strings.Contains(entries, OperatorUser) || strings.Contains(entries, ReplicationUser) {
			t.Errorf("ACL LOG of %s: %s", o.addr, entries)
		}
	}

	// The drift check's read.
	if got, err := a.n.ConfigGet(ctx, "maxmemory", "maxmemory-policy"); err != nil || len(got) != 2 {
		t.Errorf("CONFIG GET as %s = %v, %v; want both settings", OperatorUser, got, err)
	}

	// What the operator never sends.
	op := dial(t, a.addr)
	op.must(t, "AUTH", OperatorUser, testPasswords.Operator)
	repl := dial(t, a.addr)
	repl.must(t, "AUTH", ReplicationUser, testPasswords.Replication)
	refused := []struct {
		c    *conn
		user string
		args []string
	}{
		{op, OperatorUser, []string{"CLUSTER", "RESET"}},
		{op, OperatorUser, []string{"CLUSTER", "FLUSHSLOTS"}},
		{op, OperatorUser, []string{"CLUSTER", "DELSLOTS", "0"}},
		{op, OperatorUser, []string{"FLUSHALL"}},
		{op, OperatorUser, []string{"GET", "{" + tag + "}a"}},
		{op, OperatorUser, []string{"SET", "k", "v"}},
		{op, OperatorUser, []string{"ACL", "GETUSER", "admin"}},
		{repl, ReplicationUser, []string{"FLUSHALL"}},
		{repl, ReplicationUser, []string{"FLUSHDB"}},
		{repl, ReplicationUser, []string{"GET", "{" + tag + "}a"}},
		{repl, ReplicationUser, []string{"CONFIG", "GET", "maxmemory"}},
	}
	if version.Major >= atomicMigrationMinimumMajor {
		refused = append(refused, []struct {
			c    *conn
			user string
			args []string
		}{
			{repl, ReplicationUser, []string{"SWAPDB", "0", "1"}},
			{repl, ReplicationUser, []string{"FUNCTION", "FLUSH"}},
			{repl, ReplicationUser, []string{"CLUSTER", "FLUSHSLOT", "0"}},
			{repl, ReplicationUser, []string{"MIGRATE", "127.0.0.1", strconv.Itoa(b.port), "", "0", "1000", "KEYS", "k"}},
		}...)
	}
	for _, tc := range refused {
		if reply, err := tc.c.do(tc.args...); err == nil || !strings.HasPrefix(err.Error(), "NOPERM") {
			t.Errorf("%s as %s = %v, %v; want NOPERM", strings.Join(tc.args, " "), tc.user, reply, err)
		}
	}
}

// atomicMove moves slots 100-199, holding a key of every type, from the
// node of src to the node with ID toID with CLUSTER MIGRATESLOTS, while a
// client keeps writing to one of their keys, and checks that every key
// arrives intact and no acknowledged write is lost: the slot stream runs
// on the target as the replication user.
func atomicMove(ctx context.Context, t *testing.T, src *valkey.Node, toID string, data, target *conn) {
	t.Helper()
	tag, _ := hashTagIn(t, data, 100, 199)
	k := func(name string) string { return "{" + tag + "}" + name }
	for _, cmd := range [][]string{
		{"SET", k("string"), "value"},
		{"RPUSH", k("list"), "a", "b", "c"},
		{"HSET", k("hash"), "f1", "v1", "f2", "v2"},
		{"HSET", k("hash-field-ttl"), "f1", "v1", "f2", "v2"},
		{"HEXPIRE", k("hash-field-ttl"), "600", "FIELDS", "1", "f1"},
		{"SADD", k("set"), "a", "b", "c"},
		{"ZADD", k("zset"), "1", "a", "2.5", "b"},
		{"XADD", k("stream"), "1-1", "f", "v"},
		{"XADD", k("stream"), "2-1", "f", "w"},
		{"XGROUP", "CREATE", k("stream"), "g", "0"},
		{"XREADGROUP", "GROUP", "g", "c", "COUNT", "1", "STREAMS", k("stream"), ">"},
		{"SET", k("ttl"), "v", "PX", "600000"},
		{"SET", k("large-string"), strings.Repeat("x", 1<<20)},
		{"SET", k("counter"), "0"},
	} {
		data.must(t, cmd...)
	}
	for i := 0; i < 50; i++ {
		args := []string{"RPUSH", k("large-list")}
		for j := 0; j < 1000; j++ {
			args = append(args, strconv.Itoa(i*1000+j))
		}
		data.must(t, args...)
	}
	// What must read the same on the target: DUMP, or for the stream,
	// whose DUMP also holds delivery times, its entries and groups.
	reads := [][]string{
		{"XRANGE", k("stream"), "-", "+"},
		{"XINFO", "GROUPS", k("stream")},
		{"XPENDING", k("stream"), "g"},
	}
	for _, name := range []string{"string", "list", "hash", "hash-field-ttl", "set", "zset", "ttl", "large-string", "large-list"} {
		reads = append(reads, []string{"DUMP", k(name)})
	}
	before := make([]string, len(reads))
	for i, args := range reads {
		before[i] = fmt.Sprint(data.must(t, args...))
	}

	// A client's transactions during the move reach the target through
	// the slot stream (without their MULTI and EXEC); the writer stops once
	// the slots are gone (MOVED).
	writer := dial(t, data.c.RemoteAddr().String())
	writer.must(t, "AUTH", "admin", sysAdminPassword)
	done := make(chan struct{})
	acked := make(chan int64, 1)
	go func() {
		var n int64
		defer func() { acked <- n }()
		for {
			select {
			case <-done:
				return
			default:
			}
			if _, err := writer.do("MULTI"); err != nil {
				return
			}
			if _, err := writer.do("INCR", k("counter")); err != nil {
				_, _ = writer.do("DISCARD")
				return
			}
			if reply, err := writer.do("EXEC"); err != nil || reply == nil {
				return
			}
			n++
		}
	}()

	if err := src.ClusterMigrateSlots(ctx, toID, valkey.SlotRange{Start: 100, End: 199}); err != nil {
		t.Fatal(err)
	}
	var job valkey.SlotMigration
	pollUntil(t, 60*time.Second, "the atomic slot migration finishing", func() error {
		jobs, err := src.ClusterGetSlotMigrations(ctx)
		if err != nil {
			return err
		}
		if len(jobs) != 1 {
			return fmt.Errorf("%d jobs", len(jobs))
		}
		if job = jobs[0]; !job.Finished() {
			return fmt.Errorf("job in state %s", job.State)
		}
		return nil
	})
	close(done)
	writes := <-acked
	if job.State != valkey.SlotMigrationSuccess {
		t.Fatalf("atomic slot migration ended %s: %s", job.State, job.Message)
	}
	for i, args := range reads {
		if got, err := target.do(args...); err != nil || fmt.Sprint(got) != before[i] {
			t.Errorf("%s on the target differs from the source's (%v)", strings.Join(args[:2], " "), err)
		}
	}
	if ttl, err := target.do("PTTL", k("ttl")); err != nil || ttl.(int64) <= 0 {
		t.Errorf("PTTL %s on the target = %v, %v", k("ttl"), ttl, err)
	}
	if ttl, err := target.do("HTTL", k("hash-field-ttl"), "FIELDS", "1", "f1"); err != nil || fmt.Sprint(ttl) == "[-1]" {
		t.Errorf("HTTL %s f1 on the target = %v, %v", k("hash-field-ttl"), ttl, err)
	}
	if got, err := target.do("GET", k("counter")); err != nil || got != strconv.FormatInt(writes, 10) {
		t.Errorf("counter on the target = %v, %v; the source acknowledged %d increments", got, err, writes)
	}
	t.Logf("%d increments acknowledged during the move", writes)
}

// hashTagIn finds a hash tag whose slot lies in [from, to].
func hashTagIn(t *testing.T, c *conn, from, to int) (string, int) {
	t.Helper()
	for i := 0; i < 100000; i++ {
		tag := strconv.Itoa(i)
		slot, err := c.do("CLUSTER", "KEYSLOT", "{"+tag+"}")
		if err != nil {
			t.Fatal(err)
		}
		if s := int(slot.(int64)); s >= from && s <= to {
			return tag, s
		}
	}
	t.Fatalf("no hash tag maps into %d-%d", from, to)
	return "", 0
}

// pollUntil polls cond until it succeeds or timeout passes.
func pollUntil(t *testing.T, timeout time.Duration, what string, cond func() error) {
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
		time.Sleep(20 * time.Millisecond)
	}
}
