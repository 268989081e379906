package e2e

import (
	"bufio"
	"context"
	"crypto/sha256"
	"crypto/tls"
	"encoding/hex"
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	vk "github.com/valkey-io/valkey-go"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	valkeyv1 "github.com/gomomento/valkey-operator/api/v1alpha1"
	"github.com/gomomento/valkey-operator/internal/render"
	"github.com/gomomento/valkey-operator/internal/valkey"
)

// aclFixture is a running 1-shard, 1-replica plaintext cluster in its own
// namespace. The TLS fixture's pod, condition and Event helpers apply to
// it unchanged.
type aclFixture struct {
	*tlsFixture
}

// aclVersion is what the ACL tests run: the default image's release, whose
// replicas crash on ACL LOAD and are updated one user at a time, while its
// primaries reload the file (TestACLValkey9ReloadsEveryNode covers the
// release that reloads replicas too).
const aclVersion = "8.0.1"

func createACLMenu(t testing.TB, suffix, version string) string {
	t.Helper()
	return createConfig(t, "acl-"+suffix, version, valkeyv1.ValkeyConfigSpec{Valkey: map[string]string{"maxmemory": "64mb"}})
}

func newACLFixture(t testing.TB, ns, version string, acl []valkeyv1.AclBinding) *aclFixture {
	t.Helper()
	ctx := context.Background()
	createNamespace(t, ns)
	cfg := createACLMenu(t, ns, version)
	f := &aclFixture{&tlsFixture{t: t, ns: ns, name: "cache", key: client.ObjectKey{Namespace: ns, Name: "cache"}}}
	vc := &valkeyv1.ValkeyCluster{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: f.name},
		Spec:       valkeyv1.ValkeyClusterSpec{ConfigRef: cfg, Shards: 1, ReplicasPerShard: 1, ACL: acl},
	}
	if err := k8sClient.Create(ctx, vc); err != nil {
		t.Fatal(err)
	}
	deleteAtEnd(t, vc)
	waitActive(t, f.key, 1, 1, 3*time.Minute)
	return f
}

func createRole(t testing.TB, name string, spec valkeyv1.ValkeyRoleSpec) {
	t.Helper()
	role := &valkeyv1.ValkeyRole{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: spec}
	if err := k8sClient.Create(context.Background(), role); err != nil {
		t.Fatalf("creating role %s: %v", name, err)
	}
	t.Cleanup(func() { _ = k8sClient.Delete(context.Background(), role) })
}

func updateRole(t testing.TB, name string, mutate func(*valkeyv1.ValkeyRoleSpec)) {
	t.Helper()
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		var role valkeyv1.ValkeyRole
		if err := k8sClient.Get(context.Background(), client.ObjectKey{Name: name}, &role); err != nil {
			return err
		}
		mutate(&role.Spec)
		return k8sClient.Update(context.Background(), &role)
	})
	if err != nil {
		t.Fatalf("updating role %s: %v", name, err)
	}
}

func (f *aclFixture) setACL(acl []valkeyv1.AclBinding) {
	f.t.Helper()
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		var vc valkeyv1.ValkeyCluster
		if err := k8sClient.Get(context.Background(), f.key, &vc); err != nil {
			return err
		}
		vc.Spec.ACL = acl
		return k8sClient.Update(context.Background(), &vc)
	})
	if err != nil {
		f.t.Fatalf("updating spec.acl: %v", err)
	}
}

func (f *aclFixture) waitACLApplied(timeout time.Duration) {
	f.t.Helper()
	f.waitCondition(valkeyv1.CondACLApplied, metav1.ConditionTrue, valkeyv1.ReasonACLCurrent,
		fmt.Sprintf("all 2 nodes run the ACL rules in Secret %q", render.ACLSecretName(f.name)), timeout)
}

func (f *aclFixture) addresses() map[string]string {
	f.t.Helper()
	out := map[string]string{}
	for _, p := range f.pods() {
		if p.Status.PodIP == "" {
			f.t.Fatalf("pod %s has no address", p.Name)
		}
		out[p.Name] = net.JoinHostPort(p.Status.PodIP, "6379")
	}
	if len(out) != 2 {
		f.t.Fatalf("%d pods, want 2", len(out))
	}
	return out
}

