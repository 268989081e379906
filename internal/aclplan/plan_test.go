package aclplan

import (
	"errors"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	valkeyv1 "github.com/gomomento/valkey-operator/api/v1alpha1"
	"github.com/gomomento/valkey-operator/internal/valkey"
)

const (
	aclHashX = "2d711642b726b04401627ca9fbac32f5c8530fb1903cc4db02258717921a4881"
	aclHashB = "bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb"
)

// renderedACL is a file in the shape the cluster controller renders, with
// rules Valkey rewrites when it stores them.
var renderedACL = []string{
	"user team-batch on #" + aclHashX + " #" + aclHashB + " resetchannels ~batch:* +@read +@write +cluster|info -flushall (%R~metrics:* +@read +@write +cluster|info -flushall)",
	"user app on #" + aclHashX + " resetchannels %R~r:* %W~w:* ~rw:* &news.* &alerts +@read -@dangerous +get -keys",
	"user e1 on #" + aclHashX + " resetchannels ~a +cluster|info +cluster",
	"user e2 on #" + aclHashX + " resetchannels ~a +get +GET -get +@read -@read",
	"user e3 on #" + aclHashX + " resetchannels ~a %R~a %W~b %R~b &x &x +@all +get",
	"user e4 on #" + aclHashX + " resetchannels ~a +cluster -cluster|info",
	"user e5 on #" + aclHashX + " resetchannels ~a -@all +@READ +Get (~b -@all +@write)",
	"user e7 on #" + aclHashX + " #" + aclHashX + " resetchannels %RW~q +@read +@write -@read",
	"user nothing on #" + aclHashX + " resetchannels ()",
	"user default off",
	"user _momento_operator on #" + aclHashX + " resetchannels +cluster +acl|load +acl|list +ping +info +config|set",
}

// listedACL8 is what valkey-server 8.0.1 answered to ACL LIST after
// loading renderedACL; Valkey 9.1 prints the same without sanitize-payload.
var listedACL8 = []string{
	"user _momento_operator on sanitize-payload #" + aclHashX + " resetchannels -@all +cluster +acl|load +acl|list +ping +info +config|set",
	"user app on sanitize-payload #" + aclHashX + " %R~r:* %W~w:* ~rw:* resetchannels &news.* &alerts -@all +@read -@dangerous +get -keys",
	"user default off sanitize-payload resetchannels -@all",
	"user e1 on sanitize-payload #" + aclHashX + " ~a resetchannels -@all +cluster",
	"user e2 on sanitize-payload #" + aclHashX + " ~a resetchannels -@all -get -@read",
	"user e3 on sanitize-payload #" + aclHashX + " ~a ~b resetchannels &x +@all +get",
	"user e4 on sanitize-payload #" + aclHashX + " ~a resetchannels -@all +cluster -cluster|info",
	"user e5 on sanitize-payload #" + aclHashX + " ~a resetchannels -@all +@read +get (~b resetchannels -@all +@write)",
	"user e7 on sanitize-payload #" + aclHashX + " ~q resetchannels -@all +@write -@read",
	"user nothing on sanitize-payload #" + aclHashX + " resetchannels -@all (resetchannels -@all)",
	"user team-batch on sanitize-payload #" + aclHashX + " #" + aclHashB + " ~batch:* resetchannels -@all +@read +@write +cluster|info -flushall (%R~metrics:* resetchannels -@all +@read +@write +cluster|info -flushall)",
}

func listedACL9() []string {
	out := make([]string, len(listedACL8))
	for i, l := range listedACL8 {
		out[i] = strings.Replace(l, " sanitize-payload", "", 1)
	}
	return out
}

// replaceLine swaps the line of one user.
func replaceLine(lines []string, user, line string) []string {
	out := make([]string, 0, len(lines))
	for _, l := range lines {
		if strings.HasPrefix(l, "user "+user+" ") {
			if line == "" {
				continue
			}
			l = line
		}
		out = append(out, l)
	}
	return out
}

