// Package localkube runs Kubernetes Pods as processes on this machine: a real
// control plane (etcd, kube-apiserver, kube-controller-manager,
// kube-scheduler) with a stand-in for the kubelet that registers Nodes and
// runs each bound Pod's containers as local programs, each pod on its own
// loopback address. See docs/local-runtime.md.
package localkube

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	listersv1 "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"

	"github.com/gomomento/valkey-operator/internal/testbin"
)

var getOpts = metav1.GetOptions{}

// Options configures a Runtime. Only Config and BaseDir are required.
type Options struct {
	// Config reaches the apiserver with rights to write Nodes, Leases and
	// Pod status (an admin config).
	Config *rest.Config
	// BaseDir holds the pods' directories (BaseDir/pods/<ns>_<name>_<uid>).
	BaseDir string

	// Nodes is the number of Node objects to serve. Default 3.
	Nodes int
	// NodeNamePrefix names the nodes prefix0, prefix1, ... Default "local-node-".
	NodeNamePrefix string
	// Zones are assigned round-robin to the nodes. Default zone-a, zone-b, zone-c.
	Zones []string
	// Region labels every node. Default "local".
	Region string
	// NodeCapacity is every node's capacity and allocatable. Default 8 CPUs,
	// 32Gi memory, 110 pods.
	NodeCapacity corev1.ResourceList

	// NodeLabels and NodeTaints are set on every node this runtime
	// registers, from its first write, so that no pod lands on a node
	// meant to be tainted before the taint is there. A test's own pool of
	// nodes beside the shared ones is made this way.
	NodeLabels map[string]string
	NodeTaints []corev1.Taint
	// NoProvisioner leaves claims to another runtime serving the same
	// control plane: two provisioners of one StorageClass would race for
	// every claim, and this runtime's volumes go when it stops.
	NoProvisioner bool

	// PodCIDR is the loopback range pod addresses come from. Default 127.10.0.0/16.
	PodCIDR string
	// AddressLockDir holds the lock files that keep runtimes on one machine
	// from handing out the same address. Default $TMPDIR/localkube-addresses.
	AddressLockDir string
	// ClusterDomain is the DNS suffix served by LookupHost. Default cluster.local.
	ClusterDomain string

	// Images maps container images to local programs. Default:
	// DefaultImageMappings with bin/valkey9 under the repository root.
	Images []ImageMapping

	// ProjectionDelay is how long a ConfigMap or Secret change takes to reach
	// the files of the pods that mount it, like the kubelet's sync period.
	// Default 3s; negative means at once.
	ProjectionDelay time.Duration
	// RestartBackoff is the first crash-loop delay, doubled per restart up to
	// MaxRestartBackoff. Defaults 10s and 5m, as in the kubelet.
	RestartBackoff    time.Duration
	MaxRestartBackoff time.Duration

	// EtcHosts keeps a marked block in EtcHostsPath (default /etc/hosts) with
	// every name LookupHost serves, so programs outside this process resolve
	// them too. Needs write access to the file (root for /etc/hosts).
	EtcHosts     bool
	EtcHostsPath string

	// Log receives the runtime's own messages. Default: discarded.
	Log logr.Logger
}

