package reload

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	logf "sigs.k8s.io/controller-runtime/pkg/log"

	valkeyv1 "github.com/gomomento/valkey-operator/api/v1alpha1"
	"github.com/gomomento/valkey-operator/internal/controller/metrics"
	"github.com/gomomento/valkey-operator/internal/controller/nodeconn"
	"github.com/gomomento/valkey-operator/internal/controller/options"
	"github.com/gomomento/valkey-operator/internal/render"
	"github.com/gomomento/valkey-operator/internal/textutil"
	"github.com/gomomento/valkey-operator/internal/tlsreload"
	"github.com/gomomento/valkey-operator/internal/tlssecret"
	"github.com/gomomento/valkey-operator/internal/valkey"
)

// NodePathFunc maps a path inside a node's container to the path the node's
// process uses, and where this process can read it.
type NodePathFunc = func(namespace, pod, containerPath string) (string, error)

// TLSReloader makes every node of a TLS cluster serve the material in the
// cluster's copy Secret, without a restart: once the kubelet has projected
// new files into a pod it re-issues the certificate-path directives, which
// makes Valkey rebuild its TLS context from the files, and confirms by a
// fresh handshake that the node serves the new leaf.
type TLSReloader struct {
	reloader[tlsreload.Outcome, tlsPace]
	// NodePath, when set, maps container paths to the node process's paths
	// and lets the operator read the node's files. Nil in a real cluster:
	// the rendered paths are used and the files cannot be seen.
	NodePath NodePathFunc
}

// tlsPace keeps a rotation from being announced twice.
type tlsPace struct {
	// completed is the material hash last announced as rotated.
	completed string
}

// SetupTLSReload registers the TLS reload controller. SetupWithRuntime calls
// it with the runtime's NodePath, because the local runtime's nodes read the
// certificate files at other paths than a pod's. A manager holds one
// controller named "tlsreload", so a second call fails.
func SetupTLSReload(mgr ctrl.Manager, opts options.Options, dialer nodeconn.DialFunc, pool *valkey.Pool, nodePath NodePathFunc) error {
	if err := opts.Validate(); err != nil {
		return err
	}
	r := &TLSReloader{NodePath: nodePath, reloader: reloader[tlsreload.Outcome, tlsPace]{
		condition: valkeyv1.CondCertificatesServed,
		secret:    render.NodeTLSSecretName,
		metrics:   []*prometheus.MetricVec{metrics.TLSCertNotAfter.MetricVec, metrics.TLSReloads.MetricVec},
	}}
	if err := r.build(mgr, opts, dialer, pool, "tlsreload", sameServedCounts).Complete(r); err != nil {
		return fmt.Errorf("setting up TLS reload controller: %w", err)
	}
	return nil
}

// sameServedCounts compares the served-certificate counts the TLS reloader
// writes into status.tls.
func sameServedCounts(a, b *valkeyv1.ValkeyCluster) bool {
	var sa, sb valkeyv1.TLSStatus
	if a.Status.TLS != nil {
		sa = *a.Status.TLS
	}
	if b.Status.TLS != nil {
		sb = *b.Status.TLS
	}
	return sa.NodesServingCurrent == sb.NodesServingCurrent && sa.NodesTotal == sb.NodesTotal
}

func (r *TLSReloader) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	return r.reconcile(ctx, req.NamespacedName, r)
}

func (r *TLSReloader) manages(vc *valkeyv1.ValkeyCluster) bool { return vc.Spec.TLS != nil }

func (r *TLSReloader) tick() time.Duration {
	return positiveOr(r.Options.TLSReloadInterval, options.DefaultOptions().TLSReloadInterval)
}

