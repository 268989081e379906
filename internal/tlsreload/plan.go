package tlsreload

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/pem"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	valkeyv1 "github.com/gomomento/valkey-operator/api/v1alpha1"
	"github.com/gomomento/valkey-operator/internal/tlssecret"
)

// How the reload controller paces itself while a rotation is under way.
const (
	// fastRequeue is how often a cluster whose nodes do not yet serve
	// the Secret's material is re-checked: the kubelet's projection lands at
	// an unknown moment and the reload should follow it closely.
	fastRequeue = time.Second
	// fastWindow bounds fast re-checking: past it a node that still
	// does not converge is stuck on something a tick will not fix sooner
	// (a refused reload, a CA it cannot be verified against), and the
	// safety tick takes over.
	fastWindow = 2 * time.Minute
	// projectionWindow is how long after a change of the Secret the
	// kubelet may still be projecting the old files into a pod: a node
	// whose files cannot be seen is known to have loaded the Secret's
	// material only by a reload issued after it.
	projectionWindow = fastWindow
	// maxPins bounds the verified-leaf annotation.
	maxPins = 16
)

// Material identifies a set of TLS material, as the copy Secret holds it or
// as a node's files hold it.
type Material struct {
	// Leaf is the fingerprint of the first certificate in tls.crt: what a
	// node serves once it has loaded these files.
	Leaf string
	// Hash covers tls.crt, tls.key and ca.crt, so a change of the CA bundle
	// alone, which no handshake reveals, is still noticed.
	Hash string
}

// MaterialOf identifies the material in the three keys; ok is false when
// tls.crt holds no PEM block.
func MaterialOf(cert, key, ca []byte) (Material, bool) {
	block, _ := pem.Decode(cert)
	if block == nil {
		return Material{}, false
	}
	h := sha256.New()
	for _, part := range [][]byte{cert, key, ca} {
		// Length-prefixed, so moving bytes between files changes the hash.
		fmt.Fprintf(h, "%d:", len(part))
		h.Write(part)
	}
	return Material{Leaf: tlssecret.Fingerprint(block.Bytes), Hash: hex.EncodeToString(h.Sum(nil))}, true
}

// Served is what one TLS handshake with a node showed.
type Served struct {
	// Fingerprint of the leaf the node presented; empty when Err is set.
	Fingerprint string
	NotAfter    time.Time
	// Trusted says the Secret's current ca.crt trusts the served chain. A
	// chain accepted only because its leaf was pinned is not Trusted.
	Trusted bool
	// Err says why no certificate could be read: the node did not answer, or
	// it presented a certificate neither ca.crt nor a pin accepts.
	Err error
}

// errNotTrusted marks a handshake refused because neither ca.crt nor
// a pin accepts the served chain.
var errNotTrusted = errors.New("served certificate is trusted neither by ca.crt nor as a certificate this node served before")

// untrusted says the current ca.crt does not trust what the node serves,
// whether or not a pin let the operator in anyway.
func (s Served) untrusted() bool {
	if s.Err != nil {
		return errors.Is(s.Err, errNotTrusted)
	}
	return !s.Trusted
}

// Node is one node as the reload controller sees it in a pass.
type Node struct {
	Name   string
	Served Served
	// Files is what the node's certificate files hold; nil when the
	// operator cannot read them (in a real cluster they are in the pod).
	Files *Material
	// Loaded is the Files.Hash this operator last had the node load, empty
	// when unknown (a pod it has not reloaded yet, or after a restart).
	Loaded string
}

type Step int

const (
	// StepNone: the node serves what its files hold and has loaded them.
	StepNone Step = iota
	// StepReload: the node's files hold material it has not loaded, or the
	// files cannot be seen.
	StepReload
	// StepAwaitFiles: the node has loaded its files, but the kubelet has not
	// yet projected the copy Secret's current material into them.
	StepAwaitFiles
	// StepUnreachable: the node's served certificate could not be read.
	StepUnreachable
)

func (s Step) String() string {
	return [...]string{"none", "reload", "await-files", "unreachable"}[s]
}