func TestDiffACL(t *testing.T) {
	tests := []struct {
		name     string
		rendered []string
		listed   []string
		want     string
	}{
		{name: "Valkey 8 normalisation agrees", rendered: renderedACL, listed: listedACL8},
		{name: "Valkey 9 normalisation agrees", rendered: renderedACL, listed: listedACL9()},
		{name: "open default user", rendered: []string{"user default on nopass ~* &* +@all"},
			listed: []string{"user default on nopass sanitize-payload ~* &* +@all"}},
		{name: "open default user listed with allkeys words", rendered: []string{"user default on nopass ~* &* +@all"},
			listed: []string{"user default on nopass allkeys allchannels allcommands"}},
		{name: "a key pattern the node still has", rendered: renderedACL,
			listed: replaceLine(listedACL8, "e3", "user e3 on #"+aclHashX+" ~a ~b ~c resetchannels &x +@all +get"),
			want:   "different users [e3]"},
		{name: "read where write was rendered", rendered: renderedACL,
			listed: replaceLine(listedACL8, "app", "user app on #"+aclHashX+" %R~r:* %R~w:* ~rw:* resetchannels &news.* &alerts -@all +@read -@dangerous +get -keys"),
			want:   "different users [app]"},
		{name: "a channel the node lacks", rendered: renderedACL,
			listed: replaceLine(listedACL8, "app", "user app on #"+aclHashX+" %R~r:* %W~w:* ~rw:* resetchannels &news.* -@all +@read -@dangerous +get -keys"),
			want:   "different users [app]"},
		{name: "command rules in another order mean otherwise", rendered: renderedACL,
			listed: replaceLine(listedACL8, "app", "user app on #"+aclHashX+" %R~r:* %W~w:* ~rw:* resetchannels &news.* &alerts -@all -keys +@read -@dangerous +get"),
			want:   "different users [app]"},
		{name: "old password hash still accepted", rendered: renderedACL,
			listed: replaceLine(listedACL8, "e1", "user e1 on #"+aclHashX+" #"+aclHashB+" ~a resetchannels -@all +cluster"),
			want:   "different users [e1]"},
		{name: "user off where rendered on", rendered: renderedACL,
			listed: replaceLine(listedACL8, "e1", "user e1 off #"+aclHashX+" ~a resetchannels -@all +cluster"),
			want:   "different users [e1]"},
		{name: "a selector the node lacks", rendered: renderedACL,
			listed: replaceLine(listedACL8, "team-batch", "user team-batch on #"+aclHashX+" #"+aclHashB+" ~batch:* resetchannels -@all +@read +@write +cluster|info -flushall"),
			want:   "different users [team-batch]"},
		{name: "default user open on the node", rendered: renderedACL,
			listed: replaceLine(listedACL8, "default", "user default on nopass ~* &* +@all"),
			want:   "different users [default]"},
		{name: "users added and removed", rendered: renderedACL,
			listed: append(replaceLine(listedACL8, "e7", ""), "user stale on #"+aclHashX+" resetchannels -@all"),
			want:   "missing users [e7]; not rendered users [stale]"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			want, err := ParseLines(tt.rendered)
			if err != nil {
				t.Fatal(err)
			}
			got, err := ParseLines(tt.listed)
			if err != nil {
				t.Fatal(err)
			}
			if d := Diff(want, got); d != tt.want {
				t.Fatalf("diff = %q, want %q", d, tt.want)
			}
		})
	}
}

func TestParseACLLinesRefuses(t *testing.T) {
	for _, lines := range [][]string{
		{"usr x on"},
		{"user"},
		{"user x on (~a +get"},
		{"user x on", "user x off"},
	} {
		if _, err := ParseLines(lines); err == nil {
			t.Errorf("ParseLines(%q) succeeded", lines)
		}
	}
	if got, err := ParseLines([]string{"", "  ", "user x off"}); err != nil || len(got) != 1 {
		t.Errorf("blank lines: %v, %v", got, err)
	}
}

func TestDiffACLNeverShowsHashes(t *testing.T) {
	want, _ := ParseLines([]string{"user a on #" + aclHashX})
	got, _ := ParseLines([]string{"user a on #" + aclHashB})
	if d := Diff(want, got); d == "" || strings.Contains(d, aclHashX[:8]) || strings.Contains(d, aclHashB[:8]) {
		t.Fatalf("diff %q", d)
	}
}