func (r *TLSReloader) sync(ctx context.Context, vc *valkeyv1.ValkeyCluster, copySecret *corev1.Secret, tick time.Duration) (ctrl.Result, error) {
	want, ok := tlsreload.MaterialOf(copySecret.Data[tlssecret.KeyCert], copySecret.Data[tlssecret.KeyPrivateKey], copySecret.Data[tlssecret.KeyCA])
	if !ok {
		// The cluster controller copies only validated material.
		return ctrl.Result{RequeueAfter: tick}, nil
	}
	password, err := nodeconn.OperatorPassword(ctx, r, vc)
	if err != nil {
		return ctrl.Result{}, err
	}
	pods, err := nodeconn.RunningPods(ctx, r, vc)
	if err != nil {
		return ctrl.Result{}, err
	}

	key := client.ObjectKeyFromObject(vc)
	pins := nodeconn.ParsePins(copySecret.Annotations[valkeyv1.AnnotationVerifiedLeaves])
	mem, changed := r.memory(key, want.Hash)
	// A node known to serve the Secret's leaf needs nothing until the
	// Secret, its pod or the cluster changes: no probe, no handshake.
	if ok, safety := r.canIdle(mem, vc, changed, pods, servedCountsShown(vc, len(pods))); ok {
		return ctrl.Result{RequeueAfter: safety}, nil
	}
	logf.FromContext(ctx).V(1).Info("TLS reconcile tick")
	r.fullDue(mem, changed, 0)
	pass := tlsPass{
		r:       r,
		cluster: vc,
		conn: &nodeconn.Connector{Cluster: vc, Domain: r.Options.ClusterDomain, Password: password,
			CAPEM: copySecret.Data[tlssecret.KeyCA], Pins: pins, Dialer: r.Dialer, Pool: r.pool},
		want: want,
		age:  r.unsettled(mem),
	}
	outcomes := r.pass(ctx, mem, pods, pass.node)

	prior := meta.FindStatusCondition(vc.Status.Conditions, valkeyv1.CondCertificatesServed)
	rep := tlsreload.Summarize(tlsreload.Input{
		Secret:      vc.Spec.TLS.SecretRef,
		Want:        want,
		Nodes:       outcomes,
		Prior:       prior,
		MismatchAge: pass.age,
		Tick:        tick,
	})
	r.announce(ctx, vc, prior, rep, outcomes, want, mem)
	if !rep.NotAfter.IsZero() {
		metrics.TLSCertNotAfter.WithLabelValues(vc.Namespace, vc.Name).Set(float64(rep.NotAfter.Unix()))
	}
	if err := r.writePins(ctx, copySecret, pins, tlsreload.NextPins(pins, outcomes)); err != nil {
		return ctrl.Result{}, err
	}
	if err := r.writeStatus(ctx, key, rep.Status, rep.Reason, rep.Message, servedCounts(rep)); err != nil {
		return ctrl.Result{}, err
	}
	r.passed(mem, vc, rep.Status == metav1.ConditionTrue)
	return ctrl.Result{RequeueAfter: rep.Requeue}, nil
}

// servedCountsShown says status.tls shows all of total nodes serving, as
// a settled pass over them writes it.
func servedCountsShown(vc *valkeyv1.ValkeyCluster, total int) bool {
	s := vc.Status.TLS
	return s != nil && int(s.NodesServingCurrent) == total && int(s.NodesTotal) == total
}

// servedCounts writes status.tls.nodesServingCurrent and nodesTotal next
// to the condition.
func servedCounts(rep tlsreload.Report) func(vc *valkeyv1.ValkeyCluster) bool {
	return func(vc *valkeyv1.ValkeyCluster) bool {
		if vc.Spec.TLS == nil {
			return false
		}
		if vc.Status.TLS == nil {
			vc.Status.TLS = &valkeyv1.TLSStatus{}
		}
		vc.Status.TLS.NodesServingCurrent = int32(rep.Serving)
		vc.Status.TLS.NodesTotal = int32(rep.Total)
		return true
	}
}

// tlsPass is one pass over a cluster's nodes.
type tlsPass struct {
	r       *TLSReloader
	cluster *valkeyv1.ValkeyCluster
	// conn dials as every controller does: the copy Secret's CA, the pins
	// of leaves already verified, the pod's FQDN as server name.
	conn *nodeconn.Connector
	want tlsreload.Material
	// age is how long the Secret has held want, as far as this process
	// knows.
	age time.Duration
}

// node probes one node, reloads it when the plan says so and probes again.
// It returns the material hash the node is now known to have loaded (see
// tlsreload.KnownLoaded).
func (p *tlsPass) node(ctx context.Context, pod *corev1.Pod, loaded string) (tlsreload.Outcome, string) {
	log := logf.FromContext(ctx).WithValues("node", pod.Name)
	n := tlsreload.Node{Name: pod.Name, Loaded: loaded}
	n.Served = p.probe(ctx, pod)
	if p.r.NodePath != nil {
		files, err := p.readFiles(pod.Name)
		if err != nil {
			log.V(1).Info("cannot read the node's TLS files; reloading blind", "error", err.Error())
		} else {
			n.Files = &files
		}
	}
	o := tlsreload.Outcome{Name: pod.Name, Before: n.Served, After: n}
	if tlsreload.PlanNode(p.want, n) != tlsreload.StepReload {
		return o, loaded
	}
	result := "success"
	if err := p.reload(ctx, pod); err != nil {
		result = "failure"
		o.ReloadErr = err
		log.Info("TLS reload failed", "error", err.Error())
	} else {
		o.Reloaded = true
		o.After.Served = p.probe(ctx, pod)
	}
	metrics.TLSReloads.WithLabelValues(p.cluster.Namespace, p.cluster.Name, result).Inc()
	known := tlsreload.KnownLoaded(p.want, o, loaded, p.age)
	if n.Files != nil {
		o.After.Loaded = known
	}
	return o, known
}

// path is where the node finds one of its files.
func (p *tlsPass) path(pod, containerPath string) (string, error) {
	if p.r.NodePath == nil {
		return containerPath, nil
	}
	hp, err := p.r.NodePath(p.cluster.Namespace, pod, containerPath)
	if err != nil {
		return "", fmt.Errorf("locating %s of node %s: %w", containerPath, pod, err)
	}
	return hp, nil
}

