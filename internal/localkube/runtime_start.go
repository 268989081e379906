package localkube

import (
	"context"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
)

// StartRuntime registers the nodes, starts watching pods and returns once
// its caches are in sync. Stop it with Stop.
func StartRuntime(ctx context.Context, opts Options) (*Runtime, error) {
	r, err := newRuntime(opts)
	if err != nil {
		return nil, err
	}
	ok := false
	defer func() {
		if !ok {
			_ = r.Stop()
		}
	}()
	if err := r.registerNodes(ctx); err != nil {
		return nil, err
	}
	if err := r.waitSchedulable(ctx); err != nil {
		return nil, err
	}
	if !r.opts.NoProvisioner {
		if err := r.startStorage(r.cs); err != nil {
			return nil, err
		}
	}
	if err := r.watch(); err != nil {
		return nil, err
	}
	if err := r.startResizer(); err != nil {
		return nil, err
	}
	r.factory.Start(r.ctx.Done())
	for typ, synced := range r.factory.WaitForCacheSync(ctx.Done()) {
		if !synced {
			return nil, fmt.Errorf("cache of %v did not sync", typ)
		}
	}
	r.wg.Add(1)
	go func() {
		defer r.wg.Done()
		r.heartbeat(r.ctx)
	}()
	if r.opts.EtcHosts {
		if r.hosts, err = r.startHostsWriter(r.opts.EtcHostsPath); err != nil {
			return nil, err
		}
	}
	ok = true
	return r, nil
}

// newRuntime is a runtime with its options, client, addresses and nodes'
// names, before it has registered or started anything.
func newRuntime(opts Options) (*Runtime, error) {
	if err := opts.defaults(); err != nil {
		return nil, err
	}
	prefix, err := netip.ParsePrefix(opts.PodCIDR)
	if err != nil {
		return nil, fmt.Errorf("pod CIDR: %w", err)
	}
	pool, err := newAddressPool(prefix, opts.AddressLockDir)
	if err != nil {
		return nil, err
	}
	cfg := rest.CopyConfig(opts.Config)
	if cfg.QPS < 100 {
		cfg.QPS, cfg.Burst = 200, 400
	}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(filepath.Join(opts.BaseDir, "pods"), 0o755); err != nil {
		return nil, err
	}
	r := &Runtime{
		opts:      opts,
		cs:        cs,
		log:       opts.Log,
		nodeSet:   map[string]bool{},
		nodeUIDs:  map[string]types.UID{},
		addresses: pool,
		procs:     newProcesses(),
		workers:   map[types.UID]*podWorker{},
		finished:  map[types.UID]bool{},
		paused:    map[string]bool{},

		volumeHolders: map[string]*podWorker{},
	}
	for i := range opts.Nodes {
		name := fmt.Sprintf("%s%d", opts.NodeNamePrefix, i)
		r.nodeNames = append(r.nodeNames, name)
		r.nodeSet[name] = true
	}
	r.ctx, r.cancel = context.WithCancel(context.Background())
	return r, nil
}

// watch sets up the informers a kubelet needs: pods to run, the ConfigMaps
// and Secrets they project, and Services for the names pods resolve.
func (r *Runtime) watch() error {
	r.factory = informers.NewSharedInformerFactory(r.cs, 0)
	podInf := r.factory.Core().V1().Pods()
	svcInf := r.factory.Core().V1().Services()
	cmInf := r.factory.Core().V1().ConfigMaps()
	secInf := r.factory.Core().V1().Secrets()
	r.pods, r.services, r.cms, r.secrets = podInf.Lister(), svcInf.Lister(), cmInf.Lister(), secInf.Lister()
	if _, err := podInf.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(o any) { r.onPod(o) },
		UpdateFunc: func(_, o any) { r.onPod(o) },
		DeleteFunc: r.onPodDeleted,
	}); err != nil {
		return err
	}
	for kind, inf := range map[string]cache.SharedIndexInformer{kindConfigMap: cmInf.Informer(), kindSecret: secInf.Informer()} {
		if _, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
			AddFunc:    func(o any) { r.onSource(kind, o) },
			UpdateFunc: func(_, o any) { r.onSource(kind, o) },
			DeleteFunc: func(o any) { r.onSource(kind, deletedSource{o}) },
		}); err != nil {
			return err
		}
	}
	_, err := svcInf.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(any) { r.namesChanged() },
		UpdateFunc: func(any, any) { r.namesChanged() },
		DeleteFunc: func(any) { r.namesChanged() },
	})
	return err
}
