package localkube

import (
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/gomomento/valkey-operator/internal/localkube/localkubetest"
)

func TestSecretUpdateIsAtomicAndDelayed(t *testing.T) {
	t.Parallel()
	ns := newNamespace(t)
	// Large enough that a non-atomic write would be caught half done.
	oldData := strings.Repeat("old-", 1<<16)
	newData := strings.Repeat("new-", 1<<16)
	secret := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "demo", Namespace: ns},
		Data:       map[string][]byte{"data.txt": []byte(oldData)},
	}
	secret, err := testCS.CoreV1().Secrets(ns).Create(testCtx, secret, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	pod := sleepPod(ns, "reader")
	pod.Spec.Volumes = []corev1.Volume{{Name: "demo", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "demo"}}}}
	pod.Spec.Containers[0].VolumeMounts = []corev1.VolumeMount{{Name: "demo", MountPath: "/etc/demo", ReadOnly: true}}
	createPod(t, pod)
	waitPod(t, ns, "reader", "ready", isReady)

	path, err := testRT.HostPath(ns, "reader", "/etc/demo/data.txt")
	if err != nil {
		t.Fatal(err)
	}
	// A process apart from the runtime finds the same file.
	if apart, err := HostPathsUnder(testRT.BaseDir())(ns, "reader", "/etc/demo/data.txt"); err != nil || apart != path {
		t.Errorf("HostPathsUnder = %q, %v; want %q as HostPath says", apart, err, path)
	}
	if _, err := HostPathsUnder(testRT.BaseDir())(ns, "reader", "/elsewhere/data.txt"); err == nil {
		t.Error("HostPathsUnder mapped a path under no mount")
	}
	volDir := filepath.Dir(path)
	if l, err := os.Readlink(path); err != nil || l != "..data/data.txt" {
		t.Errorf("data.txt -> %q, %v; want ..data/data.txt", l, err)
	}
	firstTs, err := os.Readlink(filepath.Join(volDir, "..data"))
	if err != nil || !strings.HasPrefix(firstTs, "..20") {
		t.Fatalf("..data -> %q, %v; want a timestamped directory", firstTs, err)
	}

	type read struct {
		at   time.Time
		data string
	}
	var (
		mu    sync.Mutex
		reads []read
		stop  = make(chan struct{})
		done  = make(chan struct{})
	)
	go func() {
		defer close(done)
		for {
			select {
			case <-stop:
				return
			default:
			}
			b, err := os.ReadFile(path)
			at := time.Now()
			if err != nil {
				b = []byte("error: " + err.Error())
			}
			mu.Lock()
			reads = append(reads, read{at, string(b)})
			mu.Unlock()
		}
	}()
	updated := time.Now()
	secret.Data["data.txt"] = []byte(newData)
	if _, err := testCS.CoreV1().Secrets(ns).Update(testCtx, secret, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, 10*time.Second, func() (bool, string) {
		mu.Lock()
		defer mu.Unlock()
		return len(reads) > 0 && reads[len(reads)-1].data == newData, "new secret content not in the pod's file"
	})
	close(stop)
	<-done

	var firstNew time.Time
	for i, r := range reads {
		switch r.data {
		case oldData:
			if !firstNew.IsZero() {
				t.Fatalf("read %d saw the old content after the new one", i)
			}
		case newData:
			if firstNew.IsZero() {
				firstNew = r.at
			}
		default:
			t.Fatalf("read %d saw neither old nor new content (%d bytes, starts %.20q)", i, len(r.data), r.data)
		}
	}
	if lag := firstNew.Sub(updated); lag < testProjectionDelay {
		t.Errorf("update reached the pod after %s, before the %s projection delay", lag, testProjectionDelay)
	} else {
		t.Logf("update reached the pod after %s (delay %s, %d reads)", lag.Round(time.Millisecond), testProjectionDelay, len(reads))
	}
	ts, _ := os.Readlink(filepath.Join(volDir, "..data"))
	if ts == firstTs {
		t.Error("..data still points at the first version")
	}
	if _, err := os.Stat(filepath.Join(volDir, firstTs)); !os.IsNotExist(err) {
		t.Error("the first version's directory was not removed")
	}
	deletePod(t, ns, "reader")
	waitGone(t, ns, "reader")
	localkubetest.AssertNoLeakedProcesses(t, testRT.PodDirPrefix(ns))
}