// readFiles reads the node's certificate files as the node sees them.
func (p *tlsPass) readFiles(pod string) (tlsreload.Material, error) {
	var data [3][]byte
	for i, cp := range []string{render.TLSCertFile, render.TLSKeyFile, render.TLSCAFile} {
		hp, err := p.path(pod, cp)
		if err != nil {
			return tlsreload.Material{}, err
		}
		if data[i], err = os.ReadFile(hp); err != nil {
			return tlsreload.Material{}, fmt.Errorf("reading %s of node %s: %w", cp, pod, err)
		}
	}
	f, ok := tlsreload.MaterialOf(data[0], data[1], data[2])
	if !ok {
		return tlsreload.Material{}, fmt.Errorf("%s of node %s holds no PEM", render.TLSCertFile, pod)
	}
	return f, nil
}

// probe reads the certificate a node serves to a new connection.
func (p *tlsPass) probe(ctx context.Context, pod *corev1.Pod) tlsreload.Served {
	t := p.conn.Target(pod.Name, pod.Status.PodIP)
	chain, err := valkey.ServedCertificate(ctx, t)
	if err != nil {
		return tlsreload.Served{Err: err}
	}
	s, err := tlsreload.VerifyServed(chain, t.TLS.ServerName, p.conn.CAPEM, p.conn.Pins)
	if err != nil {
		return tlsreload.Served{Err: err}
	}
	return s
}

// reload re-issues the certificate-path directives with the paths the node
// already uses; Valkey treats them as volatile and rebuilds its TLS context
// from the files even though the values are unchanged.
func (p *tlsPass) reload(ctx context.Context, pod *corev1.Pod) error {
	kv := make([]string, 0, 6)
	for _, d := range []struct{ name, path string }{
		{"tls-cert-file", render.TLSCertFile},
		{"tls-key-file", render.TLSKeyFile},
		{"tls-ca-cert-file", render.TLSCAFile},
	} {
		path, err := p.path(pod.Name, d.path)
		if err != nil {
			return err
		}
		kv = append(kv, d.name, path)
	}
	n, err := p.conn.Dial(ctx, pod.Name, pod.Status.PodIP)
	if err != nil {
		return err
	}
	defer n.Close()
	if err := n.ConfigSet(ctx, kv...); err != nil {
		return fmt.Errorf("reloading certificates on node %s: %w", pod.Name, err)
	}
	return nil
}

// announce emits the pass's Events. Each Warning is sent when the condition
// message it belongs to changes, not on every pass.
func (r *TLSReloader) announce(ctx context.Context, vc *valkeyv1.ValkeyCluster, prior *metav1.Condition, rep tlsreload.Report, outcomes []tlsreload.Outcome, want tlsreload.Material, mem *reloadMemory[tlsPace]) {
	log := logf.FromContext(ctx)
	priorMsg := ""
	if prior != nil {
		priorMsg = prior.Message
	}
	if rep.UntrustedMessage != "" && priorMsg != rep.UntrustedMessage {
		log.Info("served certificate not trusted by ca.crt", "nodes", rep.Untrusted)
		r.Recorder.Eventf(vc, nil, corev1.EventTypeWarning, tlssecret.ReasonServedCertNotTrusted, "ReloadTLS", "%s", rep.UntrustedMessage)
	}
	if priorMsg != rep.Message {
		for _, o := range outcomes {
			if o.ReloadErr != nil {
				r.Recorder.Eventf(vc, nil, corev1.EventTypeWarning, valkeyv1.ReasonReloadFailed, "ReloadTLS",
					"reloading the certificate on node %s failed: %s", o.Name, textutil.Truncate(o.ReloadErr.Error(), 800))
			}
		}
	}
	r.mu.Lock()
	complete := rep.RotationComplete && mem.own.completed != want.Hash
	if rep.Status == metav1.ConditionTrue {
		mem.own.completed = want.Hash
	}
	r.mu.Unlock()
	if complete {
		log.Info("TLS rotation complete", "nodes", rep.Total, "fingerprint", want.Leaf)
		r.Recorder.Eventf(vc, nil, corev1.EventTypeNormal, valkeyv1.ReasonRotationComplete, "ReloadTLS",
			"all %d nodes serve the certificate in Secret %q (SHA-256 %s)", rep.Total, vc.Spec.TLS.SecretRef, tlsreload.ShortFingerprint(want.Leaf))
	}
}

// writePins records the verified leaves on the copy Secret. The patch
// carries the resourceVersion read, so a pin is never written against
// material that changed since the pass verified it.
func (r *TLSReloader) writePins(ctx context.Context, s *corev1.Secret, old, pins []string) error {
	if nodeconn.FormatPins(old) == nodeconn.FormatPins(pins) || len(pins) == 0 {
		return nil
	}
	patch := client.MergeFromWithOptions(s.DeepCopy(), client.MergeFromWithOptimisticLock{})
	if s.Annotations == nil {
		s.Annotations = map[string]string{}
	}
	s.Annotations[valkeyv1.AnnotationVerifiedLeaves] = nodeconn.FormatPins(pins)
	if err := r.Patch(ctx, s, patch); err != nil {
		if apierrors.IsConflict(err) || apierrors.IsNotFound(err) {
			// The copy changed under the pass; the change is watched.
			return nil
		}
		return fmt.Errorf("recording verified certificates on Secret %s: %w", s.Name, err)
	}
	return nil
}
