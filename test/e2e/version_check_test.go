package e2e

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	valkeyv1 "github.com/gomomento/valkey-operator/api/v1alpha1"
)

// A ValkeyImage whose tag runs another Valkey than its version declares
// (tags 9.* run the Valkey 9 build) is caught on the first node of the
// roll that answers: VersionMatches goes False naming the node and both
// versions, a Warning Event says so, and the roll goes no further, every
// old node kept. Once the image declares what it runs, the roll
// completes, every key intact under client load.
func TestVersionMismatchHoldsRoll(t *testing.T) {
	t.Parallel()
	const ns = "version-check"
	key := newPlainCluster(t, ns, "cache", 1, 1)
	c := clusterClient(t, seedOf(key), nil)
	before := writeKeys(t, c, "before", 500)
	oldNodes := slices.Clone(getCluster(t, key).Status.Nodes)
	load := startLoad(c, "load")
	image := menuImageName(ns)
	setImage(t, image, "9.1.2", "8.0.1")

	var mismatch string
	eventually(t, 3*time.Minute, "VersionMatches False", func() error {
		vc := getCluster(t, key)
		m := meta.FindStatusCondition(vc.Status.Conditions, valkeyv1.CondVersionMatches)
		if m == nil || m.Status != "False" || m.Reason != valkeyv1.ReasonVersionMismatch {
			return fmt.Errorf("conditions %v", conditionSummary(vc))
		}
		mismatch = m.Message
		return nil
	})
	want := fmt.Sprintf("ValkeyImage %s (valkey/valkey:9.1.2) declares Valkey 8.0.1, but node ", image)
	if !strings.HasPrefix(mismatch, want) || !strings.Contains(mismatch, " runs 9.1.2") {
		t.Fatalf("VersionMatches message %q, want it to start %q and name a node running 9.1.2", mismatch, want)
	}
	assertEvent(t, key, valkeyv1.ReasonVersionMismatch, want)
	eventually(t, time.Minute, "the roll held in Progressing", func() error {
		vc := getCluster(t, key)
		p := meta.FindStatusCondition(vc.Status.Conditions, valkeyv1.CondProgressing)
		if p == nil || p.Status != "True" || p.Reason != valkeyv1.ReasonHeldForVersion ||
			!strings.Contains(p.Message, "node creations held") || !strings.Contains(p.Message, "runs 9.1.2") {
			return fmt.Errorf("conditions %v", conditionSummary(vc))
		}
		return nil
	})
	var nodes valkeyv1.ValkeyNodeList
	if err := k8sClient.List(context.Background(), &nodes, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	var names, mislabelled []string
	for _, n := range nodes.Items {
		names = append(names, n.Name)
		if n.Spec.Image == "valkey/valkey:9.1.2" {
			mislabelled = append(mislabelled, n.Name)
		}
	}
	for _, old := range oldNodes {
		if !slices.Contains(names, old) {
			t.Fatalf("old node %s retired while the roll is held; nodes %v", old, names)
		}
	}
	if len(mislabelled) != 1 || !strings.Contains(mismatch, "node "+mislabelled[0]+" runs 9.1.2") {
		t.Fatalf("nodes on the mislabelled image %v, want the one the message names: %q", mislabelled, mismatch)
	}

	// Declared as what it runs, the image rolls on.
	setImage(t, image, "9.1.2", "9.1.2")
	eventually(t, 6*time.Minute, "every node replaced", func() error {
		vc := getCluster(t, key)
		for _, n := range vc.Status.Nodes {
			if slices.Contains(oldNodes, n) {
				return fmt.Errorf("%s not replaced yet; conditions %v", n, conditionSummary(vc))
			}
		}
		if !meta.IsStatusConditionTrue(vc.Status.Conditions, valkeyv1.CondVersionMatches) {
			return fmt.Errorf("conditions %v", conditionSummary(vc))
		}
		return nil
	})
	waitConverged(t, key, 1, 1, 5*time.Minute)
	acked := load.finishUndisturbed(t)
	checkAll(t, c, before)
	checkAll(t, c, acked)
}

// setImage sets a ValkeyImage's tag and declared version.
func setImage(t testing.TB, name, tag, version string) {
	t.Helper()
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		var img valkeyv1.ValkeyImage
		if err := k8sClient.Get(context.Background(), client.ObjectKey{Name: name}, &img); err != nil {
			return err
		}
		img.Spec.Tag, img.Spec.Version = tag, version
		return k8sClient.Update(context.Background(), &img)
	})
	if err != nil {
		t.Fatalf("setting image %s to %s (version %s): %v", name, tag, version, err)
	}
}
