package realnode

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	valkeyv1 "github.com/gomomento/valkey-operator/api/v1alpha1"
	"github.com/gomomento/valkey-operator/internal/nodeimages"
	"github.com/gomomento/valkey-operator/internal/render"
)

// TestPullSecret runs a cluster whose image lives only in a private
// registry with authentication, as a mirror does where Docker Hub is
// blocked. The config names a pull secret that does not exist yet: the
// kubelet's pull is refused, the cluster is not Active and its
// status.message carries the kubelet's reason. Creating the Secret heals it
// with nothing else changed: the pod runs the image the kubelet pulled
// from the registry with the Secret's credentials.
func TestPullSecret(t *testing.T) {
	ctx := context.Background()
	reg := privateRegistry(t)
	built, err := nodeimages.BuildValkey(ctx, nodeimages.Valkey8(), t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	mirrored, digest := mirrorImage(t, built.Image)
	ref, err := reg.Push(ctx, mirrored, "mirror/valkey:8.0.1")
	if err != nil {
		t.Fatal(err)
	}

	const ns, secret = "pullsecret", "mirror-credentials"
	createNamespace(t, ns)
	img := &valkeyv1.ValkeyImage{ObjectMeta: metav1.ObjectMeta{Name: "valkey-mirror"},
		Spec: valkeyv1.ValkeyImageSpec{Repository: strings.TrimSuffix(ref, ":8.0.1"), Tag: "8.0.1", Version: "8.0.1"}}
	cfg := &valkeyv1.ValkeyConfig{ObjectMeta: metav1.ObjectMeta{Name: "mirror"},
		Spec: valkeyv1.ValkeyConfigSpec{ImageRef: img.Name, Valkey: map[string]string{"maxmemory": "64mb"},
			Pod: &valkeyv1.PodSettings{ImagePullSecrets: []valkeyv1.PullSecretRef{{Name: secret}}}}}
	for _, o := range []client.Object{img, cfg} {
		if err := k8sClient.Create(ctx, o); err != nil {
			t.Fatalf("creating %s: %v", o.GetName(), err)
		}
	}
	key := createCluster(t, ns, "cache", cfg.Name, 1, 0)

	eventually(t, 3*time.Minute, "the pull failure in the cluster's status", func() error {
		vc := getCluster(t, key)
		if vc.Status.State == valkeyv1.StateActive {
			t.Fatalf("cluster Active though its image cannot be pulled: %+v", vc.Status)
		}
		c := meta.FindStatusCondition(vc.Status.Conditions, valkeyv1.CondContainersHealthy)
		if c == nil || c.Status != metav1.ConditionFalse || (c.Reason != "ErrImagePull" && c.Reason != "ImagePullBackOff") {
			return fmt.Errorf("ContainersHealthy %+v", c)
		}
		if m := vc.Status.Message; !strings.Contains(m, c.Reason) || !strings.Contains(m, ref) {
			return fmt.Errorf("state %s, status.message %q does not name %s and the image %s", vc.Status.State, m, c.Reason, ref)
		}
		return nil
	})
	if err := k8sClient.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: secret},
		Type: corev1.SecretTypeDockerConfigJson,
		Data: map[string][]byte{corev1.DockerConfigJsonKey: reg.DockerConfigJSON(reg.Password)}}); err != nil {
		t.Fatal(err)
	}

	// The kubelet retries on its own back-off; the operator replaces nothing.
	vc := waitConverged(t, key, 1, 0, 5*time.Minute)
	if vc.Status.Message != "" {
		t.Errorf("status.message %q once Active, want empty", vc.Status.Message)
	}
	pods := clusterPods(t, key)
	if len(pods) != 1 {
		t.Fatalf("%d pods, want 1", len(pods))
	}
	for _, cs := range pods[0].Status.ContainerStatuses {
		if cs.Name != render.ContainerValkey {
			continue
		}
		// The kubelet reports the image by the digest it pulled: the one
		// pushed, from the registry.
		if want := strings.TrimSuffix(ref, ":8.0.1") + "@" + digest.String(); cs.ImageID != want {
			t.Errorf("container %s runs image %s, want %s", cs.Name, cs.ImageID, want)
		}
	}
	// containerd resolved the image at the registry: refused while the
	// Secret was missing, answered with its credentials (the layers it may
	// already hold, being those of the image imported for the other
	// tests). Only the local node's registry shows its access log.
	if nodeIsLocal() {
		var refused, answered bool
		for line := range strings.SplitSeq(reg.Log(), "\n") {
			if !strings.Contains(line, `"HEAD /v2/mirror/valkey/manifests/8.0.1 HTTP/1.1"`) || !strings.Contains(line, `"containerd/`) {
				continue
			}
			refused = refused || strings.Contains(line, `" 401 `)
			answered = answered || strings.Contains(line, `" 200 `)
		}
		if !refused || !answered {
			t.Errorf("the registry's log does not show containerd refused (%v) and then answered (%v):\n%s", refused, answered, reg.Log())
		}
	}
	c := clusterClient(t, pods[0].Status.PodIP)
	checkAll(t, c, writeKeys(t, c, "mirror", 50))
}

// mirrorImage is img with a label of its own, so that its image ID differs
// from the valkey/valkey:8.0.1 the other tests' pods run: the kubelet
// records the pull secret of an image pulled with one by image ID, and
// from then on re-verifies every pod using that ID, pulling the public
// name too, which a node with no route to Docker Hub cannot.
func mirrorImage(t testing.TB, img v1.Image) (v1.Image, v1.Hash) {
	t.Helper()
	cf, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	cf = cf.DeepCopy()
	if cf.Config.Labels == nil {
		cf.Config.Labels = map[string]string{}
	}
	cf.Config.Labels["io.valkey.conformance.mirror"] = "pullsecret"
	out, err := mutate.ConfigFile(img, cf)
	if err != nil {
		t.Fatal(err)
	}
	digest, err := out.Digest()
	if err != nil {
		t.Fatal(err)
	}
	return out, digest
}
