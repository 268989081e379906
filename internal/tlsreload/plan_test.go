package tlsreload

import (
	"crypto/x509"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	valkeyv1 "github.com/gomomento/valkey-operator/api/v1alpha1"
	"github.com/gomomento/valkey-operator/internal/testcerts"
	"github.com/gomomento/valkey-operator/internal/tlssecret"
)

func TestFilesOf(t *testing.T) {
	ca := testcerts.NewCA("ca")
	leaf := testcerts.Leaf(ca, "c", "ns", "cluster.local")
	f, ok := MaterialOf(leaf.CertPEM, leaf.KeyPEM, ca.CertPEM)
	if !ok || f.Leaf != tlssecret.Fingerprint(leaf.Cert.Raw) {
		t.Fatalf("MaterialOf = %+v, %v; want leaf %s", f, ok, tlssecret.Fingerprint(leaf.Cert.Raw))
	}
	other := testcerts.NewCA("other")
	g, _ := MaterialOf(leaf.CertPEM, leaf.KeyPEM, testcerts.Bundle(ca, other))
	if g.Leaf != f.Leaf || g.Hash == f.Hash {
		t.Errorf("a CA bundle change must change the hash but not the leaf: %+v vs %+v", g, f)
	}
	// Bytes moved from one file to the next are a different set of files.
	a, _ := MaterialOf(leaf.CertPEM, []byte("ab"), []byte("c"))
	b, _ := MaterialOf(leaf.CertPEM, []byte("a"), []byte("bc"))
	if a.Hash == b.Hash {
		t.Error("hash ignores file boundaries")
	}
	if _, ok := MaterialOf([]byte("junk"), nil, nil); ok {
		t.Error("MaterialOf accepted a tls.crt without PEM")
	}
}

func TestPlanNode(t *testing.T) {
	want := Material{Leaf: "new", Hash: "H-new"}
	old := &Material{Leaf: "old", Hash: "H-old"}
	cur := &Material{Leaf: "new", Hash: "H-new"}
	caOnly := &Material{Leaf: "old", Hash: "H-old-newca"}
	served := func(fp string) Served { return Served{Fingerprint: fp, Trusted: true} }
	down := Served{Err: errors.New("connection refused")}

	tests := []struct {
		name string
		n    Node
		want Step
	}{
		{"unreachable", Node{Served: down, Files: cur}, StepUnreachable},
		{"files unseen: always reload", Node{Served: served("new")}, StepReload},
		{"files unseen, old served", Node{Served: served("old")}, StepReload},
		{"settled", Node{Served: served("new"), Files: cur, Loaded: "H-new"}, StepNone},
		{"not yet projected", Node{Served: served("old"), Files: old, Loaded: "H-old"}, StepAwaitFiles},
		{"projected, not loaded", Node{Served: served("old"), Files: cur, Loaded: "H-old"}, StepReload},
		{"projected, load unknown", Node{Served: served("old"), Files: cur}, StepReload},
		{"serving, but never reloaded by this process", Node{Served: served("new"), Files: cur}, StepReload},
		{"CA bundle changed alone", Node{Served: served("old"), Files: caOnly, Loaded: "H-old"}, StepReload},
		{"old files, load unknown: reloading them is harmless", Node{Served: served("old"), Files: old}, StepReload},
		{"intermediate version on disk", Node{Served: served("v1"), Files: old, Loaded: "H-v1"}, StepReload},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := PlanNode(want, tc.n); got != tc.want {
				t.Errorf("PlanNode = %s, want %s", got, tc.want)
			}
		})
	}
}

