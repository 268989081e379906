package aclplan

import (
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	valkeyv1 "github.com/gomomento/valkey-operator/api/v1alpha1"
	"github.com/gomomento/valkey-operator/internal/render"
	"github.com/gomomento/valkey-operator/internal/textutil"
	"github.com/gomomento/valkey-operator/internal/valkey"
)

// How the ACL reloader paces itself. A node's mounted file trails the Secret
// by the kubelet's projection delay, so after a change the reloader retries
// soon until every node runs the rendered rules, for a bounded time, and
// then falls back to its tick.
const (
	retryPending     = time.Second
	retryUnreachable = 5 * time.Second
	convergeWindow   = 2 * time.Minute
)

// User is one user's ACL as Valkey enforces it, reduced to what a
// rendered line and an ACL LIST line of the same rules have in common.
// Valkey rewrites rules when it stores them (it lowercases commands and
// categories, drops a command or category rule that a later rule for the
// same name overrides, drops subcommand rules that a later rule for the
// whole command overrides, merges a pattern's read and write flags, and
// adds sanitize-payload, resetchannels and -@all); normalising both sides
// the same way makes equal rules compare equal, in either direction.
type User struct {
	On        bool
	NoPass    bool
	Hashes    []string // sorted, distinct
	Root      Selector
	Selectors []Selector
}

type Selector struct {
	// Keys maps a key pattern to its access: "R", "W" or "RW".
	Keys map[string]string
	// Channels are the channel patterns, sorted and distinct.
	Channels []string
	// AllCommands is set by +@all, cleared by -@all.
	AllCommands bool
	// Commands are the command and category rules in effect, in order.
	Commands []string
	// Other keeps tokens this normalisation does not know, verbatim, so
	// that they still have to match.
	Other []string
}

// parseLine parses "user <name> <rules...>", as rendered or as ACL LIST
// prints it.
func parseLine(line string) (string, User, error) {
	fields := strings.Fields(line)
	if len(fields) < 2 || fields[0] != "user" {
		return "", User{}, fmt.Errorf("not a user line: %q", textutil.Truncate(line, 80))
	}
	name := fields[1]
	u := User{Root: newSelector()}
	for i := 2; i < len(fields); i++ {
		f := fields[i]
		if strings.HasPrefix(f, "(") {
			var parts []string
			for ; i < len(fields); i++ {
				parts = append(parts, fields[i])
				if strings.HasSuffix(fields[i], ")") {
					break
				}
			}
			body := strings.Join(parts, " ")
			if !strings.HasSuffix(body, ")") {
				return "", User{}, fmt.Errorf("user %q: unterminated selector", name)
			}
			sel := newSelector()
			for _, t := range strings.Fields(body[1 : len(body)-1]) {
				sel.apply(t)
			}
			u.Selectors = append(u.Selectors, sel.finish())
			continue
		}
		switch {
		case f == "on":
			u.On = true
		case f == "off":
			u.On = false
		case f == "nopass":
			u.NoPass, u.Hashes = true, nil
		case f == "resetpass":
			u.NoPass, u.Hashes = false, nil
		case strings.HasPrefix(f, "#"):
			u.NoPass = false
			u.Hashes = append(u.Hashes, strings.ToLower(f[1:]))
		case f == "sanitize-payload" || f == "skip-sanitize-payload":
			// Valkey's default, printed by ACL LIST on some versions.
		default:
			u.Root.apply(f)
		}
	}
	slices.Sort(u.Hashes)
	u.Hashes = slices.Compact(u.Hashes)
	u.Root = u.Root.finish()
	return name, u, nil
}

func newSelector() Selector { return Selector{Keys: map[string]string{}} }

