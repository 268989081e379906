package realnode

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	valkeyv1 "github.com/gomomento/valkey-operator/api/v1alpha1"
	"github.com/gomomento/valkey-operator/internal/render"
)

// dataDir is where the render mounts a node's data volume.
const dataDir = "/var/lib/valkey"

// TestPersistenceFullRestart runs a persistent 3x1 cluster (appendfsync
// always) on real volumes: each node's claim bound in the cluster's
// StorageClass (storageClass); on the local node, to a local volume
// mounted by the kubelet as the data directory and given the pod's
// fsGroup, the append-only files on the node's disk.
// Every pod is then deleted at once under a checking client, as a
// namespace-wide eviction would. Every node comes back on the same claim
// and volume with its node ID, nothing is replaced, the cluster re-forms by
// itself, and every acknowledged write reads back.
func TestPersistenceFullRestart(t *testing.T) {
	ns := "persistence"
	createNamespace(t, ns)
	ctx := context.Background()
	class, explicit := storageClass(t)
	cfg := createMenu(t, "persistence", false, func(s *valkeyv1.ValkeyConfigSpec) {
		s.Persistence = &valkeyv1.Persistence{Size: resource.MustParse("1Gi"), Appendfsync: valkeyv1.AppendFsyncAlways}
		if explicit {
			s.Persistence.StorageClassName = class
		}
	})
	t0 := time.Now()
	key := createCluster(t, ns, "durable", cfg, 3, 1)
	vc := waitConverged(t, key, 3, 1, 5*time.Minute)
	t.Logf("persistent 3x1 cluster created → Active in %v", time.Since(t0).Round(100*time.Millisecond))
	pods, _ := waitPodsHealthy(t, key, 6, time.Minute)

	members := slices.Sorted(slices.Values(vc.Status.Nodes))
	type identity struct {
		podUID, nodeUID, claimUID types.UID
		volume, dir, id           string
	}
	before := map[string]identity{}
	for i, p := range pods {
		claim, pv := memberVolume(t, ns, p.Name, class)
		var dir string
		if nodeIsLocal() {
			dir = pv.Spec.Local.Path
			checkMounted(t, &p, dir)
			if i == 0 {
				fi, _ := os.Stat(dir)
				t.Logf("volume %s of %s: %s, %v, group %d", pv.Name, p.Name, dir, fi.Mode(), fi.Sys().(*syscall.Stat_t).Gid)
			}
		}
		var vn valkeyv1.ValkeyNode
		if err := k8sClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: p.Name}, &vn); err != nil {
			t.Fatal(err)
		}
		before[p.Name] = identity{podUID: p.UID, nodeUID: vn.UID, claimUID: claim.UID,
			volume: pv.Name, dir: dir, id: nodeID(t, ns, p.Name)}
	}

	c := clusterClient(t, pods[0].Status.PodIP)
	want := writeKeys(t, c, "persist", 500)
	waitReplicated(t, c)
	// The first key is on the node's disk, in the append-only files of its
	// shard's primary and replica.
	if nodeIsLocal() {
		holders := 0
		for _, name := range members {
			if aofHolds(t, before[name].dir, "persist:0") {
				holders++
			}
		}
		if holders != 2 {
			t.Errorf("%d volumes' append-only files hold persist:0, want its primary's and its replica's", holders)
		}
	}

	w := startWriter(c, "during")
	eventually(t, 30*time.Second, "writes acknowledged before the restart", func() error {
		if n := w.acknowledged(); n < 200 {
			return fmt.Errorf("%d writes acknowledged", n)
		}
		return nil
	})
	deleted := time.Now()
	if err := k8sClient.DeleteAllOf(ctx, &corev1.Pod{}, client.InNamespace(ns),
		client.MatchingLabels(render.ClusterSelector(key.Name))); err != nil {
		t.Fatalf("deleting every pod of %s: %v", key, err)
	}
	// Writes go on until the last old pod is gone: those acknowledged
	// during the pods' preStop hold must survive too.
	eventually(t, 3*time.Minute, "every old pod gone", func() error {
		for _, name := range members {
			var p corev1.Pod
			err := k8sClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, &p)
			if err == nil && p.UID == before[name].podUID {
				return fmt.Errorf("%s still %s", name, p.Status.Phase)
			}
			if err != nil && !apierrors.IsNotFound(err) {
				return err
			}
		}
		return nil
	})
	acked, failed := w.stop()
	t.Logf("every old pod gone %v after the deletion; %d writes acknowledged meanwhile and before, %d failed",
		time.Since(deleted).Round(100*time.Millisecond), len(acked), failed)
	for k, v := range acked {
		want[k] = v
	}

	vc = waitConverged(t, key, 3, 1, 5*time.Minute)
	t.Logf("full restart: deletion → Active again in %v", time.Since(deleted).Round(100*time.Millisecond))
	pods, _ = waitPodsHealthy(t, key, 6, time.Minute)
	if got := slices.Sorted(slices.Values(vc.Status.Nodes)); !slices.Equal(got, members) {
		t.Errorf("members %v, were %v: a node was replaced", got, members)
	}
	for _, p := range pods {
		was, ok := before[p.Name]
		if !ok {
			t.Errorf("pod %s is new", p.Name)
			continue
		}
		if p.UID == was.podUID {
			t.Errorf("pod %s was not deleted", p.Name)
		}
		claim, pv := memberVolume(t, ns, p.Name, class)
		if claim.UID != was.claimUID || pv.Name != was.volume {
			t.Errorf("%s: claim %s on %s, was %s on %s", p.Name, claim.UID, pv.Name, was.claimUID, was.volume)
		}
		if nodeIsLocal() {
			if pv.Spec.Local.Path != was.dir {
				t.Errorf("%s: volume %s at %s, was at %s", p.Name, pv.Name, pv.Spec.Local.Path, was.dir)
			}
			checkMounted(t, &p, was.dir)
		}
		var vn valkeyv1.ValkeyNode
		if err := k8sClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: p.Name}, &vn); err != nil || vn.UID != was.nodeUID {
			t.Errorf("ValkeyNode %s deleted or recreated (%v)", p.Name, err)
		}
		if id := nodeID(t, ns, p.Name); id != was.id {
			t.Errorf("%s has node ID %s, had %s", p.Name, id, was.id)
		}
	}
	if lost := meta.FindStatusCondition(vc.Status.Conditions, "DataLost"); lost != nil && lost.Status == metav1.ConditionTrue {
		t.Errorf("DataLost %s: %s", lost.Reason, lost.Message)
	}
	// Every pod has a new address: a new client, as a user's would
	// rediscover the cluster.
	checkAll(t, clusterClient(t, pods[0].Status.PodIP), want)
	t.Logf("%d acknowledged keys read back", len(want))
}