func TestKnownLoaded(t *testing.T) {
	want := Material{Leaf: "new", Hash: "H-new"}
	cur := &Material{Leaf: "new", Hash: "H-new"}
	old := &Material{Leaf: "old", Hash: "H-old"}
	served := func(fp string) Node { return Node{Served: Served{Fingerprint: fp, Trusted: true}} }
	withFiles := func(n Node, f *Material) Node { n.Files = f; return n }
	down := Node{Served: Served{Err: errors.New("connection refused")}}
	late := projectionWindow
	early := projectionWindow - time.Second

	tests := []struct {
		name   string
		o      Outcome
		loaded string
		age    time.Duration
		want   string
	}{
		{"files seen, reload confirmed", Outcome{Reloaded: true, After: withFiles(served("new"), cur)}, "", early, "H-new"},
		{"files seen, old files reloaded", Outcome{Reloaded: true, After: withFiles(served("old"), old)}, "", early, "H-old"},
		{"files seen, reload not confirmed", Outcome{Reloaded: true, After: withFiles(served("old"), cur)}, "H-old", late, "H-old"},
		{"files seen, not reloaded", Outcome{After: withFiles(served("new"), cur)}, "H-new", late, "H-new"},
		{"files unseen, serving want after the projection window", Outcome{Reloaded: true, After: served("new")}, "", late, "H-new"},
		{"files unseen, within the projection window: the CA may be old", Outcome{Reloaded: true, After: served("new")}, "", early, ""},
		{"files unseen, serving an older leaf", Outcome{Reloaded: true, After: served("old")}, "H-old", late, "H-old"},
		{"files unseen, reload failed", Outcome{ReloadErr: errors.New("refused"), After: served("new")}, "", late, ""},
		{"unreachable after the reload", Outcome{Reloaded: true, After: down}, "H-new", late, "H-new"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := KnownLoaded(want, tc.o, tc.loaded, tc.age); got != tc.want {
				t.Errorf("KnownLoaded = %q, want %q", got, tc.want)
			}
		})
	}
}