func (s *Selector) apply(t string) {
	switch {
	case t == "resetkeys":
		s.Keys = map[string]string{}
	case t == "allkeys":
		s.addKey("*", "RW")
	case t == "resetchannels":
		s.Channels = nil
	case t == "allchannels":
		s.Channels = []string{"*"}
	case t == "allcommands" || strings.EqualFold(t, "+@all"):
		s.AllCommands, s.Commands = true, nil
	case t == "nocommands" || strings.EqualFold(t, "-@all"):
		s.AllCommands, s.Commands = false, nil
	case strings.HasPrefix(t, "~"):
		s.addKey(t[1:], "RW")
	case strings.HasPrefix(t, "%"):
		flags, pattern, ok := strings.Cut(t[1:], "~")
		if !ok {
			s.Other = append(s.Other, t)
			return
		}
		s.addKey(pattern, strings.ToUpper(flags))
	case strings.HasPrefix(t, "&"):
		s.Channels = append(s.Channels, t[1:])
	case strings.HasPrefix(t, "+") || strings.HasPrefix(t, "-"):
		s.addCommand(strings.ToLower(t))
	default:
		s.Other = append(s.Other, t)
	}
}

func (s *Selector) addKey(pattern, flags string) {
	have := s.Keys[pattern]
	r := strings.Contains(have+flags, "R")
	w := strings.Contains(have+flags, "W")
	switch {
	case r && w:
		s.Keys[pattern] = "RW"
	case r:
		s.Keys[pattern] = "R"
	case w:
		s.Keys[pattern] = "W"
	}
}

// addCommand applies a rule the way Valkey records it: a rule replaces any
// earlier rule for the same name, and a rule for a whole command also
// replaces the earlier rules for its subcommands.
func (s *Selector) addCommand(rule string) {
	name := rule[1:]
	whole := !strings.HasPrefix(name, "@") && !strings.Contains(name, "|")
	s.Commands = slices.DeleteFunc(s.Commands, func(r string) bool {
		n := r[1:]
		return n == name || (whole && strings.HasPrefix(n, name+"|"))
	})
	s.Commands = append(s.Commands, rule)
}

func (s Selector) finish() Selector {
	if slices.Contains(s.Channels, "*") {
		s.Channels = []string{"*"}
	}
	slices.Sort(s.Channels)
	s.Channels = slices.Compact(s.Channels)
	return s
}

func (s Selector) equal(o Selector) bool {
	if len(s.Keys) != len(o.Keys) {
		return false
	}
	for k, v := range s.Keys {
		if o.Keys[k] != v {
			return false
		}
	}
	return slices.Equal(s.Channels, o.Channels) && s.AllCommands == o.AllCommands &&
		slices.Equal(s.Commands, o.Commands) && slices.Equal(s.Other, o.Other)
}

func (u User) equal(o User) bool {
	if u.On != o.On || u.NoPass != o.NoPass || !slices.Equal(u.Hashes, o.Hashes) ||
		!u.Root.equal(o.Root) || len(u.Selectors) != len(o.Selectors) {
		return false
	}
	for i := range u.Selectors {
		if !u.Selectors[i].equal(o.Selectors[i]) {
			return false
		}
	}
	return true
}

// ParseLines parses an ACL file or ACL LIST output into users by name,
// skipping blank lines.
func ParseLines(lines []string) (map[string]User, error) {
	out := map[string]User{}
	for _, l := range lines {
		l = strings.TrimSpace(l)
		if l == "" {
			continue
		}
		name, u, err := parseLine(l)
		if err != nil {
			return nil, err
		}
		if _, dup := out[name]; dup {
			return nil, fmt.Errorf("user %q defined twice", name)
		}
		out[name] = u
	}
	return out, nil
}

// Diff describes how what a node runs differs from what was rendered,
// naming users but never their password hashes; "" when they agree.
func Diff(want, got map[string]User) string {
	var missing, extra, changed []string
	for name, w := range want {
		g, ok := got[name]
		switch {
		case !ok:
			missing = append(missing, name)
		case !w.equal(g):
			changed = append(changed, name)
		}
	}
	for name := range got {
		if _, ok := want[name]; !ok {
			extra = append(extra, name)
		}
	}
	var parts []string
	for _, d := range []struct {
		what  string
		names []string
	}{{"missing", missing}, {"different", changed}, {"not rendered", extra}} {
		if len(d.names) > 0 {
			sort.Strings(d.names)
			parts = append(parts, fmt.Sprintf("%s users %v", d.what, d.names))
		}
	}
	return strings.Join(parts, "; ")
}