// PlanNode decides what one node needs. The node's files decide, not the
// API object: reloading before the kubelet has projected the new material
// would only reload the old files. When the files cannot be seen the
// reload is re-issued every pass; it is harmless, since it changes only
// what new connections are presented.
func PlanNode(want Material, n Node) Step {
	if n.Served.Err != nil {
		return StepUnreachable
	}
	if n.Files == nil {
		return StepReload
	}
	if n.Files.Leaf != n.Served.Fingerprint || n.Loaded != n.Files.Hash {
		return StepReload
	}
	if n.Files.Hash != want.Hash {
		return StepAwaitFiles
	}
	return StepNone
}

// settled says nothing more is expected of a node for the material want.
// Without visible files, serving the leaf is all that can be confirmed.
func settled(want Material, n Node) bool {
	if n.Served.Err != nil || n.Served.Fingerprint != want.Leaf {
		return false
	}
	return n.Files == nil || PlanNode(want, n) == StepNone
}

// Outcome is one node at the end of a pass.
type Outcome struct {
	Name string
	// Before is the handshake that opened the pass.
	Before Served
	// After is the node at the end of the pass: Served re-read after a
	// reload, Loaded updated when the reload was confirmed.
	After Node
	// Reloaded says a reload was issued and accepted.
	Reloaded  bool
	ReloadErr error
}

// KnownLoaded is the material hash the node of o is known to have loaded
// at the end of a pass, given the one it was known to have loaded before
// (loaded, "" for none). Visible files are known loaded once a reload of
// them is confirmed by the handshake. Invisible ones are known to hold
// want once a reload issued when the Secret had held want for the
// projection window (age at the pass) left the node serving want's leaf:
// before that the reload may have read old files, and a change of ca.crt
// alone shows in no handshake.
func KnownLoaded(want Material, o Outcome, loaded string, age time.Duration) string {
	s := o.After.Served
	if !o.Reloaded || s.Err != nil {
		return loaded
	}
	if f := o.After.Files; f != nil {
		if s.Fingerprint == f.Leaf {
			return f.Hash
		}
		return loaded
	}
	if s.Fingerprint == want.Leaf && age >= projectionWindow {
		return want.Hash
	}
	return loaded
}

// Input is everything Summarize looks at.
type Input struct {
	// Secret names the user's Secret in messages.
	Secret string
	Want   Material
	Nodes  []Outcome
	// Prior is the CertificatesServed condition before the pass, nil when
	// it was never set.
	Prior *metav1.Condition
	// MismatchAge is how long the current material has gone unsettled.
	MismatchAge time.Duration
	// Tick is the safety tick.
	Tick time.Duration
}

// Report is what a pass means for status, Events and pacing.
type Report struct {
	Status  metav1.ConditionStatus
	Reason  string
	Message string
	Serving int
	Total   int
	// Untrusted names, sorted, the nodes whose served certificate the
	// current ca.crt did not trust when the pass began: what a CA rotation
	// without the bundle step looks like. UntrustedMessage is the Warning.
	Untrusted        []string
	UntrustedMessage string
	// Failures are sorted "node: error" lines for the ReloadFailed
	// condition's message: a failed reload, or a confirming handshake that
	// failed for another reason than trust (that one is ServedCertNotTrusted).
	// The ReloadFailed Events come from the outcomes, one per failed reload.
	Failures []string
	// RotationComplete asks for the Normal Event: every node now serves the
	// Secret's material after a change.
	RotationComplete bool
	// NotAfter is the earliest notAfter among served leaves, zero when none
	// was read.
	NotAfter time.Time
	Requeue  time.Duration
}

