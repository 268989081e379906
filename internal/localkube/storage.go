package localkube

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
	"k8s.io/utils/ptr"
	provisioncontroller "sigs.k8s.io/sig-storage-lib-external-provisioner/v13/controller"
)

const (
	// StorageClassName is the StorageClass every runtime installs, marked
	// the default so a claim that names none gets it.
	StorageClassName = "local-dir"
	// ProvisionerName is the provisioner of that class.
	ProvisionerName = "localkube.gomomento.com/local-dir"
)

// storageClass binds a claim only once a pod that uses it is scheduled, as
// node-local storage must: the directory lives on the chosen node.
func storageClass() *storagev1.StorageClass {
	return &storagev1.StorageClass{
		ObjectMeta: metav1.ObjectMeta{
			Name:        StorageClassName,
			Annotations: map[string]string{"storageclass.kubernetes.io/is-default-class": "true"},
		},
		Provisioner:          ProvisionerName,
		ReclaimPolicy:        ptr.To(corev1.PersistentVolumeReclaimDelete),
		VolumeBindingMode:    ptr.To(storagev1.VolumeBindingWaitForFirstConsumer),
		AllowVolumeExpansion: ptr.To(true),
	}
}

// dirProvisioner makes one directory per volume under root, the way
// local-path provisioners do, and pins the volume to the node the scheduler
// chose for its first consumer.
type dirProvisioner struct {
	root string
}

var _ provisioncontroller.Provisioner = dirProvisioner{}

func (p dirProvisioner) path(pvName string) string { return filepath.Join(p.root, pvName) }

// Provision is called by the provisioning library once the
// controller-manager has handed it the claim.
func (p dirProvisioner) Provision(_ context.Context, o provisioncontroller.ProvisionOptions) (*corev1.PersistentVolume, provisioncontroller.ProvisioningState, error) {
	if o.SelectedNodeName == "" {
		return nil, provisioncontroller.ProvisioningFinished, errors.New("no node selected: the StorageClass must bind on first consumer")
	}
	dir := p.path(o.PVName)
	if err := os.MkdirAll(dir, 0o777); err != nil {
		return nil, provisioncontroller.ProvisioningFinished, fmt.Errorf("making the volume's directory: %w", err)
	}
	return provisionedVolume(o, dir), provisioncontroller.ProvisioningFinished, nil
}

// provisionedVolume is the PersistentVolume for a claim whose directory is
// dir on the selected node.
func provisionedVolume(o provisioncontroller.ProvisionOptions, dir string) *corev1.PersistentVolume {
	reclaim := corev1.PersistentVolumeReclaimDelete
	if o.StorageClass != nil && o.StorageClass.ReclaimPolicy != nil {
		reclaim = *o.StorageClass.ReclaimPolicy
	}
	modes := o.PVC.Spec.AccessModes
	if len(modes) == 0 {
		modes = []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce}
	}
	return &corev1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{Name: o.PVName},
		Spec: corev1.PersistentVolumeSpec{
			Capacity:                      corev1.ResourceList{corev1.ResourceStorage: o.PVC.Spec.Resources.Requests[corev1.ResourceStorage]},
			AccessModes:                   modes,
			PersistentVolumeReclaimPolicy: reclaim,
			VolumeMode:                    ptr.To(corev1.PersistentVolumeFilesystem),
			PersistentVolumeSource: corev1.PersistentVolumeSource{
				Local: &corev1.LocalVolumeSource{Path: dir},
			},
			NodeAffinity: &corev1.VolumeNodeAffinity{Required: &corev1.NodeSelector{
				NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchExpressions: []corev1.NodeSelectorRequirement{{
					Key: corev1.LabelHostname, Operator: corev1.NodeSelectorOpIn, Values: []string{o.SelectedNodeName},
				}}}},
			}},
		},
	}
}

// Delete removes a released volume's directory. Only directories under
// root are this provisioner's to remove.
func (p dirProvisioner) Delete(_ context.Context, pv *corev1.PersistentVolume) error {
	if pv.Spec.Local == nil {
		return &provisioncontroller.IgnoredError{Reason: "not a local volume"}
	}
	dir := filepath.Clean(pv.Spec.Local.Path)
	if filepath.Dir(dir) != p.root || filepath.Base(dir) != pv.Name {
		return &provisioncontroller.IgnoredError{Reason: fmt.Sprintf("%s is not a directory this provisioner made", dir)}
	}
	if err := os.RemoveAll(dir); err != nil {
		return fmt.Errorf("removing the volume's directory: %w", err)
	}
	return nil
}

