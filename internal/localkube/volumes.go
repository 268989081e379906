package localkube

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

const defaultFileMode int32 = 0o644

type projectedToken struct {
	token     string
	refreshAt time.Time
}

// podSources lists the ConfigMaps and Secrets a pod's volumes project.
func podSources(pod *corev1.Pod) map[sourceKey]bool {
	refs := map[sourceKey]bool{}
	for _, v := range pod.Spec.Volumes {
		switch {
		case v.ConfigMap != nil:
			refs[sourceKey{kindConfigMap, v.ConfigMap.Name}] = true
		case v.Secret != nil:
			refs[sourceKey{kindSecret, v.Secret.SecretName}] = true
		case v.Projected != nil:
			for _, s := range v.Projected.Sources {
				if s.ConfigMap != nil {
					refs[sourceKey{kindConfigMap, s.ConfigMap.Name}] = true
				}
				if s.Secret != nil {
					refs[sourceKey{kindSecret, s.Secret.Name}] = true
				}
			}
		}
	}
	return refs
}

func (w *podWorker) volumeDir(name string) string {
	return filepath.Join(w.dir, "volumes", name)
}

// buildPaths maps every container's mount paths to the pod's volume dirs,
// and writes the map where a process other than this runtime can read it.
func (w *podWorker) buildPaths(pod *corev1.Pod) error {
	per := map[string]pathMap{}
	union := map[string]string{}
	all := append(append([]corev1.Container{}, pod.Spec.InitContainers...), pod.Spec.Containers...)
	for _, c := range all {
		m := map[string]string{}
		for _, vm := range c.VolumeMounts {
			host := w.volumeDir(vm.Name)
			if vm.SubPath != "" {
				host = filepath.Join(host, vm.SubPath)
			}
			m[vm.MountPath] = host
			if _, ok := union[vm.MountPath]; !ok {
				union[vm.MountPath] = host
			}
		}
		per[c.Name] = newPathMap(m)
	}
	w.mu.Lock()
	w.ctrPaths = per
	w.paths = newPathMap(union)
	w.mu.Unlock()
	return writeMounts(w.dir, union)
}

func (w *podWorker) lookupSource(key sourceKey) any {
	switch key.kind {
	case kindConfigMap:
		if cm, err := w.r.cms.ConfigMaps(w.ns).Get(key.name); err == nil {
			return cm
		}
	case kindSecret:
		if s, err := w.r.secrets.Secrets(w.ns).Get(key.name); err == nil {
			return s
		}
	}
	return nil
}

// mountAll projects every volume from the current state of its sources.
func (w *podWorker) mountAll(ctx context.Context, pod *corev1.Pod) error {
	if err := w.buildPaths(pod); err != nil {
		return err
	}
	// The caches already hold everything queued so far; later changes
	// queue again and arrive with the delay.
	w.mu.Lock()
	w.pending = nil
	w.mu.Unlock()
	w.visible = map[sourceKey]any{}
	for key := range w.refs {
		w.visible[key] = w.lookupSource(key)
	}
	for _, v := range pod.Spec.Volumes {
		if err := w.projectVolume(ctx, pod, v); err != nil {
			return fmt.Errorf("MountVolume.SetUp failed for volume %q: %w", v.Name, err)
		}
	}
	w.lastMeta = metaKey(pod)
	return nil
}

func metaKey(pod *corev1.Pod) string {
	return formatMap(pod.Labels) + "\x00" + formatMap(pod.Annotations)
}

// refreshVolumes applies source changes whose delay has passed, renews
// expiring tokens and follows label/annotation changes. A failed update
// leaves the previous files in place, as the kubelet does.
func (w *podWorker) refreshVolumes(ctx context.Context, pod *corev1.Pod, now time.Time) {
	changed := map[sourceKey]bool{}
	w.mu.Lock()
	keep := w.pending[:0]
	for _, p := range w.pending {
		if p.due.After(now) {
			keep = append(keep, p)
			continue
		}
		w.visible[p.key] = p.obj
		changed[p.key] = true
	}
	w.pending = keep
	w.mu.Unlock()
	tokensDue := false
	for _, t := range w.tokens {
		tokensDue = tokensDue || !now.Before(t.refreshAt)
	}
	meta := metaKey(pod)
	metaChanged := meta != w.lastMeta
	w.lastMeta = meta
	if len(changed) == 0 && !tokensDue && !metaChanged {
		return
	}
	for _, v := range pod.Spec.Volumes {
		if !volumeAffected(v, changed, tokensDue, metaChanged) {
			continue
		}
		if err := w.projectVolume(ctx, pod, v); err != nil {
			w.r.log.Error(err, "updating volume", "pod", w.ns+"/"+w.name, "volume", v.Name)
		}
	}
}