func TestSummarizeReload(t *testing.T) {
	want := Material{Leaf: "new", Hash: "H-new"}
	cur := &Material{Leaf: "new", Hash: "H-new"}
	old := &Material{Leaf: "old", Hash: "H-old"}
	t0 := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	serve := func(fp string, trusted bool, notAfter time.Time) Served {
		return Served{Fingerprint: fp, Trusted: trusted, NotAfter: notAfter}
	}
	done := func(name string) Outcome {
		s := serve("new", true, t0)
		return Outcome{Name: name, Before: s, After: Node{Name: name, Served: s, Files: cur, Loaded: "H-new"}}
	}
	reloaded := func(name string) Outcome {
		return Outcome{Name: name, Before: serve("old", true, t0.Add(-time.Hour)), Reloaded: true,
			After: Node{Name: name, Served: serve("new", true, t0), Files: cur, Loaded: "H-new"}}
	}
	waiting := func(name string, trusted bool) Outcome {
		s := serve("old", trusted, t0.Add(-time.Hour))
		return Outcome{Name: name, Before: s, After: Node{Name: name, Served: s, Files: old, Loaded: "H-old"}}
	}
	failed := func(name string) Outcome {
		o := waiting(name, true)
		o.After.Files = cur
		o.ReloadErr = errors.New("ERR CONFIG SET failed")
		return o
	}
	falsePrior := &metav1.Condition{Status: metav1.ConditionFalse}
	truePrior := &metav1.Condition{Status: metav1.ConditionTrue}
	const tick = 30 * time.Second
	untrusted := func(nodes ...string) string { return tlssecret.ServedCertNotTrustedMessage("tls", nodes) }

	tests := []struct {
		name        string
		nodes       []Outcome
		prior       *metav1.Condition
		age         time.Duration
		status      metav1.ConditionStatus
		reason      string
		message     string
		serving     int
		untrusted   []string
		warn        string
		failures    int
		complete    bool
		requeue     time.Duration
		notAfterSet bool
	}{
		{name: "no nodes", status: metav1.ConditionUnknown, reason: valkeyv1.ReasonWaiting,
			message: "no running nodes to check", requeue: time.Second},
		{name: "steady", nodes: []Outcome{done("a"), done("b")}, prior: truePrior,
			status: metav1.ConditionTrue, reason: valkeyv1.ReasonServingCurrent,
			message: `all 2 nodes serve the certificate in Secret "tls"`, serving: 2, requeue: tick, notAfterSet: true},
		{name: "first pass after formation is no rotation", nodes: []Outcome{done("a")},
			status: metav1.ConditionTrue, reason: valkeyv1.ReasonServingCurrent,
			message: `all 1 nodes serve the certificate in Secret "tls"`, serving: 1, requeue: tick, notAfterSet: true},
		{name: "reloaded in this pass", nodes: []Outcome{reloaded("a"), done("b")}, prior: truePrior,
			status: metav1.ConditionTrue, reason: valkeyv1.ReasonServingCurrent,
			message: `all 2 nodes serve the certificate in Secret "tls"`, serving: 2, complete: true, requeue: tick, notAfterSet: true},
		{name: "finished after waiting", nodes: []Outcome{done("a"), done("b")}, prior: falsePrior,
			status: metav1.ConditionTrue, reason: valkeyv1.ReasonServingCurrent,
			message: `all 2 nodes serve the certificate in Secret "tls"`, serving: 2, complete: true, requeue: tick, notAfterSet: true},
		{name: "waiting for the kubelet", nodes: []Outcome{waiting("b", true), done("a")}, age: 3 * time.Second,
			status: metav1.ConditionFalse, reason: valkeyv1.ReasonRotationInProgress,
			message: `1 of 2 nodes serve the certificate in Secret "tls"; waiting for the rest to receive and load it`,
			serving: 1, requeue: time.Second, notAfterSet: true},
		{name: "waiting past the fast window", nodes: []Outcome{waiting("a", true)}, age: 5 * time.Minute,
			status: metav1.ConditionFalse, reason: valkeyv1.ReasonRotationInProgress,
			message: `0 of 1 nodes serve the certificate in Secret "tls"; waiting for the rest to receive and load it`,
			requeue: tick, notAfterSet: true},
		{name: "CA rotated without the bundle step", nodes: []Outcome{waiting("b", false), waiting("a", false)},
			status: metav1.ConditionFalse, reason: tlssecret.ReasonServedCertNotTrusted, message: untrusted("a", "b"),
			untrusted: []string{"a", "b"}, warn: untrusted("a", "b"), requeue: time.Second, notAfterSet: true},
		{name: "untrusted, healed by this pass's reload: warned, not reported",
			nodes:  []Outcome{func() Outcome { o := reloaded("a"); o.Before.Trusted = false; return o }()},
			status: metav1.ConditionTrue, reason: valkeyv1.ReasonServingCurrent,
			message: `all 1 nodes serve the certificate in Secret "tls"`, serving: 1,
			untrusted: []string{"a"}, warn: untrusted("a"), complete: true, requeue: tick, notAfterSet: true},
		{name: "untrusted and unpinned", nodes: []Outcome{{Name: "a",
			Before: Served{Err: errNotTrusted}, After: Node{Name: "a", Served: Served{Err: errNotTrusted}}}},
			status: metav1.ConditionFalse, reason: tlssecret.ReasonServedCertNotTrusted, message: untrusted("a"),
			untrusted: []string{"a"}, warn: untrusted("a"), requeue: time.Second},
		{name: "one node's failure does not hide the others", nodes: []Outcome{failed("b"), reloaded("a")},
			status: metav1.ConditionFalse, reason: valkeyv1.ReasonReloadFailed,
			message: `1 of 2 nodes serve the certificate in Secret "tls"; reload failed on 1: b: ERR CONFIG SET failed`,
			serving: 1, failures: 1, requeue: time.Second, notAfterSet: true},
		{name: "unreachable node", nodes: []Outcome{done("a"), {Name: "b",
			Before: Served{Err: errors.New("connection refused")}, After: Node{Name: "b", Served: Served{Err: errors.New("connection refused")}}}},
			prior: truePrior, status: metav1.ConditionFalse, reason: valkeyv1.ReasonReloadFailed,
			message: `1 of 2 nodes serve the certificate in Secret "tls"; reload failed on 1: b: connection refused`,
			serving: 1, failures: 1, requeue: time.Second, notAfterSet: true},
		{name: "blind: serving is all that can be confirmed", nodes: []Outcome{{Name: "a", Reloaded: true,
			Before: serve("new", true, t0), After: Node{Name: "a", Served: serve("new", true, t0)}}}, prior: truePrior,
			status: metav1.ConditionTrue, reason: valkeyv1.ReasonServingCurrent,
			message: `all 1 nodes serve the certificate in Secret "tls"`, serving: 1, requeue: tick, notAfterSet: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := Summarize(Input{Secret: "tls", Want: want, Nodes: tc.nodes, Prior: tc.prior, MismatchAge: tc.age, Tick: tick})
			if got.Status != tc.status || got.Reason != tc.reason || got.Message != tc.message {
				t.Errorf("condition = %s/%s %q\nwant        %s/%s %q", got.Status, got.Reason, got.Message, tc.status, tc.reason, tc.message)
			}
			if got.Serving != tc.serving || got.Total != len(tc.nodes) {
				t.Errorf("serving %d of %d, want %d of %d", got.Serving, got.Total, tc.serving, len(tc.nodes))
			}
			if !reflect.DeepEqual(got.Untrusted, tc.untrusted) || got.UntrustedMessage != tc.warn {
				t.Errorf("untrusted = %v %q, want %v %q", got.Untrusted, got.UntrustedMessage, tc.untrusted, tc.warn)
			}
			if len(got.Failures) != tc.failures {
				t.Errorf("failures = %v, want %d", got.Failures, tc.failures)
			}
			if got.RotationComplete != tc.complete {
				t.Errorf("RotationComplete = %v, want %v", got.RotationComplete, tc.complete)
			}
			if got.Requeue != tc.requeue {
				t.Errorf("requeue = %s, want %s", got.Requeue, tc.requeue)
			}
			if got.NotAfter.IsZero() == tc.notAfterSet {
				t.Errorf("NotAfter = %s", got.NotAfter)
			}
		})
	}
}