func passwordHash(password string) valkeyv1.PasswordHash {
	sum := sha256.Sum256([]byte(password))
	return valkeyv1.PasswordHash(hex.EncodeToString(sum[:]))
}

// nodeClient authenticates to one node, and only that node: no topology
// discovery, no command the user was not asked to run.
func nodeClient(addr, user, password string) (vk.Client, error) {
	return vk.NewClient(vk.ClientOption{
		InitAddress:       []string{addr},
		Username:          user,
		Password:          password,
		ForceSingleClient: true,
		DisableCache:      true,
		DisableRetry:      true,
		ClientSetInfo:     vk.DisableClientSetInfo,
		DialCtxFn: func(ctx context.Context, dst string, _ *net.Dialer, _ *tls.Config) (net.Conn, error) {
			return local.Runtime.DialContext(ctx, "tcp", dst)
		},
	})
}

// respSession is a bare connection for what a client library hides: a
// connection that never authenticates, and SUBSCRIBE's reply.
type respSession struct {
	conn net.Conn
	r    *bufio.Reader
}

func dialRESP(addr string) (*respSession, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	conn, err := local.Runtime.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, err
	}
	_ = conn.SetDeadline(time.Now().Add(10 * time.Second))
	return &respSession{conn: conn, r: bufio.NewReader(conn)}, nil
}

// do sends one command and returns the first line of its reply.
func (s *respSession) do(args ...string) (string, error) {
	var b strings.Builder
	fmt.Fprintf(&b, "*%d\r\n", len(args))
	for _, a := range args {
		fmt.Fprintf(&b, "$%d\r\n%s\r\n", len(a), a)
	}
	if _, err := s.conn.Write([]byte(b.String())); err != nil {
		return "", err
	}
	line, err := s.r.ReadString('\n')
	return strings.TrimRight(line, "\r\n"), err
}

// check is one command a user runs and whether the role allows it.
type check struct {
	args    []string
	allowed bool
}

// allowedOn says whether a reply means the ACL let the command through.
// A replica redirects key commands to the primary, and the ACL check comes
// before the redirect, so MOVED is a permitted command.
func allowedOn(err error) (bool, error) {
	if err == nil || vk.IsValkeyNil(err) {
		return true, nil
	}
	if ve, ok := vk.IsValkeyErr(err); ok {
		if _, moved := ve.IsMoved(); moved {
			return true, nil
		}
		if strings.HasPrefix(ve.Error(), "NOPERM") {
			return false, nil
		}
	}
	return false, err
}

// runChecks authenticates as user on every node and runs the checks there.
func (f *aclFixture) runChecks(user, password string, checks []check) error {
	ctx := context.Background()
	for pod, addr := range f.addresses() {
		c, err := nodeClient(addr, user, password)
		if err != nil {
			return fmt.Errorf("%s cannot authenticate on %s: %w", user, pod, err)
		}
		for _, ch := range checks {
			var allowed bool
			var err error
			if strings.EqualFold(ch.args[0], "subscribe") {
				allowed, err = subscribeAllowed(addr, user, password, ch.args[1])
			} else {
				allowed, err = allowedOn(c.Do(ctx, c.B().Arbitrary(ch.args[0]).Args(ch.args[1:]...).Build()).Error())
			}
			if err != nil {
				c.Close()
				return fmt.Errorf("%s on %s: %q: %w", user, pod, ch.args, err)
			}
			if allowed != ch.allowed {
				c.Close()
				return fmt.Errorf("%s on %s: %q allowed=%v, want %v", user, pod, ch.args, allowed, ch.allowed)
			}
		}
		c.Close()
	}
	return nil
}