// Summarize turns a pass into a condition, Events and a requeue.
func Summarize(in Input) Report {
	out := Report{Total: len(in.Nodes)}
	var untrustedAfter []string
	allSettled := true
	changed := false
	for _, n := range in.Nodes {
		s := n.After.Served
		if s.Err == nil && s.Fingerprint == in.Want.Leaf {
			out.Serving++
		}
		if n.Before.untrusted() {
			out.Untrusted = append(out.Untrusted, n.Name)
		}
		if s.untrusted() {
			untrustedAfter = append(untrustedAfter, n.Name)
		}
		switch {
		case n.ReloadErr != nil:
			out.Failures = append(out.Failures, fmt.Sprintf("%s: %v", n.Name, n.ReloadErr))
		case s.Err != nil && !s.untrusted():
			out.Failures = append(out.Failures, fmt.Sprintf("%s: %v", n.Name, s.Err))
		}
		if s.Err == nil && (out.NotAfter.IsZero() || s.NotAfter.Before(out.NotAfter)) {
			out.NotAfter = s.NotAfter
		}
		if !settled(in.Want, n.After) {
			allSettled = false
		}
		if n.Reloaded && n.Before.Err == nil && n.Before.Fingerprint != in.Want.Leaf {
			changed = true
		}
	}
	slices.Sort(out.Untrusted)
	slices.Sort(untrustedAfter)
	slices.Sort(out.Failures)
	if len(out.Untrusted) > 0 {
		out.UntrustedMessage = tlssecret.ServedCertNotTrustedMessage(in.Secret, out.Untrusted)
	}

	switch {
	case out.Total == 0:
		out.Status, out.Reason, out.Message = metav1.ConditionUnknown, valkeyv1.ReasonWaiting, "no running nodes to check"
	case len(untrustedAfter) > 0:
		out.Status, out.Reason = metav1.ConditionFalse, tlssecret.ReasonServedCertNotTrusted
		out.Message = tlssecret.ServedCertNotTrustedMessage(in.Secret, untrustedAfter)
	case len(out.Failures) > 0:
		out.Status, out.Reason = metav1.ConditionFalse, valkeyv1.ReasonReloadFailed
		out.Message = fmt.Sprintf("%d of %d nodes serve the certificate in Secret %q; reload failed on %d: %s",
			out.Serving, out.Total, in.Secret, len(out.Failures), strings.Join(out.Failures, "; "))
	case !allSettled:
		out.Status, out.Reason = metav1.ConditionFalse, valkeyv1.ReasonRotationInProgress
		out.Message = fmt.Sprintf("%d of %d nodes serve the certificate in Secret %q; waiting for the rest to receive and load it",
			out.Serving, out.Total, in.Secret)
	default:
		out.Status, out.Reason = metav1.ConditionTrue, valkeyv1.ReasonServingCurrent
		out.Message = fmt.Sprintf("all %d nodes serve the certificate in Secret %q", out.Total, in.Secret)
	}
	if out.Status == metav1.ConditionTrue {
		out.RotationComplete = changed || (in.Prior != nil && in.Prior.Status == metav1.ConditionFalse)
	}

	switch {
	case out.Status == metav1.ConditionTrue:
		out.Requeue = in.Tick
	case in.MismatchAge < fastWindow:
		out.Requeue = fastRequeue
	default:
		out.Requeue = in.Tick
	}
	return out
}

// NextPins is the set of leaf fingerprints the operator has verified nodes
// serving: every leaf accepted at the end of this pass (by ca.crt or by an
// earlier pin). Earlier pins are kept while some node could not be read, so
// a node that is briefly away can still be verified when it returns. Leaves
// no node serves any more drop out, which bounds the set, and a leaf a node
// served only before this pass reloaded it drops out at once: the set is
// also what says whether some node may still serve an older leaf, which
// holds the last step of a CA rotation (tlssecret.CABundleMissing).
func NextPins(old []string, nodes []Outcome) []string {
	var out []string
	keepOld := false
	for _, n := range nodes {
		if s := n.After.Served; s.Err == nil && s.Fingerprint != "" {
			out = append(out, s.Fingerprint)
		}
		if n.Before.Err != nil || n.After.Served.Err != nil {
			keepOld = true
		}
	}
	slices.Sort(out)
	out = slices.Compact(out)
	if keepOld {
		// Leaves seen now come first, so the cap drops the oldest pins.
		for _, p := range old {
			if !slices.Contains(out, p) {
				out = append(out, p)
			}
		}
	}
	if len(out) > maxPins {
		out = out[:maxPins]
	}
	return out
}