func TestSummarizeACL(t *testing.T) {
	const tick = 30 * time.Second
	ok := func(n string) Node { return Node{Name: n} }
	rejected := Node{Name: "c-1", Rejected: errors.New("ERR Error in user declaration 'x': Unknown command or category name in ACL")}
	down := Node{Name: "c-2", Unreachable: errors.New("connecting to node c-2: i/o timeout")}
	lagging := Node{Name: "c-3", Diff: "different users [app]"}
	tests := []struct {
		name        string
		nodes       []Node
		age         time.Duration
		status      metav1.ConditionStatus
		reason      string
		message     string
		requeue     time.Duration
		rejectedLen int
	}{
		{name: "no node yet", status: metav1.ConditionFalse, reason: valkeyv1.ReasonWaiting,
			message: "no running node to load the ACL file into yet", requeue: tick},
		{name: "every node current", nodes: []Node{ok("c-0"), ok("c-1")}, status: metav1.ConditionTrue, reason: valkeyv1.ReasonACLCurrent,
			message: `all 2 nodes run the ACL rules in Secret "c-acl"`, requeue: tick},
		{name: "file not projected yet: retry soon", nodes: []Node{ok("c-0"), lagging}, age: 3 * time.Second,
			status: metav1.ConditionFalse, reason: valkeyv1.ReasonACLPending,
			message: `1 of 2 nodes [c-3] do not run the ACL file in Secret "c-acl" yet (different users [app]); their mounted file has not been updated`,
			requeue: retryPending},
		{name: "not projected for too long: back to the tick", nodes: []Node{lagging}, age: convergeWindow,
			status: metav1.ConditionFalse, reason: valkeyv1.ReasonACLPending, requeue: tick},
		{name: "unreachable node does not hide the others and is retried", nodes: []Node{ok("c-0"), down, lagging}, age: time.Second,
			status: metav1.ConditionFalse, reason: valkeyv1.ReasonUnreachable,
			message: `cannot reach 1 of 3 nodes [c-2] to load the ACL file in Secret "c-acl": connecting to node c-2: i/o timeout`,
			requeue: retryPending},
		{name: "unreachable alone retries less often", nodes: []Node{ok("c-0"), down}, age: time.Second,
			status: metav1.ConditionFalse, reason: valkeyv1.ReasonUnreachable, requeue: retryUnreachable},
		{name: "replica that would crash on ACL LOAD and refuses ACL SETUSER is reported, not retried",
			nodes: []Node{ok("c-0"), {Name: "c-4", Unsafe: "8.0.1", UnsafeErr: errors.New("NOPERM User _momento_operator has no permissions to run the 'acl|setuser' command")}, down},
			age:   time.Second, status: metav1.ConditionFalse, reason: valkeyv1.ReasonACLLoadUnsafe,
			message: `1 of 3 nodes [c-4] are replicas running Valkey 8.0.1, which crashes on ACL LOAD (fixed in 8.0.3), and refused the rules one user at a time ` +
				`(NOPERM User _momento_operator has no permissions to run the 'acl|setuser' command): they keep their previous ACL rules until upgraded or replaced, and do not run the ACL file in Secret "c-acl"`,
			requeue: tick},
		{name: "rejection outranks the rest and names node and error", nodes: []Node{ok("c-0"), rejected, down}, age: time.Second,
			status: metav1.ConditionFalse, reason: valkeyv1.ReasonACLRejected,
			message: `1 of 3 nodes rejected the ACL file in Secret "c-acl" and keep their previous ACL rules: node c-1: ERR Error in user declaration 'x': Unknown command or category name in ACL`,
			requeue: retryUnreachable, rejectedLen: 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rep := Summarize(Input{Secret: "c-acl", Nodes: tt.nodes, Age: tt.age, Tick: tick})
			if rep.Status != tt.status || rep.Reason != tt.reason || (tt.message != "" && rep.Message != tt.message) {
				t.Fatalf("got %s (%s): %s", rep.Status, rep.Reason, rep.Message)
			}
			if rep.Requeue != tt.requeue {
				t.Fatalf("requeue %s, want %s", rep.Requeue, tt.requeue)
			}
			if len(rep.Rejected) != tt.rejectedLen {
				t.Fatalf("rejected %v", rep.Rejected)
			}
		})
	}
}