// memberVolume is a persistent node's claim and its volume, checked to be
// what class gives: bound to each other; on the local node, a local volume
// under the provisioner's directory, pinned to the node.
func memberVolume(t testing.TB, ns, name, class string) (corev1.PersistentVolumeClaim, corev1.PersistentVolume) {
	t.Helper()
	ctx := context.Background()
	var claim corev1.PersistentVolumeClaim
	if err := k8sClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: render.NodeClaimName(name)}, &claim); err != nil {
		t.Fatalf("the claim of %s: %v", name, err)
	}
	if claim.Status.Phase != corev1.ClaimBound || claim.Spec.StorageClassName == nil || *claim.Spec.StorageClassName != class {
		t.Fatalf("claim %s is %s in class %v, want Bound in %s", claim.Name, claim.Status.Phase, claim.Spec.StorageClassName, class)
	}
	var pv corev1.PersistentVolume
	if err := k8sClient.Get(ctx, client.ObjectKey{Name: claim.Spec.VolumeName}, &pv); err != nil {
		t.Fatalf("the volume of claim %s: %v", claim.Name, err)
	}
	if ref := pv.Spec.ClaimRef; ref == nil || ref.UID != claim.UID {
		t.Fatalf("volume %s is bound to %+v, not to claim %s", pv.Name, ref, claim.UID)
	}
	if !nodeIsLocal() {
		return claim, pv
	}
	if pv.Spec.Local == nil || filepath.Dir(pv.Spec.Local.Path) != volumesDir {
		t.Fatalf("volume %s is %+v, want a local volume under %s", pv.Name, pv.Spec.PersistentVolumeSource, volumesDir)
	}
	if a := pv.Spec.NodeAffinity; a == nil || a.Required == nil || len(a.Required.NodeSelectorTerms) != 1 || len(a.Required.NodeSelectorTerms[0].MatchExpressions) != 1 ||
		!slices.Equal(a.Required.NodeSelectorTerms[0].MatchExpressions[0].Values, []string{node.Name}) {
		t.Fatalf("volume %s is not pinned to node %s: %+v", pv.Name, node.Name, pv.Spec.NodeAffinity)
	}
	return claim, pv
}