func TestSummarizeReloadEarliestNotAfter(t *testing.T) {
	t0 := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	n := func(name string, notAfter time.Time) Outcome {
		s := Served{Fingerprint: "x", Trusted: true, NotAfter: notAfter}
		return Outcome{Name: name, Before: s, After: Node{Served: s}}
	}
	got := Summarize(Input{Want: Material{Leaf: "x"}, Nodes: []Outcome{n("a", t0.Add(time.Hour)), n("b", t0), n("c", t0.Add(2*time.Hour))}})
	if !got.NotAfter.Equal(t0) {
		t.Errorf("NotAfter = %s, want %s", got.NotAfter, t0)
	}
}

func TestNextPins(t *testing.T) {
	ok := func(fp string) Served { return Served{Fingerprint: fp, Trusted: true} }
	pinned := func(fp string) Served { return Served{Fingerprint: fp} }
	down := Served{Err: errors.New("down")}
	node := func(before, after Served) Outcome {
		return Outcome{Before: before, After: Node{Served: after}}
	}
	tests := []struct {
		name  string
		old   []string
		nodes []Outcome
		want  []string
	}{
		{"first convergence", nil, []Outcome{node(ok("a"), ok("a")), node(ok("a"), ok("a"))}, []string{"a"}},
		{"leaves no node serves drop out", []string{"old"}, []Outcome{node(ok("a"), ok("a"))}, []string{"a"}},
		{"a reloaded node's previous leaf drops out", []string{"old"}, []Outcome{node(pinned("old"), ok("new")), node(pinned("old"), ok("new"))}, []string{"new"}},
		{"mid rotation keeps both", []string{"old"}, []Outcome{node(pinned("old"), ok("new")), node(pinned("old"), pinned("old"))}, []string{"new", "old"}},
		{"an absent node keeps old pins", []string{"old"}, []Outcome{node(ok("new"), ok("new")), node(down, down)}, []string{"new", "old"}},
		{"nothing answered", []string{"old"}, []Outcome{node(down, down)}, []string{"old"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := NextPins(tc.old, tc.nodes); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("NextPins = %v, want %v", got, tc.want)
			}
		})
	}
	var many []string
	for i := range 40 {
		many = append(many, strings.Repeat("p", i+1))
	}
	if got := NextPins(many, []Outcome{node(ok("new"), ok("new")), node(down, down)}); len(got) != maxPins || got[0] != "new" {
		t.Errorf("capped pins = %d, first %q; want %d, the current leaf first", len(got), got[0], maxPins)
	}
}

