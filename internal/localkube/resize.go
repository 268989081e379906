package localkube

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
)

// The runtime expands its volumes the way a CSI driver's external-resizer
// and the kubelet do between them, one API step at a time, so a client
// sees what it would see on a real cluster: the claim is marked Resizing,
// the volume's capacity grows, the claim waits for the node
// (FileSystemResizePending), and once a pod has the volume mounted the
// kubelet's part records the new capacity on the claim. A directory has no
// file system of its own to grow, so each step is only its API write.

// annProvisionedBy marks the volumes a provisioner made; only this
// runtime's are this resizer's to expand.
const annProvisionedBy = "pv.kubernetes.io/provisioned-by"

// resizeStep is the next step of a claim's expansion.
type resizeStep int

const (
	resizeNone resizeStep = iota
	// resizeStart marks the claim Resizing, with the size being allocated
	// (allocatedResources) and ControllerResizeInProgress.
	resizeStart
	// resizeVolume grows the PersistentVolume's capacity to the request.
	resizeVolume
	// resizeNodePending hands over to the node: FileSystemResizePending
	// replaces Resizing, NodeResizePending ControllerResizeInProgress.
	resizeNodePending
	// resizeFinish is the kubelet's part, with the volume mounted: the
	// claim's capacity becomes the volume's and the resize marks go.
	resizeFinish
)

func (s resizeStep) String() string {
	return [...]string{"none", "start", "volume", "node pending", "finish"}[s]
}

// nextResizeStep decides from the claim, its volume and whether a pod of
// this runtime has the volume mounted.
func nextResizeStep(pvc *corev1.PersistentVolumeClaim, pv *corev1.PersistentVolume, mounted bool) resizeStep {
	if pvc.Status.Phase != corev1.ClaimBound || pv == nil || pv.Annotations[annProvisionedBy] != ProvisionerName ||
		pv.Spec.ClaimRef == nil || pv.Spec.ClaimRef.UID != pvc.UID {
		return resizeNone
	}
	want := pvc.Spec.Resources.Requests[corev1.ResourceStorage]
	volume := pv.Spec.Capacity[corev1.ResourceStorage]
	have := pvc.Status.Capacity[corev1.ResourceStorage]
	switch {
	case want.Cmp(volume) > 0 && !hasClaimCondition(pvc, corev1.PersistentVolumeClaimResizing):
		return resizeStart
	case want.Cmp(volume) > 0:
		return resizeVolume
	case volume.Cmp(have) > 0 && !hasClaimCondition(pvc, corev1.PersistentVolumeClaimFileSystemResizePending):
		return resizeNodePending
	case volume.Cmp(have) > 0 && mounted:
		return resizeFinish
	}
	return resizeNone
}

func hasClaimCondition(pvc *corev1.PersistentVolumeClaim, typ corev1.PersistentVolumeClaimConditionType) bool {
	for _, c := range pvc.Status.Conditions {
		if c.Type == typ && c.Status == corev1.ConditionTrue {
			return true
		}
	}
	return false
}

// withResizeCondition replaces the claim's resize conditions by typ, or
// removes them when typ is empty, as the resizer's condition merge does.
func withResizeCondition(pvc *corev1.PersistentVolumeClaim, typ corev1.PersistentVolumeClaimConditionType, message string) {
	var kept []corev1.PersistentVolumeClaimCondition
	for _, c := range pvc.Status.Conditions {
		if c.Type != corev1.PersistentVolumeClaimResizing && c.Type != corev1.PersistentVolumeClaimFileSystemResizePending {
			kept = append(kept, c)
		}
	}
	if typ != "" {
		kept = append(kept, corev1.PersistentVolumeClaimCondition{Type: typ, Status: corev1.ConditionTrue, LastTransitionTime: metav1.Now(), Message: message})
	}
	pvc.Status.Conditions = kept
}

func withStorageStatus(pvc *corev1.PersistentVolumeClaim, status corev1.ClaimResourceStatus) {
	if status == "" {
		delete(pvc.Status.AllocatedResourceStatuses, corev1.ResourceStorage)
		if len(pvc.Status.AllocatedResourceStatuses) == 0 {
			pvc.Status.AllocatedResourceStatuses = nil
		}
		return
	}
	if pvc.Status.AllocatedResourceStatuses == nil {
		pvc.Status.AllocatedResourceStatuses = map[corev1.ResourceName]corev1.ClaimResourceStatus{}
	}
	pvc.Status.AllocatedResourceStatuses[corev1.ResourceStorage] = status
}