// LoadUnsafe says whether ACL LOAD would crash a node; such a node is
// updated one user at a time instead (PerUser).
func LoadUnsafe(v valkey.Version, role string) bool {
	return role == valkey.RoleReplica && valkey.ACLLoadCrashesReplicas(v)
}

// SetUser is one ACL SETUSER: the user's name and its rendered rules,
// each selector one argument.
type SetUser struct {
	Name  string
	Rules []string
}

// PerUser is what brings a node that runs got to the rendered file
// without ACL LOAD: an ACL SETUSER for every user missing or different, an
// ACL DELUSER for every user not rendered. The operator's own user comes
// last, so the connection doing the work keeps its rights until the end.
func PerUser(file string, got map[string]User) (set []SetUser, del []string, err error) {
	want := map[string]bool{}
	for _, line := range strings.Split(file, "\n") {
		line = strings.TrimSpace(line)
		if line == "" {
			continue
		}
		name, u, err := parseLine(line)
		if err != nil {
			return nil, nil, err
		}
		want[name] = true
		if g, ok := got[name]; ok && g.equal(u) {
			continue
		}
		rules, err := ruleArgs(line)
		if err != nil {
			return nil, nil, err
		}
		set = append(set, SetUser{Name: name, Rules: rules})
	}
	for name := range got {
		if !want[name] && name != render.DefaultUser {
			del = append(del, name)
		}
	}
	sort.Strings(del)
	if i := slices.IndexFunc(set, func(s SetUser) bool { return s.Name == render.OperatorUser }); i >= 0 {
		set = append(append(set[:i:i], set[i+1:]...), set[i])
	}
	return set, del, nil
}

// ruleArgs splits "user <name> <rules...>" into ACL SETUSER arguments:
// each rule one argument, a "( ... )" selector kept whole.
func ruleArgs(line string) ([]string, error) {
	fields := strings.Fields(line)
	if len(fields) < 2 || fields[0] != "user" {
		return nil, fmt.Errorf("not a user line: %q", textutil.Truncate(line, 80))
	}
	var args []string
	for i := 2; i < len(fields); i++ {
		if !strings.HasPrefix(fields[i], "(") {
			args = append(args, fields[i])
			continue
		}
		start := i
		for ; i < len(fields) && !strings.HasSuffix(fields[i], ")"); i++ {
		}
		if i == len(fields) {
			return nil, fmt.Errorf("user %q: unterminated selector", fields[1])
		}
		args = append(args, strings.Join(fields[start:i+1], " "))
	}
	return args, nil
}

// Node is what one pass learned about one node.
type Node struct {
	Name string
	// Unreachable: the node could not be asked (connect, auth, timeout).
	Unreachable error
	// Rejected: ACL LOAD returned an error reply; the node keeps its
	// previous rules.
	Rejected error
	// Diff is how the node's ACL LIST differs from the rendered file after
	// a successful ACL LOAD: its mounted file is not the rendered one yet.
	Diff string
	// Unsafe is the version of a node that would crash on ACL LOAD, which
	// is not sent, and that refused the per-user update (UnsafeErr).
	Unsafe    string
	UnsafeErr error
	// Applied: the node took ACL LOAD or the per-user update. A node that
	// already ran the rendered rules was sent neither.
	Applied bool
}

// LoadResult is the valkey_acl_loads_total result one visit counts
// under, "" when nothing was sent. A node that went away at any step
// counts as unreachable: the dial, INFO, ACL LIST and the load itself.
func LoadResult(n Node) string {
	switch {
	case n.Unreachable != nil:
		return "unreachable"
	case n.Rejected != nil || n.Unsafe != "":
		return "rejected"
	case n.Applied:
		return "success"
	}
	return ""
}

// Current says the node runs the rendered rules: reached, not refused,
// and no difference left.
func (n Node) Current() bool {
	return n.Unreachable == nil && n.Rejected == nil && n.Diff == "" && n.Unsafe == ""
}

// Input is one pass over a cluster.
type Input struct {
	Secret string
	Nodes  []Node
	// Age is how long the cluster's nodes have not all run the rendered
	// file (zero when they just did or the file just changed).
	Age  time.Duration
	Tick time.Duration
}