func (o *Options) defaults() error {
	if o.Config == nil {
		return errors.New("localkube: Options.Config is required")
	}
	if o.BaseDir == "" {
		return errors.New("localkube: Options.BaseDir is required")
	}
	abs, err := filepath.Abs(o.BaseDir)
	if err != nil {
		return err
	}
	o.BaseDir = abs
	if o.Nodes <= 0 {
		o.Nodes = 3
	}
	if o.NodeNamePrefix == "" {
		o.NodeNamePrefix = "local-node-"
	}
	if len(o.Zones) == 0 {
		o.Zones = []string{"zone-a", "zone-b", "zone-c"}
	}
	if o.Region == "" {
		o.Region = "local"
	}
	if o.NodeCapacity == nil {
		o.NodeCapacity = corev1.ResourceList{
			corev1.ResourceCPU:    resource.MustParse("8"),
			corev1.ResourceMemory: resource.MustParse("32Gi"),
			corev1.ResourcePods:   resource.MustParse("110"),
		}
	}
	if o.PodCIDR == "" {
		o.PodCIDR = "127.10.0.0/16"
	}
	if o.AddressLockDir == "" {
		o.AddressLockDir = filepath.Join(os.TempDir(), "localkube-addresses")
	}
	if o.ClusterDomain == "" {
		o.ClusterDomain = "cluster.local"
	}
	o.ClusterDomain = strings.Trim(strings.ToLower(o.ClusterDomain), ".")
	if o.Images == nil {
		o.Images = DefaultImageMappings(testbin.Valkey9Dir())
	}
	switch {
	case o.ProjectionDelay == 0:
		o.ProjectionDelay = 3 * time.Second
	case o.ProjectionDelay < 0:
		o.ProjectionDelay = 0
	}
	if o.RestartBackoff <= 0 {
		o.RestartBackoff = 10 * time.Second
	}
	if o.MaxRestartBackoff <= 0 {
		o.MaxRestartBackoff = 5 * time.Minute
	}
	if o.EtcHostsPath == "" {
		o.EtcHostsPath = "/etc/hosts"
	}
	if o.Log.GetSink() == nil {
		o.Log = logr.Discard()
	}
	return nil
}

// Runtime is the kubelet stand-in: it serves a few Node objects and runs
// every Pod bound to them as local processes.
type Runtime struct {
	opts      Options
	cs        kubernetes.Interface
	log       logr.Logger
	nodeNames []string
	nodeSet   map[string]bool
	nodeUIDs  map[string]types.UID

	factory   informers.SharedInformerFactory
	pods      listersv1.PodLister
	services  listersv1.ServiceLister
	cms       listersv1.ConfigMapLister
	secrets   listersv1.SecretLister
	addresses *addressPool
	procs     *processes
	hosts     *hostsWriter

	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu       sync.Mutex
	workers  map[types.UID]*podWorker
	finished map[types.UID]bool // workers done; ignore late events until the object is gone
	paused   map[string]bool
	stopped  bool
	// volumeHolders maps a persistent volume's directory to the pod that
	// has it mounted.
	volumeHolders map[string]*podWorker
	// resizes are the claims whose expansion may have a step to take.
	resizes workqueue.TypedRateLimitingInterface[cache.ObjectName]
}

// Stop kills every pod's processes (without touching the API: the control
// plane may be going away too), waits for them, removes the pods'
// directories and the /etc/hosts block. It is safe to call more than once.
func (r *Runtime) Stop() error {
	r.mu.Lock()
	if r.stopped {
		r.mu.Unlock()
		return nil
	}
	r.stopped = true
	r.mu.Unlock()
	r.cancel()
	var errs []error
	if r.hosts != nil {
		if err := r.hosts.stop(); err != nil {
			errs = append(errs, err)
		}
	}
	r.wg.Wait()
	r.procs.killAll()
	if r.factory != nil {
		r.factory.Shutdown()
	}
	r.addresses.close()
	return errors.Join(errs...)
}

// Client is the clientset the runtime uses.
func (r *Runtime) Client() kubernetes.Interface { return r.cs }

// BaseDir is the runtime's base directory.
func (r *Runtime) BaseDir() string { return r.opts.BaseDir }

// ClusterDomain is the DNS suffix the resolver serves.
func (r *Runtime) ClusterDomain() string { return r.opts.ClusterDomain }

// PodDirPrefix is the path prefix of the directories of every pod in
// namespace, for localkubetest.AssertNoLeakedProcesses.
func (r *Runtime) PodDirPrefix(namespace string) string {
	return filepath.Join(r.opts.BaseDir, "pods", namespace+"_")
}

func (r *Runtime) onPod(o any) {
	pod, ok := o.(*corev1.Pod)
	if !ok || !r.nodeSet[pod.Spec.NodeName] {
		r.namesChanged()
		return
	}
	r.mu.Lock()
	if r.stopped || r.finished[pod.UID] {
		r.mu.Unlock()
		return
	}
	w := r.workers[pod.UID]
	if w == nil {
		w = newPodWorker(r, pod)
		r.workers[pod.UID] = w
		r.wg.Add(1)
		go func() {
			defer r.wg.Done()
			w.run(r.ctx)
			r.mu.Lock()
			delete(r.workers, w.uid)
			// Until the object's delete event, late updates of it must not
			// start a new worker.
			if !w.isGone() {
				r.finished[w.uid] = true
			}
			r.mu.Unlock()
		}()
	}
	r.mu.Unlock()
	w.update(pod)
	r.namesChanged()
}