func TestVerifyServed(t *testing.T) {
	const server = "pod-0.c.ns.svc.cluster.local"
	oldCA, newCA := testcerts.NewCA("old"), testcerts.NewCA("new")
	oldLeaf := testcerts.Leaf(oldCA, "c", "ns", "cluster.local")
	newLeaf := testcerts.Leaf(newCA, "c", "ns", "cluster.local")
	expired := testcerts.Leaf(newCA, "c", "ns", "cluster.local",
		testcerts.WithValidity(time.Now().AddDate(0, 0, -30), time.Now().AddDate(0, 0, -1)))
	otherName := testcerts.Leaf(newCA, "d", "ns", "cluster.local")
	inter := newCA.Intermediate("inter")
	chained := testcerts.Leaf(inter, "c", "ns", "cluster.local")
	chain := func(l *testcerts.LeafCert) []*x509.Certificate {
		var out []*x509.Certificate
		for _, der := range l.DER() {
			c, err := x509.ParseCertificate(der)
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, c)
		}
		return out
	}
	fp := func(l *testcerts.LeafCert) string { return tlssecret.Fingerprint(l.Cert.Raw) }

	tests := []struct {
		name    string
		chain   []*x509.Certificate
		ca      []byte
		pins    []string
		trusted bool
		err     string
	}{
		{name: "trusted", chain: chain(newLeaf), ca: newCA.CertPEM, trusted: true},
		{name: "trusted by a bundle", chain: chain(oldLeaf), ca: testcerts.Bundle(oldCA, newCA), trusted: true},
		{name: "through an intermediate", chain: chain(chained), ca: newCA.CertPEM, trusted: true},
		{name: "expired still verifies", chain: chain(expired), ca: newCA.CertPEM, trusted: true},
		{name: "CA rotated, leaf pinned", chain: chain(oldLeaf), ca: newCA.CertPEM, pins: []string{fp(oldLeaf)}},
		{name: "CA rotated, not pinned", chain: chain(oldLeaf), ca: newCA.CertPEM, pins: []string{fp(newLeaf)}, err: "trusted neither by ca.crt"},
		{name: "wrong name, even when trusted", chain: chain(otherName), ca: newCA.CertPEM, err: "not pod-0.c.ns.svc.cluster.local"},
		{name: "wrong name, even when pinned", chain: chain(otherName), ca: oldCA.CertPEM, pins: []string{fp(otherName)}, err: "not pod-0.c.ns.svc.cluster.local"},
		{name: "no certificate", err: "no certificate"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := VerifyServed(tc.chain, server, tc.ca, tc.pins)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("err = %v, want one containing %q", err, tc.err)
				}
				if strings.Contains(tc.err, "trusted neither") && !(Served{Err: err}).untrusted() {
					t.Errorf("an unpinned untrusted chain must count as untrusted")
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got.Trusted != tc.trusted || got.Fingerprint != tlssecret.Fingerprint(tc.chain[0].Raw) || !got.NotAfter.Equal(tc.chain[0].NotAfter) {
				t.Errorf("got %+v, want trusted=%v fingerprint of the leaf", got, tc.trusted)
			}
		})
	}
}