func subscribeAllowed(addr, user, password, channel string) (bool, error) {
	s, err := dialRESP(addr)
	if err != nil {
		return false, err
	}
	defer s.conn.Close()
	if reply, err := s.do("AUTH", user, password); err != nil || reply != "+OK" {
		return false, fmt.Errorf("AUTH = %q, %v", reply, err)
	}
	reply, err := s.do("SUBSCRIBE", channel)
	switch {
	case err != nil:
		return false, err
	case strings.HasPrefix(reply, "-NOPERM"):
		return false, nil
	case strings.HasPrefix(reply, "*3") || strings.HasPrefix(reply, ">3"):
		return true, nil
	}
	return false, fmt.Errorf("SUBSCRIBE reply %q", reply)
}

// authResult is whether user can authenticate with password on each node.
func (f *aclFixture) authenticates(user, password string, want bool) error {
	for pod, addr := range f.addresses() {
		c, err := nodeClient(addr, user, password)
		if err == nil {
			c.Close()
		}
		switch {
		case want && err != nil:
			return fmt.Errorf("%s rejected on %s: %w", user, pod, err)
		case !want && err == nil:
			return fmt.Errorf("%s still authenticates on %s", user, pod)
		case !want && !strings.Contains(err.Error(), "WRONGPASS"):
			return fmt.Errorf("%s on %s: %w, want WRONGPASS", user, pod, err)
		}
	}
	return nil
}

// defaultUser reports what a client that never authenticates gets on each
// node: open means it may write.
func (f *aclFixture) defaultUser(open bool) error {
	for pod, addr := range f.addresses() {
		s, err := dialRESP(addr)
		if err != nil {
			return err
		}
		reply, err := s.do("PING")
		s.conn.Close()
		if err != nil {
			return fmt.Errorf("PING on %s: %w", pod, err)
		}
		if open && reply != "+PONG" {
			return fmt.Errorf("unauthenticated PING on %s = %q, want PONG", pod, reply)
		}
		if !open && !strings.HasPrefix(reply, "-NOAUTH") {
			return fmt.Errorf("unauthenticated PING on %s = %q, want NOAUTH", pod, reply)
		}
	}
	return nil
}

// operatorNode connects as the operator's own user, which may run INFO.
func (f *aclFixture) operatorNode(addr string) *valkey.Node {
	f.t.Helper()
	var s corev1.Secret
	if err := k8sClient.Get(context.Background(), client.ObjectKey{Namespace: f.ns, Name: render.OperatorAuthSecretName(f.name)}, &s); err != nil {
		f.t.Fatal(err)
	}
	n, err := valkey.Dial(context.Background(), valkey.Target{
		Address: addr, Username: render.OperatorUser, Password: string(s.Data[render.KeyOperatorPassword]), Dialer: local.Runtime.DialContext,
	})
	if err != nil {
		f.t.Fatalf("connecting to %s as the operator: %v", addr, err)
	}
	return n
}

// replication returns the primary's full and partial sync counts and the
// replica's link status.
func (f *aclFixture) replication() (syncs, link string) {
	f.t.Helper()
	for pod, addr := range f.addresses() {
		n := f.operatorNode(addr)
		info, err := n.Info(context.Background(), "replication", "stats")
		n.Close()
		if err != nil {
			f.t.Fatalf("INFO on %s: %v", pod, err)
		}
		switch info["replication"]["role"] {
		case valkey.RolePrimary:
			syncs = "full=" + info["stats"]["sync_full"] + " partial=" + info["stats"]["sync_partial_ok"]
		case valkey.RoleReplica:
			link = info["replication"]["master_link_status"]
		}
	}
	return syncs, link
}

func (f *aclFixture) aclLoads(result string) float64 {
	v, _ := metricValue("valkey_acl_loads_total", map[string]string{"namespace": f.ns, "cluster": f.name, "result": result})
	return v
}

func binding(user string, hashes []valkeyv1.PasswordHash, role string, keys []valkeyv1.KeyPattern, channels ...valkeyv1.ChannelPattern) valkeyv1.AclBinding {
	return valkeyv1.AclBinding{Username: user, PasswordHashes: hashes,
		Permissions: []valkeyv1.Permission{{RoleRef: role, Keys: keys, Channels: channels}}}
}

func keys(pattern string, access valkeyv1.KeyAccess) []valkeyv1.KeyPattern {
	return []valkeyv1.KeyPattern{{Pattern: pattern, Access: access}}
}

