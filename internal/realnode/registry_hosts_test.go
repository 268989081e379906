package realnode_test

import (
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/v1/layout"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gomomento/valkey-operator/internal/realnode"
	"github.com/gomomento/valkey-operator/internal/testregistry"
)

// TestPullFromRegistryWithSecret: the node's containerd pulls from a
// plain-HTTP registry with authentication once UsePlainHTTPRegistry names
// it, with the credentials of the pod's pull secret. Without the Secret the
// kubelet's pull is refused (ErrImagePull, then ImagePullBackOff); once it
// exists the kubelet's next try pulls the pushed image, by its digest.
func TestPullFromRegistryWithSecret(t *testing.T) {
	ctx, cs, cp, dir, _ := setup(t)
	node := startNode(ctx, t, cp, dir, "node")
	reg := testregistry.Start(t)
	if err := node.UsePlainHTTPRegistry(reg.Host); err != nil {
		t.Fatal(err)
	}
	tarPath := filepath.Join(dir, "pause.oci.tar")
	if err := realnode.WritePauseImage(ctx, tarPath); err != nil {
		t.Fatal(err)
	}
	unpacked := filepath.Join(dir, "pause-layout")
	if out, err := exec.Command("sh", "-c", "mkdir -p \"$1\" && tar -xf \"$2\" -C \"$1\"", "sh", unpacked, tarPath).CombinedOutput(); err != nil {
		t.Fatalf("unpacking %s: %v: %s", tarPath, err, out)
	}
	idx, err := layout.ImageIndexFromPath(unpacked)
	if err != nil {
		t.Fatal(err)
	}
	im, err := idx.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	img, err := idx.Image(im.Manifests[0].Digest)
	if err != nil {
		t.Fatal(err)
	}
	ref, err := reg.Push(ctx, img, "private/pause:v1")
	if err != nil {
		t.Fatal(err)
	}
	digest, _ := img.Digest()

	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "pulled", Namespace: "default"}, Spec: corev1.PodSpec{
		NodeName:         node.Name,
		ImagePullSecrets: []corev1.LocalObjectReference{{Name: "mirror"}},
		Containers:       []corev1.Container{{Name: "pause", Image: ref}},
	}}
	if _, err := cs.CoreV1().Pods("default").Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := waitFor(ctx, 2*time.Minute, func() (bool, string) {
		p, err := cs.CoreV1().Pods("default").Get(ctx, pod.Name, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		for _, c := range p.Status.ContainerStatuses {
			if w := c.State.Waiting; w != nil && (w.Reason == "ErrImagePull" || w.Reason == "ImagePullBackOff") {
				return true, ""
			}
		}
		return false, podState(p)
	}); err != nil {
		t.Fatalf("pull without the Secret not refused: %v\nregistry log:\n%s", err, reg.Log())
	}

	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "mirror", Namespace: "default"},
		Type: corev1.SecretTypeDockerConfigJson,
		Data: map[string][]byte{corev1.DockerConfigJsonKey: reg.DockerConfigJSON(reg.Password)}}
	if _, err := cs.CoreV1().Secrets("default").Create(ctx, secret, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	var running *corev1.Pod
	if err := waitFor(ctx, 3*time.Minute, func() (bool, string) {
		p, err := cs.CoreV1().Pods("default").Get(ctx, pod.Name, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		running = p
		return p.Status.Phase == corev1.PodRunning, podState(p)
	}); err != nil {
		t.Fatalf("pod did not run with the Secret: %v\nregistry log:\n%s", err, reg.Log())
	}
	if want := reg.Host + "/private/pause@" + digest.String(); running.Status.ContainerStatuses[0].ImageID != want {
		t.Errorf("image ID %s, want %s", running.Status.ContainerStatuses[0].ImageID, want)
	}
	deletePod(ctx, t, cs, pod.Name)
}
