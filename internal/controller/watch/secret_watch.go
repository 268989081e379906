package watch

import (
	"context"
	"sync"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/event"
)

// SecretWatches notices changes to Secrets that clusters reference but the
// operator does not own, a user's TLS Secret: the cache holds only the
// operator's own Secrets, so it never sees them. Each referenced Secret gets
// a watch of its own, selected by name, whose store keeps no Secret data; a
// change sends the Secret's name to the cluster controller, which reads the
// Secret itself around the cache. A watch lives while some cluster
// references its Secret.
type SecretWatches struct {
	clientset kubernetes.Interface
	// Events carries the names of changed Secrets to the cluster controller.
	Events chan event.GenericEvent

	mu  sync.Mutex
	ctx context.Context // nil until Start
	// refs is the Secret each cluster references; watches the running
	// watch of each referenced Secret.
	refs    map[types.NamespacedName]types.NamespacedName
	watches map[types.NamespacedName]context.CancelFunc
}

// NewSecretWatches watches nothing until a cluster refers to a Secret.
func NewSecretWatches(clientset kubernetes.Interface) *SecretWatches {
	return &SecretWatches{
		clientset: clientset,
		Events:    make(chan event.GenericEvent, 64),
		refs:      map[types.NamespacedName]types.NamespacedName{},
		watches:   map[types.NamespacedName]context.CancelFunc{},
	}
}

// Start runs the watches while the operator leads; references recorded
// before it are watched from here on.
func (w *SecretWatches) Start(ctx context.Context) error {
	w.mu.Lock()
	w.ctx = ctx
	w.sync()
	w.mu.Unlock()
	<-ctx.Done()
	return nil
}

// Refer records that cluster references the Secret named secret in its
// namespace; an empty name records that it references none (a cluster
// without TLS, or one that is gone).
func (w *SecretWatches) Refer(cluster types.NamespacedName, secret string) {
	if w == nil {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	want := types.NamespacedName{Namespace: cluster.Namespace, Name: secret}
	if secret == "" {
		if _, ok := w.refs[cluster]; !ok {
			return
		}
		delete(w.refs, cluster)
	} else {
		if w.refs[cluster] == want {
			return
		}
		w.refs[cluster] = want
	}
	w.sync()
}

// sync starts a watch for every referenced Secret and stops those no
// cluster references any more. Called with mu held.
func (w *SecretWatches) sync() {
	if w.ctx == nil {
		return
	}
	wanted := map[types.NamespacedName]bool{}
	for _, s := range w.refs {
		wanted[s] = true
	}
	for s, stop := range w.watches {
		if !wanted[s] {
			stop()
			delete(w.watches, s)
		}
	}
	for s := range wanted {
		if _, running := w.watches[s]; running {
			continue
		}
		ctx, stop := context.WithCancel(w.ctx)
		w.watches[s] = stop
		go w.run(ctx, s)
	}
}

// run watches one Secret until ctx ends.
func (w *SecretWatches) run(ctx context.Context, key types.NamespacedName) {
	byName := fields.OneTermEqualSelector("metadata.name", key.Name).String()
	secrets := w.clientset.CoreV1().Secrets(key.Namespace)
	lw := &toolscache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
			opts.FieldSelector = byName
			return secrets.List(ctx, opts)
		},
		WatchFuncWithContext: func(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
			opts.FieldSelector = byName
			return secrets.Watch(ctx, opts)
		},
	}
	notify := func(any) {
		ev := event.GenericEvent{Object: &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: key.Name}}}
		select {
		case w.Events <- ev:
		case <-ctx.Done():
		}
	}
	_, informer := toolscache.NewInformerWithOptions(toolscache.InformerOptions{
		// Says whether the client can stream the initial list (a fake
		// client in tests cannot).
		ListerWatcher: toolscache.ToListWatcherWithWatchListSemantics(lw, w.clientset),
		ObjectType:    &corev1.Secret{},
		Handler: toolscache.ResourceEventHandlerFuncs{
			AddFunc:    notify,
			UpdateFunc: func(_, obj any) { notify(obj) },
			DeleteFunc: notify,
		},
		Transform: withoutData,
	})
	informer.RunWithContext(ctx)
}

// withoutData keeps a watched Secret's name and version only: the watch
// says that it changed, the reconcile reads what it holds.
func withoutData(obj any) (any, error) {
	if s, ok := obj.(*corev1.Secret); ok {
		return &corev1.Secret{ObjectMeta: metav1.ObjectMeta{
			Namespace: s.Namespace, Name: s.Name, UID: s.UID, ResourceVersion: s.ResourceVersion,
		}}, nil
	}
	return obj, nil
}