// Bound users may do exactly what their role and patterns grant on every
// node; adding, changing and removing bindings and roles, rotating a
// password and closing the default user all reach every node in place,
// while replication and the cluster carry on untouched.
func TestACLBindingsEnforcedAndReloadedInPlace(t *testing.T) {
	t.Parallel()
	const ns = "acl-live"
	role := "acl-live-app"
	createRole(t, role, valkeyv1.ValkeyRoleSpec{
		Categories: []valkeyv1.CategoryRule{
			{Name: "read", Access: valkeyv1.RuleAllow}, {Name: "write", Access: valkeyv1.RuleAllow}, {Name: "pubsub", Access: valkeyv1.RuleAllow},
		},
		Commands: []valkeyv1.CommandRule{{Name: "keys", Access: valkeyv1.RuleDeny}},
	})
	f := newACLFixture(t, ns, aclVersion, nil)
	f.waitACLApplied(time.Minute)

	// No binding: the default user is open, and the condition says so.
	if err := f.defaultUser(true); err != nil {
		t.Fatal(err)
	}
	f.waitCondition(valkeyv1.CondDefaultUserOpen, metav1.ConditionTrue, valkeyv1.ReasonNoBindings, "", 10*time.Second)

	before := f.podSnapshot()
	syncsBefore, link := f.replication()
	if link != "up" {
		t.Fatalf("replica link %q before any ACL change", link)
	}
	states := f.watchStates()
	loadsBefore := f.aclLoads("success")

	pw := func(s string) []valkeyv1.PasswordHash { return []valkeyv1.PasswordHash{passwordHash(s)} }
	reader := binding("reader", pw("reader-pw"), role, keys("r:*", valkeyv1.KeyAccessRead), "news.*")
	writer := binding("writer", pw("writer-pw"), role, keys("w:*", valkeyv1.KeyAccessWrite), "news.*")
	rw := binding("rw", pw("rw-pw"), role, keys("rw:*", valkeyv1.KeyAccessReadWrite), "news.*")
	start := time.Now()
	f.setACL([]valkeyv1.AclBinding{reader, writer, rw})
	eventually(t, 90*time.Second, "bindings on every node and the default user closed", func() error {
		if err := f.defaultUser(false); err != nil {
			return err
		}
		return f.authenticates("rw", "rw-pw", true)
	})
	t.Logf("bindings added to enforced on every node: %s (projection delay %s)", time.Since(start).Round(time.Millisecond), projectionDelay)

	denied := []check{
		{[]string{"GET", "other:1"}, false},
		{[]string{"SET", "other:1", "x"}, false},
		{[]string{"CONFIG", "GET", "maxmemory"}, false},
		{[]string{"KEYS", "*"}, false},
		{[]string{"PUBLISH", "other", "x"}, false},
		{[]string{"SUBSCRIBE", "other"}, false},
		{[]string{"PUBLISH", "news.today", "x"}, true},
		{[]string{"SUBSCRIBE", "news.today"}, true},
	}
	for _, u := range []struct {
		user, password string
		checks         []check
	}{
		{"reader", "reader-pw", []check{{[]string{"GET", "r:1"}, true}, {[]string{"SET", "r:1", "x"}, false}}},
		{"writer", "writer-pw", []check{{[]string{"SET", "w:1", "x"}, true}, {[]string{"GET", "w:1"}, false}}},
		{"rw", "rw-pw", []check{{[]string{"SET", "rw:1", "x"}, true}, {[]string{"GET", "rw:1"}, true}}},
	} {
		if err := f.runChecks(u.user, u.password, append(u.checks, denied...)); err != nil {
			t.Fatal(err)
		}
	}

	// A changed binding: reader's keys move.
	reader.Permissions[0].Keys = keys("r2:*", valkeyv1.KeyAccessRead)
	f.setACL([]valkeyv1.AclBinding{reader, writer, rw})
	eventually(t, 90*time.Second, "reader's new key pattern on every node", func() error {
		return f.runChecks("reader", "reader-pw", []check{{[]string{"GET", "r2:1"}, true}, {[]string{"GET", "r:1"}, false}})
	})

	// A changed role reaches every binding that uses it.
	updateRole(t, role, func(s *valkeyv1.ValkeyRoleSpec) {
		s.Commands = append(s.Commands, valkeyv1.CommandRule{Name: "get", Access: valkeyv1.RuleDeny})
	})
	eventually(t, 90*time.Second, "the role's new deny on every node", func() error {
		return f.runChecks("rw", "rw-pw", []check{{[]string{"GET", "rw:1"}, false}, {[]string{"SET", "rw:1", "y"}, true}})
	})
	updateRole(t, role, func(s *valkeyv1.ValkeyRoleSpec) { s.Commands = s.Commands[:1] })
	eventually(t, 90*time.Second, "the role's deny lifted on every node", func() error {
		return f.runChecks("rw", "rw-pw", []check{{[]string{"GET", "rw:1"}, true}})
	})

	// Password rotation: both hashes, then the new one alone.
	rw.PasswordHashes = []valkeyv1.PasswordHash{passwordHash("rw-pw"), passwordHash("rw-pw-2")}
	f.setACL([]valkeyv1.AclBinding{reader, writer, rw})
	eventually(t, 90*time.Second, "both of rw's passwords on every node", func() error {
		if err := f.authenticates("rw", "rw-pw-2", true); err != nil {
			return err
		}
		return f.authenticates("rw", "rw-pw", true)
	})
	rw.PasswordHashes = pw("rw-pw-2")
	f.setACL([]valkeyv1.AclBinding{reader, writer, rw})
	eventually(t, 90*time.Second, "only rw's new password on every node", func() error {
		if err := f.authenticates("rw", "rw-pw", false); err != nil {
			return err
		}
		return f.authenticates("rw", "rw-pw-2", true)
	})

	// A removed binding.
	f.setACL([]valkeyv1.AclBinding{reader, rw})
	eventually(t, 90*time.Second, "writer removed from every node", func() error {
		return f.authenticates("writer", "writer-pw", false)
	})
	if err := f.runChecks("rw", "rw-pw-2", []check{{[]string{"GET", "rw:1"}, true}}); err != nil {
		t.Fatal(err)
	}
	if err := f.defaultUser(false); err != nil {
		t.Fatal(err)
	}

	f.waitACLApplied(time.Minute)
	if bad := states(); len(bad) > 0 {
		t.Fatalf("cluster left Active during ACL changes: %v", bad)
	}
	f.assertPodsUntouched(before)
	syncsAfter, link := f.replication()
	if link != "up" || syncsAfter != syncsBefore {
		t.Fatalf("replication: link %q, syncs %s before and %s after; want the link up and never re-established", link, syncsBefore, syncsAfter)
	}
	if got := f.aclLoads("success"); got < loadsBefore+2 {
		t.Fatalf("valkey_acl_loads_total{result=success} went from %v to %v", loadsBefore, got)
	}
	if got := f.aclLoads("rejected"); got != 0 {
		t.Fatalf("%v ACL LOADs rejected", got)
	}
	waitActive(t, f.key, 1, 1, 10*time.Second)
}

