package render

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/utils/ptr"

	"github.com/gomomento/valkey-operator/api/v1alpha1"
)

// persistentNode is testNode with the resolved config's persistence set
// and the user's map trying to turn the append-only file off.
func persistentNode(t *testing.T, tls bool, p *v1alpha1.Persistence) *v1alpha1.ValkeyNode {
	t.Helper()
	r := *testResolved
	r.Valkey = map[string]string{"maxmemory": "800mb", "appendonly": "no", "AppendFsync": "no", "dir": "/tmp", "save": "60 1"}
	r.Persistence = p
	c := testCluster(tls)
	n, err := c.Node(testNodeName, &r, 1, v1alpha1.JoinTypeReplica)
	if err != nil {
		t.Fatal(err)
	}
	n.UID = testNodeUID
	return n
}

func TestPersistentNode(t *testing.T) {
	tests := []struct {
		name      string
		tls       bool
		p         *v1alpha1.Persistence
		wantFsync string
		wantClass *string
	}{
		{name: "default write mode", p: &v1alpha1.Persistence{Size: resource.MustParse("1Gi")}, wantFsync: "everysec"},
		{name: "always, with a class", p: &v1alpha1.Persistence{Size: resource.MustParse("5Gi"), StorageClassName: "fast", Appendfsync: v1alpha1.AppendFsyncAlways},
			wantFsync: "always", wantClass: ptr.To("fast")},
		{name: "tls", tls: true, p: &v1alpha1.Persistence{Size: resource.MustParse("1Gi"), Appendfsync: v1alpha1.AppendFsyncEverysec}, wantFsync: "everysec"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := testCluster(tt.tls)
			node := persistentNode(t, tt.tls, tt.p)
			if got := node.Spec.Persistence; got == nil || !got.Size.Equal(tt.p.Size) || string(got.Appendfsync) != tt.wantFsync || got.StorageClassName != tt.p.StorageClassName {
				t.Fatalf("node records persistence %+v, want size %s, appendfsync %s", got, tt.p.Size.String(), tt.wantFsync)
			}
			// The forced settings win over the user's, whatever their case.
			for k, want := range map[string]string{"appendonly": "yes", "appendfsync": tt.wantFsync, "dir": "/var/lib/valkey", "save": ""} {
				if got, ok := node.Spec.ValkeySettings[k]; !ok || got != want {
					t.Errorf("setting %s = %q (set %v), want %q", k, got, ok, want)
				}
			}
			if _, ok := node.Spec.ValkeySettings["AppendFsync"]; ok {
				t.Error("the user's AppendFsync survived next to the forced appendfsync")
			}
			cm, err := c.NodeConfigMap(node)
			if err != nil {
				t.Fatal(err)
			}
			conf := cm.Data["valkey.conf"]
			for _, line := range []string{"appendonly yes\n", "appendfsync " + tt.wantFsync + "\n", "dir /var/lib/valkey\n", "cluster-config-file /var/lib/valkey/nodes.conf\n"} {
				if !strings.Contains(conf, line) {
					t.Errorf("valkey.conf lacks %q:\n%s", line, conf)
				}
			}

			claim, err := c.NodeClaim(node)
			if err != nil {
				t.Fatal(err)
			}
			if claim.Name != testNodeName+"-data" || claim.Namespace != testNamespace {
				t.Errorf("claim %s/%s", claim.Namespace, claim.Name)
			}
			if len(claim.OwnerReferences) != 1 || claim.OwnerReferences[0].UID != testNodeUID || !ptr.Deref(claim.OwnerReferences[0].Controller, false) {
				t.Errorf("claim owners %+v, want the node as controller", claim.OwnerReferences)
			}
			if q := claim.Spec.Resources.Requests[corev1.ResourceStorage]; !q.Equal(tt.p.Size) {
				t.Errorf("claim requests %s, want %s", q.String(), tt.p.Size.String())
			}
			if got := claim.Spec.StorageClassName; (got == nil) != (tt.wantClass == nil) || (got != nil && *got != *tt.wantClass) {
				t.Errorf("claim class %v, want %v", got, tt.wantClass)
			}
			if len(claim.Spec.AccessModes) != 1 || claim.Spec.AccessModes[0] != corev1.ReadWriteOnce {
				t.Errorf("claim access modes %v", claim.Spec.AccessModes)
			}

			pod, err := c.Pod(node)
			if err != nil {
				t.Fatal(err)
			}
			if pod.Spec.RestartPolicy != corev1.RestartPolicyOnFailure {
				t.Errorf("restart policy %s: a crashed persistent node must restart on its volume", pod.Spec.RestartPolicy)
			}
			var data *corev1.Volume
			for i := range pod.Spec.Volumes {
				if pod.Spec.Volumes[i].Name == "data" {
					data = &pod.Spec.Volumes[i]
				}
			}
			if data == nil || data.PersistentVolumeClaim == nil || data.PersistentVolumeClaim.ClaimName != claim.Name || data.EmptyDir != nil {
				t.Fatalf("data volume %+v, want the claim %s", data, claim.Name)
			}
			mounted := false
			for _, m := range pod.Spec.Containers[0].VolumeMounts {
				mounted = mounted || (m.Name == "data" && m.MountPath == "/var/lib/valkey" && !m.ReadOnly)
			}
			if !mounted {
				t.Errorf("the claim is not the data directory: %+v", pod.Spec.Containers[0].VolumeMounts)
			}
		})
	}
}