func TestACLLoadUnsafe(t *testing.T) {
	for _, tt := range []struct {
		version string
		role    string
		want    bool
	}{
		{"8.0.0", valkey.RoleReplica, true},
		{"8.0.1", valkey.RoleReplica, true},
		{"8.0.2", valkey.RoleReplica, true},
		{"8.0.1", valkey.RolePrimary, false},
		{"8.0.3", valkey.RoleReplica, false},
		{"8.1.0", valkey.RoleReplica, false},
		{"9.1.2", valkey.RoleReplica, false},
	} {
		v, err := valkey.ParseVersion(tt.version)
		if err != nil {
			t.Fatal(err)
		}
		if got := LoadUnsafe(v, tt.role); got != tt.want {
			t.Errorf("LoadUnsafe(%s, %s) = %v, want %v", tt.version, tt.role, got, tt.want)
		}
	}
}

func TestPerUserACL(t *testing.T) {
	const file = "user app on #" + aclHashB + " resetchannels %R~app:* +@read (~cache:* +get +set)\n" +
		"user default off\n" +
		"user _momento_operator on #" + aclHashX + " resetchannels +cluster +acl|setuser\n"
	running := func(lines ...string) map[string]User {
		got, err := ParseLines(lines)
		if err != nil {
			t.Fatal(err)
		}
		return got
	}
	current := running(
		"user app on sanitize-payload #"+aclHashB+" %R~app:* resetchannels -@all +@read (~cache:* resetchannels -@all +get +set)",
		"user default off sanitize-payload resetchannels -@all",
		"user _momento_operator on sanitize-payload #"+aclHashX+" resetchannels -@all +cluster +acl|setuser")
	tests := []struct {
		name    string
		got     map[string]User
		wantSet []SetUser
		wantDel []string
	}{
		{name: "a node that runs the file needs nothing", got: current},
		{name: "every user missing: the operator's own last", got: map[string]User{},
			wantSet: []SetUser{
				{"app", []string{"on", "#" + aclHashB, "resetchannels", "%R~app:*", "+@read", "(~cache:* +get +set)"}},
				{"default", []string{"off"}},
				{"_momento_operator", []string{"on", "#" + aclHashX, "resetchannels", "+cluster", "+acl|setuser"}},
			}},
		{name: "a changed user is set, a user no longer rendered deleted, default never",
			got: running(
				"user app on #"+aclHashX+" ~app:* +@read",
				"user old on nopass ~* +@all",
				"user zzz on nopass ~* +@all",
				"user _momento_operator on #"+aclHashX+" resetchannels -@all +cluster +acl|setuser"),
			wantSet: []SetUser{
				{"app", []string{"on", "#" + aclHashB, "resetchannels", "%R~app:*", "+@read", "(~cache:* +get +set)"}},
				{"default", []string{"off"}},
			},
			wantDel: []string{"old", "zzz"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			set, del, err := PerUser(file, tt.got)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(set, tt.wantSet) || !slices.Equal(del, tt.wantDel) {
				t.Fatalf("set %q del %q\nwant set %q del %q", set, del, tt.wantSet, tt.wantDel)
			}
		})
	}
	if _, err := ruleArgs("user x on (~a +get"); err == nil {
		t.Fatal("unterminated selector accepted")
	}
}

func TestLoadResult(t *testing.T) {
	boom := errors.New("boom")
	for _, tt := range []struct {
		name string
		node Node
		want string
	}{
		{"nothing to send", Node{}, ""},
		{"loaded", Node{Applied: true}, "success"},
		{"loaded, file not projected yet", Node{Applied: true, Diff: "missing users [app]"}, "success"},
		{"refused", Node{Rejected: boom}, "rejected"},
		{"replica refused per-user rules", Node{Unsafe: "8.0.1", UnsafeErr: boom}, "rejected"},
		{"not reached", Node{Unreachable: boom}, "unreachable"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got := LoadResult(tt.node); got != tt.want {
				t.Errorf("LoadResult = %q, want %q", got, tt.want)
			}
		})
	}
}