// startResizer watches claims and runs the resizer until the runtime
// stops. Call it before the informer factory starts.
func (r *Runtime) startResizer() error {
	r.resizes = workqueue.NewTypedRateLimitingQueue(workqueue.NewTypedItemExponentialFailureRateLimiter[cache.ObjectName](50*time.Millisecond, 5*time.Second))
	enqueue := func(o any) {
		if name, err := cache.DeletionHandlingObjectToName(o); err == nil {
			r.resizes.Add(name)
		}
	}
	if _, err := r.factory.Core().V1().PersistentVolumeClaims().Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    enqueue,
		UpdateFunc: func(_, o any) { enqueue(o) },
	}); err != nil {
		return err
	}
	r.wg.Add(2)
	go func() {
		defer r.wg.Done()
		<-r.ctx.Done()
		r.resizes.ShutDown()
	}()
	go func() {
		defer r.wg.Done()
		for {
			name, quit := r.resizes.Get()
			if quit {
				return
			}
			if err := r.resizeClaim(r.ctx, name); err != nil && r.ctx.Err() == nil {
				r.log.V(1).Info("resizing claim", "claim", name.String(), "error", err.Error())
				r.resizes.AddRateLimited(name)
			} else {
				r.resizes.Forget(name)
			}
			r.resizes.Done(name)
		}
	}()
	return nil
}

// resizeClaim takes the claim's expansion as far as it can go now, one
// write per step, each on a fresh read.
func (r *Runtime) resizeClaim(ctx context.Context, name cache.ObjectName) error {
	for {
		pvc, err := r.cs.CoreV1().PersistentVolumeClaims(name.Namespace).Get(ctx, name.Name, getOpts)
		if apierrors.IsNotFound(err) {
			return nil
		}
		if err != nil {
			return err
		}
		var pv *corev1.PersistentVolume
		if pvc.Spec.VolumeName != "" {
			if pv, err = r.cs.CoreV1().PersistentVolumes().Get(ctx, pvc.Spec.VolumeName, getOpts); apierrors.IsNotFound(err) {
				return nil
			} else if err != nil {
				return err
			}
		}
		step := nextResizeStep(pvc, pv, pv != nil && r.volumeMounted(pv))
		if step == resizeNone {
			return nil
		}
		if err := r.applyResizeStep(ctx, step, pvc, pv); err != nil {
			return fmt.Errorf("%s of %s: %w", step, name.String(), err)
		}
	}
}

func (r *Runtime) applyResizeStep(ctx context.Context, step resizeStep, pvc *corev1.PersistentVolumeClaim, pv *corev1.PersistentVolume) error {
	want := pvc.Spec.Resources.Requests[corev1.ResourceStorage]
	claims := r.cs.CoreV1().PersistentVolumeClaims(pvc.Namespace)
	var err error
	switch step {
	case resizeStart:
		withResizeCondition(pvc, corev1.PersistentVolumeClaimResizing, "")
		withStorageStatus(pvc, corev1.PersistentVolumeClaimControllerResizeInProgress)
		if pvc.Status.AllocatedResources == nil {
			pvc.Status.AllocatedResources = corev1.ResourceList{}
		}
		pvc.Status.AllocatedResources[corev1.ResourceStorage] = want.DeepCopy()
		_, err = claims.UpdateStatus(ctx, pvc, metav1.UpdateOptions{})
	case resizeVolume:
		pv.Spec.Capacity[corev1.ResourceStorage] = want.DeepCopy()
		_, err = r.cs.CoreV1().PersistentVolumes().Update(ctx, pv, metav1.UpdateOptions{})
	case resizeNodePending:
		withResizeCondition(pvc, corev1.PersistentVolumeClaimFileSystemResizePending,
			"Waiting for user to (re-)start a pod to finish file system resize of volume on node.")
		withStorageStatus(pvc, corev1.PersistentVolumeClaimNodeResizePending)
		_, err = claims.UpdateStatus(ctx, pvc, metav1.UpdateOptions{})
	case resizeFinish:
		if pvc.Status.Capacity == nil {
			pvc.Status.Capacity = corev1.ResourceList{}
		}
		pvc.Status.Capacity[corev1.ResourceStorage] = pv.Spec.Capacity[corev1.ResourceStorage].DeepCopy()
		withResizeCondition(pvc, "", "")
		withStorageStatus(pvc, "")
		_, err = claims.UpdateStatus(ctx, pvc, metav1.UpdateOptions{})
	}
	if err == nil {
		r.log.V(1).Info("volume expansion", "claim", pvc.Namespace+"/"+pvc.Name, "step", step.String(), "size", want.String())
	}
	return err
}

// volumeMounted says whether a pod of this runtime has pv's directory.
func (r *Runtime) volumeMounted(pv *corev1.PersistentVolume) bool {
	if pv.Spec.Local == nil {
		return false
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	_, ok := r.volumeHolders[pv.Spec.Local.Path]
	return ok
}