// The persistence the node recorded is applied again when its ConfigMap is
// rendered, as every forced setting is: a recorded map that lost them
// still runs with them.
func TestPersistenceIsForcedAgainAtRendering(t *testing.T) {
	c := testCluster(false)
	node := persistentNode(t, false, &v1alpha1.Persistence{Size: resource.MustParse("1Gi"), Appendfsync: v1alpha1.AppendFsyncAlways})
	node.Spec.ValkeySettings["appendonly"] = "no"
	delete(node.Spec.ValkeySettings, "appendfsync")
	cm, err := c.NodeConfigMap(node)
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range []string{"appendonly yes\n", "appendfsync always\n"} {
		if !strings.Contains(cm.Data["valkey.conf"], line) {
			t.Errorf("valkey.conf lacks %q", line)
		}
	}
}

func TestPersistenceChangeReplacesNodes(t *testing.T) {
	c := testCluster(false)
	without, err := c.NodeSpec(testResolved, 1)
	if err != nil {
		t.Fatal(err)
	}
	r := *testResolved
	r.Persistence = &v1alpha1.Persistence{Size: resource.MustParse("1Gi")}
	with, err := c.NodeSpec(&r, 1)
	if err != nil {
		t.Fatal(err)
	}
	if outdated, why := Outdated(without, with); !outdated {
		t.Error("a node in memory only is not outdated once the config asks for persistence")
	} else {
		t.Logf("outdated: %s", why)
	}
	bigger := r
	bigger.Persistence = &v1alpha1.Persistence{Size: resource.MustParse("2Gi")}
	resized, err := c.NodeSpec(&bigger, 1)
	if err != nil {
		t.Fatal(err)
	}
	if outdated, why := Outdated(with, resized); outdated {
		t.Errorf("a node is outdated when only its volume size changes (%s); its claim is expanded in place", why)
	}
	if outdated, why := Outdated(resized, with); outdated {
		t.Errorf("a node is outdated by a smaller size (%s); a shrink is refused in the status, never rolled", why)
	}
	if outdated, why := Outdated(with, with); outdated {
		t.Errorf("a persistent node outdated against itself: %s", why)
	}
	for _, other := range []v1alpha1.Persistence{
		{Size: resource.MustParse("2Gi"), StorageClassName: "fast"},
		{Size: resource.MustParse("1Gi"), Appendfsync: v1alpha1.AppendFsyncAlways},
	} {
		r := r
		r.Persistence = &other
		spec, err := c.NodeSpec(&r, 1)
		if err != nil {
			t.Fatal(err)
		}
		if outdated, _ := Outdated(with, spec); !outdated {
			t.Errorf("a node is not outdated when its volume becomes %+v: a class or mode needs a new claim", other)
		}
	}
}