// checkMounted checks that the Valkey container of p has dir, a directory
// of this machine, as its data directory (the same file, not a copy),
// that the kubelet gave it the pod's fsGroup, and that Valkey wrote its
// nodes.conf and append-only files there as the pod's user.
func checkMounted(t testing.TB, p *corev1.Pod, dir string) {
	t.Helper()
	pid := containerPID(t, p, render.ContainerValkey)
	inside, err := os.Stat(filepath.Join("/proc", strconv.Itoa(pid), "root", dataDir))
	if err != nil {
		t.Fatalf("%s of pod %s: %v", dataDir, p.Name, err)
	}
	host, err := os.Stat(dir)
	if err != nil {
		t.Fatalf("volume directory of pod %s: %v", p.Name, err)
	}
	if !os.SameFile(inside, host) {
		t.Errorf("pod %s: %s is not the volume's directory %s", p.Name, dataDir, dir)
	}
	if gid := host.Sys().(*syscall.Stat_t).Gid; p.Spec.SecurityContext == nil || p.Spec.SecurityContext.FSGroup == nil || int64(gid) != *p.Spec.SecurityContext.FSGroup {
		t.Errorf("pod %s: volume directory %s has group %d, want the pod's fsGroup", p.Name, dir, gid)
	}
	uid := int64(-1)
	if sc := p.Spec.SecurityContext; sc != nil && sc.RunAsUser != nil {
		uid = *sc.RunAsUser
	}
	for _, f := range []string{"nodes.conf", "appendonlydir"} {
		fi, err := os.Stat(filepath.Join(dir, f))
		if err != nil {
			t.Errorf("pod %s: %v", p.Name, err)
			continue
		}
		if owner := int64(fi.Sys().(*syscall.Stat_t).Uid); owner != uid {
			t.Errorf("pod %s: %s owned by %d, want the pod's user %d", p.Name, f, owner, uid)
		}
	}
}

// aofHolds says whether a volume's append-only files name key.
func aofHolds(t testing.TB, dir, key string) bool {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "appendonlydir", "*.aof"))
	if err != nil || len(files) == 0 {
		t.Fatalf("append-only files in %s: %v (%d)", dir, err, len(files))
	}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if bytes.Contains(b, []byte("\r\n"+key+"\r\n")) {
			return true
		}
	}
	return false
}

// nodeID is the Valkey node ID a pod's server answers with.
func nodeID(t testing.TB, ns, name string) string {
	t.Helper()
	n, err := dialPod(ns, name)
	if err != nil {
		t.Fatalf("dialing %s: %v", name, err)
	}
	defer n.Close()
	id, err := n.ClusterMyID(context.Background())
	if err != nil {
		t.Fatalf("CLUSTER MYID on %s: %v", name, err)
	}
	return id
}