func volumeAffected(v corev1.Volume, changed map[sourceKey]bool, tokens, meta bool) bool {
	switch {
	case v.ConfigMap != nil:
		return changed[sourceKey{kindConfigMap, v.ConfigMap.Name}]
	case v.Secret != nil:
		return changed[sourceKey{kindSecret, v.Secret.SecretName}]
	case v.DownwardAPI != nil:
		return meta
	case v.Projected != nil:
		for _, s := range v.Projected.Sources {
			switch {
			case s.ConfigMap != nil && changed[sourceKey{kindConfigMap, s.ConfigMap.Name}],
				s.Secret != nil && changed[sourceKey{kindSecret, s.Secret.Name}],
				s.ServiceAccountToken != nil && tokens,
				s.DownwardAPI != nil && meta:
				return true
			}
		}
	}
	return false
}

func modeOr(m *int32, def int32) int32 {
	if m != nil {
		return *m
	}
	return def
}

func (w *podWorker) projectVolume(ctx context.Context, pod *corev1.Pod, v corev1.Volume) error {
	dir := w.volumeDir(v.Name)
	payload := map[string]fileProjection{}
	var err error
	switch {
	case v.EmptyDir != nil:
		return os.MkdirAll(dir, 0o777)
	case v.PersistentVolumeClaim != nil:
		return w.mountClaim(ctx, v.Name, v.PersistentVolumeClaim.ClaimName)
	case v.ConfigMap != nil:
		err = w.configMapFiles(v.ConfigMap.Name, v.ConfigMap.Items, v.ConfigMap.Optional, modeOr(v.ConfigMap.DefaultMode, defaultFileMode), payload)
	case v.Secret != nil:
		err = w.secretFiles(v.Secret.SecretName, v.Secret.Items, v.Secret.Optional, modeOr(v.Secret.DefaultMode, defaultFileMode), payload)
	case v.DownwardAPI != nil:
		err = w.downwardFiles(pod, v.DownwardAPI.Items, modeOr(v.DownwardAPI.DefaultMode, defaultFileMode), payload)
	case v.Projected != nil:
		def := modeOr(v.Projected.DefaultMode, defaultFileMode)
		for _, s := range v.Projected.Sources {
			switch {
			case s.ConfigMap != nil:
				err = w.configMapFiles(s.ConfigMap.Name, s.ConfigMap.Items, s.ConfigMap.Optional, def, payload)
			case s.Secret != nil:
				err = w.secretFiles(s.Secret.Name, s.Secret.Items, s.Secret.Optional, def, payload)
			case s.DownwardAPI != nil:
				err = w.downwardFiles(pod, s.DownwardAPI.Items, def, payload)
			case s.ServiceAccountToken != nil:
				err = w.tokenFile(ctx, pod, s.ServiceAccountToken, def, payload)
			default:
				err = errors.New("projected source type not supported by localkube")
			}
			if err != nil {
				break
			}
		}
	default:
		return errors.New("volume type not supported by localkube (configMap, secret, emptyDir, persistentVolumeClaim, downwardAPI and projected are)")
	}
	if err != nil {
		return err
	}
	_, err = writeAtomic(dir, payload)
	return err
}

func addItems(kind, name string, data map[string][]byte, items []corev1.KeyToPath, optional *bool, def int32, into map[string]fileProjection) error {
	if len(items) == 0 {
		for k, v := range data {
			into[k] = fileProjection{data: v, mode: os.FileMode(def)}
		}
		return nil
	}
	for _, it := range items {
		v, ok := data[it.Key]
		if !ok {
			if ptrTrue(optional) {
				continue
			}
			return fmt.Errorf("%s %q has no key %q", kind, name, it.Key)
		}
		into[it.Path] = fileProjection{data: v, mode: os.FileMode(modeOr(it.Mode, def))}
	}
	return nil
}