// setOperatorUser switches the operator's user on or off on one node, as
// the node's default user (open while the node runs a file without
// bindings): with it off, the operator cannot authenticate there, so to
// the operator the node is down, while it keeps serving, replicating and
// gossiping.
func (f *aclFixture) setOperatorUser(addr, state string) {
	f.t.Helper()
	s, err := dialRESP(addr)
	if err != nil {
		f.t.Fatal(err)
	}
	defer s.conn.Close()
	if reply, err := s.do("ACL", "SETUSER", render.OperatorUser, state); err != nil || reply != "+OK" {
		f.t.Fatalf("ACL SETUSER %s %s on %s = %q, %v", render.OperatorUser, state, addr, reply, err)
	}
	if state != "off" {
		return
	}
	// A user switched off keeps the connections it already has; the
	// operator keeps its connections between visits, so they go too.
	if reply, err := s.do("CLIENT", "KILL", "USER", render.OperatorUser); err != nil || strings.HasPrefix(reply, "-") {
		f.t.Fatalf("CLIENT KILL USER %s on %s = %q, %v", render.OperatorUser, addr, reply, err)
	}
}

// A node the operator cannot reach while the ACL changes does not hold up
// the others and catches up once it answers again; an ACL file a node
// refuses leaves its previous rules in force and is reported.
//
// Pods here never restart (restartPolicy Never), and a node that stops
// answering its peers for cluster-node-timeout is replaced by a fresh pod
// that starts on the new file anyway. So the node stays up and only the
// operator is shut out of it: its user is switched off on that node, and
// its connections there closed.
func TestACLUnreachableNodeCatchesUpAndRejectedFileReported(t *testing.T) {
	t.Parallel()
	const ns = "acl-down"
	role := "acl-down-app"
	createRole(t, role, valkeyv1.ValkeyRoleSpec{
		Categories: []valkeyv1.CategoryRule{{Name: "read", Access: valkeyv1.RuleAllow}, {Name: "write", Access: valkeyv1.RuleAllow}},
	})
	f := newACLFixture(t, ns, aclVersion, nil)
	f.waitACLApplied(time.Minute)
	before := f.podSnapshot()
	vc := f.cluster()
	if len(vc.Status.ShardStatuses) != 1 || len(vc.Status.ShardStatuses[0].Replicas) != 1 {
		t.Fatalf("shards %+v", vc.Status.ShardStatuses)
	}
	primaryName, replicaName := vc.Status.ShardStatuses[0].Primary, vc.Status.ShardStatuses[0].Replicas[0]
	addrs := f.addresses()

	f.setOperatorUser(addrs[replicaName], "off")
	t.Cleanup(func() {
		// The node is open again only if the test stopped before the
		// reload closed it.
		if s, err := dialRESP(addrs[replicaName]); err == nil {
			_, _ = s.do("ACL", "SETUSER", render.OperatorUser, "on")
			s.conn.Close()
		}
	})
	app := binding("app", []valkeyv1.PasswordHash{passwordHash("pw-1")}, role, keys("app:*", valkeyv1.KeyAccessReadWrite))
	f.setACL([]valkeyv1.AclBinding{app})
	start := time.Now()
	eventually(t, 90*time.Second, "the binding on the primary while the replica is unreachable", func() error {
		c, err := nodeClient(addrs[primaryName], "app", "pw-1")
		if err != nil {
			return err
		}
		c.Close()
		return nil
	})
	t.Logf("binding reached the primary %s after the update", time.Since(start).Round(time.Millisecond))
	eventually(t, time.Minute, "ACLApplied to name the unreachable node", func() error {
		c := meta.FindStatusCondition(f.cluster().Status.Conditions, valkeyv1.CondACLApplied)
		if c == nil || c.Status != metav1.ConditionFalse || c.Reason != valkeyv1.ReasonUnreachable || !strings.Contains(c.Message, "["+replicaName+"]") {
			return fmt.Errorf("ACLApplied %+v", c)
		}
		return nil
	})
	// The replica still runs its old rules: the open default user, no app.
	if c, err := nodeClient(addrs[replicaName], "app", "pw-1"); err == nil {
		c.Close()
		t.Fatalf("app authenticates on the unreachable replica")
	}
	unreachableLoads := f.aclLoads("unreachable")
	if unreachableLoads == 0 {
		t.Fatalf("no unreachable ACL LOAD counted")
	}

	f.setOperatorUser(addrs[replicaName], "on")
	start = time.Now()
	eventually(t, 90*time.Second, "the binding on the replica once it answers", func() error {
		if err := f.defaultUser(false); err != nil {
			return err
		}
		return f.authenticates("app", "pw-1", true)
	})
	t.Logf("replica caught up %s after the operator could reach it again", time.Since(start).Round(time.Millisecond))
	f.waitACLApplied(time.Minute)

	// A role naming a command Valkey does not have: every node refuses the
	// file and keeps the rules it had.
	updateRole(t, role, func(s *valkeyv1.ValkeyRoleSpec) {
		s.Commands = append(s.Commands, valkeyv1.CommandRule{Name: "nosuchcommand", Access: valkeyv1.RuleAllow})
	})
	f.waitCondition(valkeyv1.CondACLApplied, metav1.ConditionFalse, valkeyv1.ReasonACLRejected, "", 90*time.Second)
	// A replica updated one user at a time refuses at once; the primary
	// only once its mounted file has the new rules.
	var c *metav1.Condition
	eventually(t, 30*time.Second, "ACLApplied to name every node and Valkey's error", func() error {
		c = meta.FindStatusCondition(f.cluster().Status.Conditions, valkeyv1.CondACLApplied)
		for _, name := range []string{primaryName, replicaName} {
			if c == nil || c.Reason != valkeyv1.ReasonACLRejected || !strings.Contains(c.Message, "node "+name+": ") || !strings.Contains(c.Message, "nosuchcommand") {
				return fmt.Errorf("ACLApplied %+v does not name node %s", c, name)
			}
		}
		return nil
	})
	t.Logf("ACLApplied: %s", c.Message)
	for _, name := range []string{primaryName, replicaName} {
		f.waitEvent(corev1.EventTypeWarning, valkeyv1.ReasonACLRejected, "node "+name+" rejected the ACL file", 30*time.Second)
	}
	if err := f.runChecks("app", "pw-1", []check{{[]string{"SET", "app:1", "x"}, true}, {[]string{"GET", "other"}, false}}); err != nil {
		t.Fatalf("previous rules not kept: %v", err)
	}
	if got := f.aclLoads("rejected"); got < 2 {
		t.Fatalf("valkey_acl_loads_total{result=rejected} = %v, want at least one per node", got)
	}

	updateRole(t, role, func(s *valkeyv1.ValkeyRoleSpec) { s.Commands = nil })
	f.waitACLApplied(90 * time.Second)
	f.assertPodsUntouched(before)
	waitActive(t, f.key, 1, 1, time.Minute)
	if _, link := f.replication(); link != "up" {
		t.Fatalf("replica link %q", link)
	}
}

