package realnode

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	valkeyv1 "github.com/gomomento/valkey-operator/api/v1alpha1"
	"github.com/gomomento/valkey-operator/internal/nodeimages"
	"github.com/gomomento/valkey-operator/internal/render"
	"github.com/gomomento/valkey-operator/internal/testregistry"
)

// TestPullSecret runs a cluster whose image lives only in a private
// registry with authentication, as a mirror does where Docker Hub is
// blocked. The config names a pull secret that does not exist yet: the
// kubelet's pull is refused, the cluster is not Active and its
// status.message carries the kubelet's reason. Creating the Secret heals it
// with nothing else changed: the pod runs the image the kubelet pulled
// from the registry with the Secret's credentials.
func TestPullSecret(t *testing.T) {
	if node == nil {
		// The registry listens on this machine's loopback, which only the
		// suite's own node pulls from.
		t.Skip("needs the suite's own node: a cluster a kubeconfig names cannot reach this machine's test registry")
	}
	ctx := context.Background()
	reg := testregistry.Start(t)
	if err := node.UsePlainHTTPRegistry(reg.Host); err != nil {
		t.Fatal(err)
	}
	built, err := nodeimages.BuildValkey(ctx, nodeimages.Valkey8(), t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	ref, err := reg.Push(ctx, built.Image, "mirror/valkey:8.0.1")
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
		if want := strings.TrimSuffix(ref, ":8.0.1") + "@" + built.Digest.String(); cs.ImageID != want {
			t.Errorf("container %s runs image %s, want %s", cs.Name, cs.ImageID, want)
		}
	}
	// containerd resolved the image at the registry: refused while the
	// Secret was missing, answered with its credentials (the blobs it may
	// already hold, being those of the image imported for the other tests).
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
	c := clusterClient(t, pods[0].Status.PodIP)
	checkAll(t, c, writeKeys(t, c, "mirror", 50))
}