func TestVolumeKinds(t *testing.T) {
	t.Parallel()
	ns := newNamespace(t)
	// Bound tokens need the namespace's ServiceAccount, which the
	// controller-manager creates.
	eventually(t, testTimeout, func() (bool, string) {
		_, err := testCS.CoreV1().ServiceAccounts(ns).Get(testCtx, "default", metav1.GetOptions{})
		return err == nil, "no default ServiceAccount"
	})
	cm := &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: "conf", Namespace: ns},
		Data: map[string]string{
			"valkey.conf": "dir /var/lib/valkey\ntls-cert-file /etc/valkey/tls/tls.crt\ninclude /etc/valkey/conf/extra.conf\n",
			"extra.conf":  "maxmemory 10mb\n",
			"unused":      "x",
		},
	}
	if _, err := testCS.CoreV1().ConfigMaps(ns).Create(testCtx, cm, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	sec := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "tls", Namespace: ns},
		Data:       map[string][]byte{"tls.crt": []byte("CERT"), "tls.key": []byte("KEY")},
	}
	if _, err := testCS.CoreV1().Secrets(ns).Create(testCtx, sec, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	pod := sleepPod(ns, "vols")
	pod.Labels["tier"] = "cache"
	pod.Spec.ServiceAccountName = "default"
	pod.Spec.Volumes = []corev1.Volume{
		{Name: "conf", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
			LocalObjectReference: corev1.LocalObjectReference{Name: "conf"},
			Items:                []corev1.KeyToPath{{Key: "valkey.conf", Path: "valkey.conf"}, {Key: "extra.conf", Path: "more/extra.conf", Mode: ptr.To[int32](0o600)}},
			DefaultMode:          ptr.To[int32](0o440),
		}}},
		{Name: "tls", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "tls", DefaultMode: ptr.To[int32](0o400)}}},
		{Name: "data", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
		{Name: "proj", VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{
			DefaultMode: ptr.To[int32](0o444),
			Sources: []corev1.VolumeProjection{
				{ConfigMap: &corev1.ConfigMapProjection{LocalObjectReference: corev1.LocalObjectReference{Name: "conf"}, Items: []corev1.KeyToPath{{Key: "extra.conf", Path: "extra.conf"}}}},
				{Secret: &corev1.SecretProjection{LocalObjectReference: corev1.LocalObjectReference{Name: "tls"}, Items: []corev1.KeyToPath{{Key: "tls.crt", Path: "cert/tls.crt"}}}},
				{DownwardAPI: &corev1.DownwardAPIProjection{Items: []corev1.DownwardAPIVolumeFile{
					{Path: "name", FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.name"}},
					{Path: "labels", FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.labels"}},
				}}},
				{ServiceAccountToken: &corev1.ServiceAccountTokenProjection{Path: "token", ExpirationSeconds: ptr.To[int64](3600)}},
			},
		}}},
	}
	pod.Spec.Containers[0].VolumeMounts = []corev1.VolumeMount{
		{Name: "conf", MountPath: "/etc/valkey/conf"},
		{Name: "tls", MountPath: "/etc/valkey/tls"},
		{Name: "data", MountPath: "/var/lib/valkey"},
		{Name: "proj", MountPath: "/var/run/info"},
	}
	// Mount paths in args are rewritten too, and env comes from the
	// downward API and $(VAR) expansion.
	pod.Spec.Containers[0].Command = []string{"sh", "-c", `echo "$GREETING" > /var/lib/valkey/out && exec sleep 3600`}
	pod.Spec.Containers[0].Env = []corev1.EnvVar{
		{Name: "NAME", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.name"}}},
		{Name: "NS", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.namespace"}}},
		{Name: "NODE", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "spec.nodeName"}}},
		{Name: "GREETING", Value: "$(NAME).$(NS) on $(NODE) $$(NAME)"},
	}
	createPod(t, pod)
	p := waitPod(t, ns, "vols", "ready", isReady)

	read := func(containerPath string) (string, os.FileMode) {
		t.Helper()
		hp, err := testRT.HostPath(ns, "vols", containerPath)
		if err != nil {
			t.Fatal(err)
		}
		b, err := os.ReadFile(hp)
		if err != nil {
			t.Fatalf("%s: %v", containerPath, err)
		}
		st, _ := os.Stat(hp)
		return string(b), st.Mode().Perm()
	}
	dataDir, _ := testRT.HostPath(ns, "vols", "/var/lib/valkey")
	tlsDir, _ := testRT.HostPath(ns, "vols", "/etc/valkey/tls")
	confDir, _ := testRT.HostPath(ns, "vols", "/etc/valkey/conf")
	conf, mode := read("/etc/valkey/conf/valkey.conf")
	want := "dir " + dataDir + "\ntls-cert-file " + tlsDir + "/tls.crt\ninclude " + confDir + "/extra.conf\n"
	if conf != want || mode != 0o440 {
		t.Errorf("valkey.conf (%o):\n%s\nwant (440):\n%s", mode, conf, want)
	}
	if s, mode := read("/etc/valkey/conf/more/extra.conf"); s != "maxmemory 10mb\n" || mode != 0o600 {
		t.Errorf("more/extra.conf = %q (%o)", s, mode)
	}
	if _, err := os.Lstat(filepath.Join(confDir, "unused")); !os.IsNotExist(err) {
		t.Error("a key left out of items was projected")
	}
	if s, mode := read("/etc/valkey/tls/tls.key"); s != "KEY" || mode != 0o400 {
		t.Errorf("tls.key = %q (%o)", s, mode)
	}
	if s, mode := read("/var/run/info/cert/tls.crt"); s != "CERT" || mode != 0o444 {
		t.Errorf("projected cert = %q (%o)", s, mode)
	}
	if s, _ := read("/var/run/info/name"); s != "vols" {
		t.Errorf("projected name = %q", s)
	}
	if s, _ := read("/var/run/info/labels"); !strings.Contains(s, `tier="cache"`) {
		t.Errorf("projected labels = %q", s)
	}
	if s, _ := read("/var/run/info/token"); strings.Count(s, ".") != 2 {
		t.Errorf("projected token is not a JWT: %q", s)
	}
	wantGreeting := "vols." + ns + " on " + p.Spec.NodeName + " $(NAME)\n"
	eventually(t, 10*time.Second, func() (bool, string) {
		b, _ := os.ReadFile(filepath.Join(dataDir, "out"))
		return string(b) == wantGreeting, "emptyDir out = " + string(b) + ", want " + wantGreeting
	})
	deletePod(t, ns, "vols")
	waitGone(t, ns, "vols")
	localkubetest.AssertNoLeakedProcesses(t, testRT.PodDirPrefix(ns))
}

func TestMissingSecretKeepsPodPending(t *testing.T) {
	t.Parallel()
	ns := newNamespace(t)
	pod := sleepPod(ns, "waits")
	pod.Spec.Volumes = []corev1.Volume{{Name: "s", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "later"}}}}
	pod.Spec.Containers[0].VolumeMounts = []corev1.VolumeMount{{Name: "s", MountPath: "/etc/s"}}
	createPod(t, pod)
	p := waitPod(t, ns, "waits", "waiting for its volume", func(p *corev1.Pod) bool {
		cs := p.Status.ContainerStatuses
		return len(cs) == 1 && cs[0].State.Waiting != nil && strings.Contains(cs[0].State.Waiting.Message, `secret "later" not found`)
	})
	if p.Status.Phase != corev1.PodPending {
		t.Errorf("phase = %s, want Pending", p.Status.Phase)
	}
	_, err := testCS.CoreV1().Secrets(ns).Create(testCtx, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "later", Namespace: ns},
		Data:       map[string][]byte{"k": []byte("v")},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	waitPod(t, ns, "waits", "ready", isReady)
	deletePod(t, ns, "waits")
	waitGone(t, ns, "waits")
}