type Report struct {
	Status  metav1.ConditionStatus
	Reason  string
	Message string
	Requeue time.Duration
	// Rejected are the nodes that refused the file, for Events.
	Rejected []Node
}

// Summarize turns a pass into the ACLApplied condition and when to look
// again. A rejected file outranks an unreachable node, which outranks a
// node whose file has not been projected yet: each is what a user must act
// on first.
func Summarize(in Input) Report {
	rep := Report{Requeue: in.Tick}
	if len(in.Nodes) == 0 {
		rep.Status, rep.Reason = metav1.ConditionFalse, valkeyv1.ReasonWaiting
		rep.Message = "no running node to load the ACL file into yet"
		return rep
	}
	var unreachable, pending, unsafe []string
	unsafeVersion := ""
	var unsafeErr error
	var firstUnreachable error
	pendingDiff := ""
	for _, n := range in.Nodes {
		switch {
		case n.Rejected != nil:
			rep.Rejected = append(rep.Rejected, n)
		case n.Unsafe != "":
			if unsafe == nil {
				unsafeVersion, unsafeErr = n.Unsafe, n.UnsafeErr
			}
			unsafe = append(unsafe, n.Name)
		case n.Unreachable != nil:
			if firstUnreachable == nil {
				firstUnreachable = n.Unreachable
			}
			unreachable = append(unreachable, n.Name)
		case n.Diff != "":
			if pendingDiff == "" {
				pendingDiff = n.Diff
			}
			pending = append(pending, n.Name)
		}
	}
	total := len(in.Nodes)
	switch {
	case len(rep.Rejected) > 0:
		var parts []string
		for _, n := range rep.Rejected {
			parts = append(parts, fmt.Sprintf("node %s: %s", n.Name, textutil.Truncate(n.Rejected.Error(), 300)))
		}
		rep.Status, rep.Reason = metav1.ConditionFalse, valkeyv1.ReasonACLRejected
		rep.Message = fmt.Sprintf("%d of %d nodes rejected the ACL file in Secret %q and keep their previous ACL rules: %s",
			len(rep.Rejected), total, in.Secret, strings.Join(parts, "; "))
	case len(unsafe) > 0:
		rep.Status, rep.Reason = metav1.ConditionFalse, valkeyv1.ReasonACLLoadUnsafe
		rep.Message = fmt.Sprintf("%d of %d nodes %v are replicas running Valkey %s, which crashes on ACL LOAD (fixed in %s), "+
			"and refused the rules one user at a time (%s): they keep their previous ACL rules until upgraded or replaced, "+
			"and do not run the ACL file in Secret %q",
			len(unsafe), total, unsafe, unsafeVersion, valkey.ACLLoadFixedVersion(), textutil.Truncate(fmt.Sprint(unsafeErr), 300), in.Secret)
		return rep
	case len(unreachable) > 0:
		rep.Status, rep.Reason = metav1.ConditionFalse, valkeyv1.ReasonUnreachable
		rep.Message = fmt.Sprintf("cannot reach %d of %d nodes %v to load the ACL file in Secret %q: %s",
			len(unreachable), total, unreachable, in.Secret, textutil.Truncate(firstUnreachable.Error(), 300))
	case len(pending) > 0:
		rep.Status, rep.Reason = metav1.ConditionFalse, valkeyv1.ReasonACLPending
		rep.Message = fmt.Sprintf("%d of %d nodes %v do not run the ACL file in Secret %q yet (%s); their mounted file has not been updated",
			len(pending), total, pending, in.Secret, pendingDiff)
	default:
		rep.Status, rep.Reason = metav1.ConditionTrue, valkeyv1.ReasonACLCurrent
		rep.Message = fmt.Sprintf("all %d nodes run the ACL rules in Secret %q", total, in.Secret)
		return rep
	}
	if in.Age < convergeWindow {
		switch {
		case len(pending) > 0:
			rep.Requeue = retryPending
		default:
			rep.Requeue = retryUnreachable
		}
		rep.Requeue = min(rep.Requeue, in.Tick)
	}
	return rep
}