func (r *Runtime) onPodDeleted(o any) {
	if t, ok := o.(cache.DeletedFinalStateUnknown); ok {
		o = t.Obj
	}
	pod, ok := o.(*corev1.Pod)
	if !ok {
		return
	}
	r.mu.Lock()
	w := r.workers[pod.UID]
	delete(r.finished, pod.UID)
	r.mu.Unlock()
	if w != nil {
		w.objectGone()
	}
	r.namesChanged()
}

// deletedSource wraps the last state of a deleted ConfigMap or Secret.
type deletedSource struct{ obj any }

func (r *Runtime) onSource(kind string, o any) {
	deleted := false
	if d, ok := o.(deletedSource); ok {
		o, deleted = d.obj, true
	}
	if t, ok := o.(cache.DeletedFinalStateUnknown); ok {
		o = t.Obj
	}
	meta, ok := o.(metav1.Object)
	if !ok {
		return
	}
	key := sourceKey{kind: kind, name: meta.GetName()}
	r.mu.Lock()
	var ws []*podWorker
	for _, w := range r.workers {
		if w.ns == meta.GetNamespace() && w.refs[key] {
			ws = append(ws, w)
		}
	}
	r.mu.Unlock()
	var snapshot any
	if !deleted {
		snapshot = o
	}
	for _, w := range ws {
		w.sourceChanged(key, snapshot)
	}
}

func (r *Runtime) namesChanged() {
	if r.hosts != nil {
		r.hosts.dirty()
	}
}

func (r *Runtime) worker(namespace, name string) (*podWorker, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	var found []*podWorker
	for _, w := range r.workers {
		if w.ns == namespace && w.name == name {
			found = append(found, w)
		}
	}
	if len(found) == 0 {
		return nil, fmt.Errorf("pod %s/%s is not running on this runtime", namespace, name)
	}
	// A pod recreated under the same name may overlap its predecessor's
	// termination; the newest is the one callers mean.
	sort.Slice(found, func(i, j int) bool { return found[i].created.After(found[j].created) })
	return found[0], nil
}

// KillContainer SIGKILLs a running container's process group in place: a
// crash, not a deletion. The container then ends as its restartPolicy says.
func (r *Runtime) KillContainer(namespace, pod, container string) error {
	w, err := r.worker(namespace, pod)
	if err != nil {
		return err
	}
	return w.kill(container)
}

// SignalContainer sends sig to a container's process without any other
// effect: SIGSTOP stalls it with its pod still Running and its port still
// accepting connections, as a long fork or CPU throttling would.
func (r *Runtime) SignalContainer(namespace, pod, container string, sig syscall.Signal) error {
	w, err := r.worker(namespace, pod)
	if err != nil {
		return err
	}
	return w.signal(container, sig)
}

// HostPath maps a path inside a pod's container (under one of its volume
// mounts) to the file on this machine, e.g. /etc/valkey/tls/tls.crt to
// BaseDir/pods/<pod>/volumes/tls/tls.crt.
func (r *Runtime) HostPath(namespace, pod, containerPath string) (string, error) {
	w, err := r.worker(namespace, pod)
	if err != nil {
		return "", err
	}
	return w.hostPath(containerPath)
}

// PodDir is the directory standing in for a running pod's filesystem.
func (r *Runtime) PodDir(namespace, pod string) (string, error) {
	w, err := r.worker(namespace, pod)
	if err != nil {
		return "", err
	}
	return w.dir, nil
}

// Logs returns the output of a container's current (or last) run.
func (r *Runtime) Logs(namespace, pod, container string) (string, error) {
	w, err := r.worker(namespace, pod)
	if err != nil {
		return "", err
	}
	p, err := w.logPath(container)
	if err != nil {
		return "", err
	}
	b, err := os.ReadFile(p)
	return string(b), err
}
