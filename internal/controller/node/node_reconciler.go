package node

import (
	"k8s.io/client-go/tools/events"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gomomento/valkey-operator/internal/controller/options"
)

// Reconciler is a create-only executor: for a Joining ValkeyNode it
// creates the node's ConfigMap, its claim when it is persistent, and, once,
// its Pod. It never updates a pod; what it updates is the claim's request,
// raised to the size recorded on the node, and the ConfigMap's valkey.conf,
// rendered again from live settings recorded on the node. A persistent node gets its pod again
// whenever the pod is gone: its data and identity are on its claim.
type Reconciler struct {
	client.Client
	// APIReader reads a persistent node's claim before its pod is created
	// again: only the API server's word that the claim is gone or going
	// withholds the pod, never a cache that has not caught up.
	APIReader client.Reader
	Options   options.Options
	Recorder  events.EventRecorder
}