// startStorage installs the StorageClass and runs the provisioner until the
// runtime stops.
func (r *Runtime) startStorage(cs kubernetes.Interface) error {
	wait, err := StartDirStorage(r.ctx, cs, filepath.Join(r.opts.BaseDir, "volumes"), r.log.WithName("provisioner"))
	if err != nil {
		return err
	}
	r.wg.Add(1)
	go func() {
		defer r.wg.Done()
		wait()
	}()
	return nil
}

// StartDirStorage installs the default StorageClass (StorageClassName)
// and runs its provisioner until ctx ends: each claim's volume is a new
// directory under root, a `local` PersistentVolume pinned to the node its
// first consumer was scheduled to. Local, not hostPath: a real kubelet
// gives a local volume the pod's fsGroup, so a pod running as a non-root
// user can write it. The returned function waits until the provisioner
// has stopped.
func StartDirStorage(ctx context.Context, cs kubernetes.Interface, root string, log logr.Logger) (wait func(), err error) {
	if err := os.MkdirAll(root, 0o755); err != nil {
		return nil, fmt.Errorf("making the volumes' directory: %w", err)
	}
	if _, err := cs.StorageV1().StorageClasses().Create(ctx, storageClass(), metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return nil, fmt.Errorf("installing StorageClass %s: %w", StorageClassName, err)
	}
	pctx := klog.NewContext(ctx, log)
	pc := provisioncontroller.NewProvisionController(pctx, cs, ProvisionerName, dirProvisioner{root: root},
		provisioncontroller.LeaderElection(false),
		// Claims here are bound within a test's patience, not after the
		// library's 15 s first retry.
		provisioncontroller.ExponentialBackOffOnError(false),
	)
	done := make(chan struct{})
	go func() {
		defer close(done)
		pc.Run(pctx)
	}()
	return func() { <-done }, nil
}

// claimPath is the directory of the volume bound to a pod's claim, once
// the claim is bound.
func (w *podWorker) claimPath(ctx context.Context, claim string) (string, error) {
	pvc, err := w.r.cs.CoreV1().PersistentVolumeClaims(w.ns).Get(ctx, claim, getOpts)
	if err != nil {
		return "", fmt.Errorf("persistentvolumeclaim %q: %w", claim, err)
	}
	if pvc.Status.Phase != corev1.ClaimBound || pvc.Spec.VolumeName == "" {
		return "", fmt.Errorf("persistentvolumeclaim %q is not bound", claim)
	}
	pv, err := w.r.cs.CoreV1().PersistentVolumes().Get(ctx, pvc.Spec.VolumeName, getOpts)
	if err != nil {
		return "", fmt.Errorf("persistentvolume %q: %w", pvc.Spec.VolumeName, err)
	}
	var dir string
	switch {
	case pv.Spec.Local != nil:
		dir = pv.Spec.Local.Path
	case pv.Spec.HostPath != nil:
		dir = pv.Spec.HostPath.Path
	default:
		return "", fmt.Errorf("persistentvolume %q is neither local nor hostPath", pv.Name)
	}
	if st, err := os.Stat(dir); err != nil || !st.IsDir() {
		return "", fmt.Errorf("persistentvolume %q: directory %s missing", pv.Name, dir)
	}
	return dir, nil
}

// mountClaim makes the pod's volume directory a link to the claim's
// volume: the pod's own directory goes with the pod, the volume stays.
// A volume another live pod of this runtime holds is refused, so two
// processes never write one data directory.
func (w *podWorker) mountClaim(ctx context.Context, volume, claim string) error {
	target, err := w.claimPath(ctx, claim)
	if err != nil {
		return err
	}
	if err := w.r.holdVolume(target, w); err != nil {
		return err
	}
	// An expansion waiting for the node finishes once the volume is
	// mounted, as the kubelet finishes it.
	w.r.resizes.Add(cache.ObjectName{Namespace: w.ns, Name: claim})
	link := w.volumeDir(volume)
	if cur, err := os.Readlink(link); err == nil && cur == target {
		return nil
	}
	if err := os.RemoveAll(link); err != nil {
		return err
	}
	return os.Symlink(target, link)
}

// holdVolume records that w uses the volume at dir; it fails while another
// pod, not yet cleaned up, holds it.
func (r *Runtime) holdVolume(dir string, w *podWorker) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if h, ok := r.volumeHolders[dir]; ok && h != w {
		return fmt.Errorf("volume %s is still in use by pod %s/%s", dir, h.ns, h.name)
	}
	r.volumeHolders[dir] = w
	return nil
}

// releaseVolumes drops every volume w holds; its processes are gone.
func (r *Runtime) releaseVolumes(w *podWorker) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for dir, h := range r.volumeHolders {
		if h == w {
			delete(r.volumeHolders, dir)
		}
	}
}
