package localkube

import (
	"context"
	"fmt"
	"maps"
	"runtime"
	"slices"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"
)

const (
	nodeLeaseNamespace = "kube-node-lease"
	// Like the kubelet: a 40s lease renewed every quarter of it, so the node
	// lifecycle controller (50s grace) never sees a node go quiet.
	leaseDurationSeconds = 40
	leaseRenewInterval   = 10 * time.Second
	nodeStatusInterval   = 30 * time.Second
	nodeAddress          = "127.0.0.1"
)

// NodeNames returns the names of the Node objects this runtime serves.
func (r *Runtime) NodeNames() []string {
	return append([]string(nil), r.nodeNames...)
}

func (r *Runtime) nodeObject(i int) *corev1.Node {
	name := r.nodeNames[i]
	zone := r.opts.Zones[i%len(r.opts.Zones)]
	now := metav1.Now()
	labels := maps.Clone(r.opts.NodeLabels)
	if labels == nil {
		labels = map[string]string{}
	}
	maps.Copy(labels, map[string]string{
		corev1.LabelHostname:           name,
		corev1.LabelTopologyZone:       zone,
		corev1.LabelTopologyRegion:     r.opts.Region,
		corev1.LabelOSStable:           "linux",
		corev1.LabelArchStable:         runtime.GOARCH,
		"localkube.gomomento.com/node": "true",
	})
	return &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels},
		Spec:       corev1.NodeSpec{Taints: slices.Clone(r.opts.NodeTaints)},
		Status: corev1.NodeStatus{
			Capacity:    r.opts.NodeCapacity.DeepCopy(),
			Allocatable: r.opts.NodeCapacity.DeepCopy(),
			Phase:       corev1.NodeRunning,
			Conditions:  r.nodeConditions(now, now),
			Addresses: []corev1.NodeAddress{
				{Type: corev1.NodeInternalIP, Address: nodeAddress},
				{Type: corev1.NodeHostName, Address: name},
			},
			DaemonEndpoints: corev1.NodeDaemonEndpoints{KubeletEndpoint: corev1.DaemonEndpoint{Port: 10250}},
			NodeInfo: corev1.NodeSystemInfo{
				OperatingSystem:         "linux",
				Architecture:            runtime.GOARCH,
				KubeletVersion:          "v1.37.2-localkube",
				ContainerRuntimeVersion: "localkube://processes",
				OSImage:                 "localkube",
			},
		},
	}
}

func (r *Runtime) nodeConditions(heartbeat, transition metav1.Time) []corev1.NodeCondition {
	cond := func(t corev1.NodeConditionType, s corev1.ConditionStatus, reason, msg string) corev1.NodeCondition {
		return corev1.NodeCondition{Type: t, Status: s, Reason: reason, Message: msg, LastHeartbeatTime: heartbeat, LastTransitionTime: transition}
	}
	return []corev1.NodeCondition{
		cond(corev1.NodeMemoryPressure, corev1.ConditionFalse, "KubeletHasSufficientMemory", "kubelet has sufficient memory available"),
		cond(corev1.NodeDiskPressure, corev1.ConditionFalse, "KubeletHasNoDiskPressure", "kubelet has no disk pressure"),
		cond(corev1.NodePIDPressure, corev1.ConditionFalse, "KubeletHasSufficientPID", "kubelet has sufficient PID available"),
		cond(corev1.NodeReady, corev1.ConditionTrue, "KubeletReady", "localkube is posting ready status"),
	}
}

// registerNodes creates (or takes over) the Node objects and their Leases.
func (r *Runtime) registerNodes(ctx context.Context) error {
	for i := range r.nodeNames {
		want := r.nodeObject(i)
		node, err := r.cs.CoreV1().Nodes().Create(ctx, want, metav1.CreateOptions{})
		if apierrors.IsAlreadyExists(err) {
			node, err = r.cs.CoreV1().Nodes().Get(ctx, want.Name, getOpts)
			if err == nil {
				if node.Labels == nil {
					node.Labels = map[string]string{}
				}
				for k, v := range want.Labels {
					node.Labels[k] = v
				}
				node.Spec.Unschedulable = false
				for _, t := range want.Spec.Taints {
					if !slices.ContainsFunc(node.Spec.Taints, func(x corev1.Taint) bool { return x.MatchTaint(&t) }) {
						node.Spec.Taints = append(node.Spec.Taints, t)
					}
				}
				node, err = r.cs.CoreV1().Nodes().Update(ctx, node, metav1.UpdateOptions{})
			}
		}
		if err != nil {
			return fmt.Errorf("registering node %s: %w", want.Name, err)
		}
		// Status sent on create can be dropped, and controllers write to
		// a new node at once (TTL annotation, taints): set it on the latest.
		err = retry.RetryOnConflict(retry.DefaultRetry, func() error {
			cur, err := r.cs.CoreV1().Nodes().Get(ctx, want.Name, getOpts)
			if err != nil {
				return err
			}
			cur.Status = want.Status
			node, err = r.cs.CoreV1().Nodes().UpdateStatus(ctx, cur, metav1.UpdateOptions{})
			return err
		})
		if err != nil {
			return fmt.Errorf("setting status of node %s: %w", want.Name, err)
		}
		if err := r.renewLease(ctx, node); err != nil {
			return err
		}
		r.nodeUIDs[node.Name] = node.UID
	}
	return nil
}