// On Valkey 9 every node, replicas included, reloads the file with ACL
// LOAD; the per-user grants of Valkey 8.0.0-8.0.2 clusters are not rendered.
func TestACLValkey9ReloadsEveryNode(t *testing.T) {
	t.Parallel()
	const ns = "acl-v9"
	role := "acl-v9-app"
	createRole(t, role, valkeyv1.ValkeyRoleSpec{Categories: []valkeyv1.CategoryRule{{Name: "read", Access: valkeyv1.RuleAllow}}})
	f := newACLFixture(t, ns, "9.1.2", nil)
	f.waitACLApplied(time.Minute)
	before := f.podSnapshot()
	loads := f.aclLoads("success")

	f.setACL([]valkeyv1.AclBinding{binding("app", []valkeyv1.PasswordHash{passwordHash("pw")}, role, keys("app:*", valkeyv1.KeyAccessRead))})
	eventually(t, 90*time.Second, "the binding on every node", func() error { return f.authenticates("app", "pw", true) })
	f.waitACLApplied(time.Minute)
	if err := f.runChecks("app", "pw", []check{{[]string{"GET", "app:1"}, true}, {[]string{"SET", "app:1", "x"}, false}}); err != nil {
		t.Fatal(err)
	}
	if got := f.aclLoads("success"); got < loads+2 {
		t.Fatalf("valkey_acl_loads_total{result=success} went from %v to %v, want one ACL LOAD per node at least", loads, got)
	}
	for name, addr := range f.addresses() {
		n := f.operatorNode(addr)
		err := n.AclSetUser(context.Background(), render.ACLCheckUser, "on")
		n.Close()
		if err == nil || !strings.Contains(err.Error(), "NOPERM") {
			t.Fatalf("node %s: ACL SETUSER as the operator on Valkey 9 = %v, want NOPERM", name, err)
		}
	}
	f.assertPodsUntouched(before)
	if _, link := f.replication(); link != "up" {
		t.Fatalf("replica link %q", link)
	}
}