// configMapFiles projects a ConfigMap. Text values get the container mount
// paths they mention rewritten to this pod's directories, so a valkey.conf
// saying "dir /var/lib/valkey" points into the pod's own emptyDir.
func (w *podWorker) configMapFiles(name string, items []corev1.KeyToPath, optional *bool, def int32, into map[string]fileProjection) error {
	cm, _ := w.visible[sourceKey{kindConfigMap, name}].(*corev1.ConfigMap)
	if cm == nil {
		if ptrTrue(optional) {
			return nil
		}
		return fmt.Errorf("configmap %q not found", name)
	}
	data := map[string][]byte{}
	for k, v := range cm.Data {
		data[k] = []byte(w.paths.rewrite(v))
	}
	for k, v := range cm.BinaryData {
		data[k] = v
	}
	return addItems("configmap", name, data, items, optional, def, into)
}

func (w *podWorker) secretFiles(name string, items []corev1.KeyToPath, optional *bool, def int32, into map[string]fileProjection) error {
	s, _ := w.visible[sourceKey{kindSecret, name}].(*corev1.Secret)
	if s == nil {
		if ptrTrue(optional) {
			return nil
		}
		return fmt.Errorf("secret %q not found", name)
	}
	return addItems("secret", name, s.Data, items, optional, def, into)
}

func (w *podWorker) downwardFiles(pod *corev1.Pod, items []corev1.DownwardAPIVolumeFile, def int32, into map[string]fileProjection) error {
	for _, it := range items {
		var v string
		var err error
		switch {
		case it.FieldRef != nil:
			v, err = w.fieldValue(pod, it.FieldRef.FieldPath)
		case it.ResourceFieldRef != nil:
			c := corev1.Container{}
			for _, pc := range pod.Spec.Containers {
				if pc.Name == it.ResourceFieldRef.ContainerName {
					c = pc
				}
			}
			v, err = w.resourceValue(&c, it.ResourceFieldRef)
		}
		if err != nil {
			return err
		}
		into[it.Path] = fileProjection{data: []byte(v), mode: os.FileMode(modeOr(it.Mode, def))}
	}
	return nil
}

// tokenFile gets a bound token from the TokenRequest API and renews it at
// 80% of its lifetime, as the kubelet does.
func (w *podWorker) tokenFile(ctx context.Context, pod *corev1.Pod, src *corev1.ServiceAccountTokenProjection, def int32, into map[string]fileProjection) error {
	exp := int64(3600)
	if src.ExpirationSeconds != nil {
		exp = *src.ExpirationSeconds
	}
	key := fmt.Sprintf("%s|%s|%d", src.Audience, src.Path, exp)
	t := w.tokens[key]
	if t == nil || !time.Now().Before(t.refreshAt) {
		sa := pod.Spec.ServiceAccountName
		if sa == "" {
			sa = "default"
		}
		req := &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{
			ExpirationSeconds: ptr.To(exp),
			BoundObjectRef:    &authenticationv1.BoundObjectReference{Kind: "Pod", APIVersion: "v1", Name: pod.Name, UID: pod.UID},
		}}
		if src.Audience != "" {
			req.Spec.Audiences = []string{src.Audience}
		}
		start := time.Now()
		tr, err := w.r.cs.CoreV1().ServiceAccounts(w.ns).CreateToken(ctx, sa, req, metav1.CreateOptions{})
		if err != nil {
			if t != nil {
				t.refreshAt = start.Add(retryDelay) // keep the old token, retry later
			}
			return fmt.Errorf("requesting token for service account %q: %w", sa, err)
		}
		life := tr.Status.ExpirationTimestamp.Sub(start)
		t = &projectedToken{token: tr.Status.Token, refreshAt: start.Add(life * 8 / 10)}
		w.tokens[key] = t
	}
	into[src.Path] = fileProjection{data: []byte(t.token), mode: os.FileMode(def)}
	return nil
}