// waitSchedulable returns once no node carries a taint but the runtime's
// own (NodeTaints). A new node starts
// with node.kubernetes.io/not-ready until the node lifecycle controller has
// observed it Ready; callers that schedule at once would otherwise race it.
func (r *Runtime) waitSchedulable(ctx context.Context) error {
	var last string
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		for _, name := range r.nodeNames {
			n, err := r.cs.CoreV1().Nodes().Get(ctx, name, getOpts)
			if err != nil {
				last = err.Error()
				return false, nil
			}
			for _, t := range n.Spec.Taints {
				if !slices.ContainsFunc(r.opts.NodeTaints, func(x corev1.Taint) bool { return x.MatchTaint(&t) }) {
					last = fmt.Sprintf("node %s has taints %v", name, n.Spec.Taints)
					return false, nil
				}
			}
		}
		return true, nil
	})
	if err != nil {
		return fmt.Errorf("waiting for schedulable nodes (%s): %w", last, err)
	}
	return nil
}

func (r *Runtime) renewLease(ctx context.Context, node *corev1.Node) error {
	leases := r.cs.CoordinationV1().Leases(nodeLeaseNamespace)
	now := metav1.NewMicroTime(time.Now())
	lease, err := leases.Get(ctx, node.Name, getOpts)
	if apierrors.IsNotFound(err) {
		_, err = leases.Create(ctx, &coordinationv1.Lease{
			ObjectMeta: metav1.ObjectMeta{
				Name:      node.Name,
				Namespace: nodeLeaseNamespace,
				OwnerReferences: []metav1.OwnerReference{{
					APIVersion: "v1", Kind: "Node", Name: node.Name, UID: node.UID,
				}},
			},
			Spec: coordinationv1.LeaseSpec{
				HolderIdentity:       ptr.To(node.Name),
				LeaseDurationSeconds: ptr.To[int32](leaseDurationSeconds),
				RenewTime:            &now,
			},
		}, metav1.CreateOptions{})
		if err != nil {
			return fmt.Errorf("creating lease of node %s: %w", node.Name, err)
		}
		return nil
	}
	if err != nil {
		return fmt.Errorf("reading lease of node %s: %w", node.Name, err)
	}
	lease.Spec.HolderIdentity = ptr.To(node.Name)
	lease.Spec.LeaseDurationSeconds = ptr.To[int32](leaseDurationSeconds)
	lease.Spec.RenewTime = &now
	if _, err := leases.Update(ctx, lease, metav1.UpdateOptions{}); err != nil {
		return fmt.Errorf("renewing lease of node %s: %w", node.Name, err)
	}
	return nil
}

// heartbeat renews the Leases and refreshes the Ready condition until ctx ends.
func (r *Runtime) heartbeat(ctx context.Context) {
	lease := time.NewTicker(leaseRenewInterval)
	defer lease.Stop()
	status := time.NewTicker(nodeStatusInterval)
	defer status.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-lease.C:
			for _, name := range r.nodeNames {
				if r.nodePaused(name) {
					continue
				}
				node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, UID: r.nodeUIDs[name]}}
				if err := r.renewLease(ctx, node); err != nil && ctx.Err() == nil {
					r.log.Error(err, "lease renewal failed", "node", name)
				}
			}
		case <-status.C:
			for _, name := range r.nodeNames {
				if r.nodePaused(name) {
					continue
				}
				if err := r.refreshNodeStatus(ctx, name); err != nil && ctx.Err() == nil {
					r.log.Error(err, "node status update failed", "node", name)
				}
			}
		}
	}
}

func (r *Runtime) refreshNodeStatus(ctx context.Context, name string) error {
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		node, err := r.cs.CoreV1().Nodes().Get(ctx, name, getOpts)
		if err != nil {
			return err
		}
		now := metav1.Now()
		transition := now
		for _, c := range node.Status.Conditions {
			if c.Type == corev1.NodeReady && c.Status == corev1.ConditionTrue {
				transition = c.LastTransitionTime
			}
		}
		node.Status.Conditions = r.nodeConditions(now, transition)
		_, err = r.cs.CoreV1().Nodes().UpdateStatus(ctx, node, metav1.UpdateOptions{})
		return err
	})
}

// PauseNodeHeartbeat cuts (or restores) one node's kubelet off from the
// apiserver, as a network partition or a kubelet that hangs would: its
// Lease and status are no longer renewed, so the node lifecycle controller
// declares it lost after its grace period, and its pods neither have their
// status written nor act on a deletion. Their processes keep running and
// serving. On resume the pods catch up: their status is written afresh and
// a deletion made meanwhile is carried out.
func (r *Runtime) PauseNodeHeartbeat(node string, paused bool) error {
	found := false
	for _, n := range r.nodeNames {
		found = found || n == node
	}
	if !found {
		return fmt.Errorf("node %q is not served by this runtime", node)
	}
	r.mu.Lock()
	if paused {
		r.paused[node] = true
	} else {
		delete(r.paused, node)
	}
	var ws []*podWorker
	for _, w := range r.workers {
		ws = append(ws, w)
	}
	r.mu.Unlock()
	if !paused {
		for _, w := range ws {
			if pod, _ := w.snapshot(); pod.Spec.NodeName == node {
				w.resync()
			}
		}
	}
	return nil
}

func (r *Runtime) nodePaused(node string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.paused[node]
}
