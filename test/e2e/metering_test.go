package e2e

import (
	"context"
	"fmt"
	"math/big"
	"testing"
	"time"

	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	valkeyv1 "github.com/gomomento/valkey-operator/api/v1alpha1"
	"github.com/gomomento/valkey-operator/internal/controller"
)

// A cluster's metering record, in the operator's namespace, accumulates
// the provisioned memory of its nodes (here maxmemory, the documented
// second source), exactly, sample after sample; survives the cluster's
// deletion with its figures frozen; and goes only once deleted and
// released by the annotation.
func TestMeteringRecordAccumulatesAndSurvives(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	ns := "metering"
	createNamespace(t, ns)
	cfg := createConfig(t, "metered-"+ns, "8.0.1", valkeyv1.ValkeyConfigSpec{Valkey: map[string]string{"maxmemory": "200mb"}})
	vc := &valkeyv1.ValkeyCluster{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "cache"},
		Spec: valkeyv1.ValkeyClusterSpec{ConfigRef: cfg, Shards: 1, ReplicasPerShard: 1}}
	if err := k8sClient.Create(ctx, vc); err != nil {
		t.Fatalf("creating %s: %v", vc.Name, err)
	}
	key := client.ObjectKeyFromObject(vc)
	vc = waitConverged(t, key, 1, 1, 3*time.Minute)
	recKey := client.ObjectKey{Namespace: controller.DefaultNamespace, Name: controller.MeteringRecordName(vc)}
	const perNode = 200 << 20 // maxmemory 200mb, no container limit
	read := func() valkeyv1.ValkeyMeteringRecord {
		var rec valkeyv1.ValkeyMeteringRecord
		if err := k8sClient.Get(ctx, recKey, &rec); err != nil {
			t.Fatalf("reading record %s: %v", recKey.Name, err)
		}
		return rec
	}

	// Two samples billed at the whole cluster's figure.
	var first valkeyv1.ValkeyMeteringRecord
	eventually(t, time.Minute, "the record billing both nodes at maxmemory", func() error {
		var rec valkeyv1.ValkeyMeteringRecord
		if err := k8sClient.Get(ctx, recKey, &rec); err != nil {
			return err
		}
		s := rec.Status
		if s.ProvisionedBytes != 2*perNode || s.Nodes != 2 || s.Sources[valkeyv1.MeteringSourceMaxMemory] != 2 || s.LastSample == nil {
			return fmt.Errorf("status %+v", s)
		}
		first = rec
		return nil
	})
	if first.Spec.ClusterUID != string(vc.UID) || first.Spec.ClusterNamespace != ns || first.Spec.ClusterName != vc.Name {
		t.Errorf("record spec %+v, want cluster %s/%s uid %s", first.Spec, ns, vc.Name, vc.UID)
	}
	var second valkeyv1.ValkeyMeteringRecord
	eventually(t, time.Minute, "a later sample", func() error {
		second = read()
		if !second.Status.LastSample.After(first.Status.LastSample.Time) {
			return fmt.Errorf("last sample still %s", second.Status.LastSample)
		}
		return nil
	})
	// Between two samples at a constant figure the accumulator grows by
	// exactly figure x time, in byte-milliseconds.
	total := func(s valkeyv1.ValkeyMeteringRecordStatus) *big.Int {
		v := new(big.Int).Mul(big.NewInt(s.MegabyteSeconds), big.NewInt(1_000_000_000))
		return v.Add(v, big.NewInt(s.RemainderByteMillis))
	}
	grew := new(big.Int).Sub(total(second.Status), total(first.Status))
	want := new(big.Int).Mul(big.NewInt(2*perNode), big.NewInt(second.Status.LastSample.Sub(first.Status.LastSample.Time).Milliseconds()))
	if grew.Cmp(want) != 0 || grew.Sign() <= 0 {
		t.Errorf("accumulator grew by %s byte-ms between samples %s apart, want %s", grew, second.Status.LastSample.Sub(first.Status.LastSample.Time), want)
	}
	t.Logf("record %s: %s GB-hours so far", recKey.Name, second.Status.GBHours)

	deleteCluster(t, key)
	var frozen valkeyv1.ValkeyMeteringRecord
	eventually(t, time.Minute, "the record marking the cluster deleted", func() error {
		frozen = read()
		if frozen.Status.ClusterDeleted == nil {
			return fmt.Errorf("not marked yet")
		}
		return nil
	})
	// Kept, and no longer advancing: three more intervals change nothing.
	until := time.Now().Add(3 * 2 * time.Second)
	for time.Now().Before(until) {
		if got := read(); got.Status.MegabyteSeconds != frozen.Status.MegabyteSeconds || !got.Status.LastSample.Equal(frozen.Status.LastSample) {
			t.Fatalf("a deleted cluster's record still advances: %+v then %+v", frozen.Status, got.Status)
		}
		time.Sleep(500 * time.Millisecond) // watching that nothing happens, not waiting for something
	}

	// A delete alone keeps it; the release annotation lets it go.
	if err := k8sClient.Delete(ctx, &frozen); err != nil {
		t.Fatal(err)
	}
	if rec := read(); rec.DeletionTimestamp.IsZero() {
		t.Fatalf("record not marked for deletion")
	}
	eventually(t, 30*time.Second, "a ReleaseRequired Event on the record", func() error {
		var list eventsv1.EventList
		if err := k8sClient.List(ctx, &list, client.InNamespace(controller.DefaultNamespace)); err != nil {
			return err
		}
		for _, e := range list.Items {
			if e.Regarding.Name == recKey.Name && e.Reason == valkeyv1.ReasonReleaseRequired {
				return nil
			}
		}
		return fmt.Errorf("none yet")
	})
	eventually(t, 30*time.Second, "annotating the record released", func() error {
		rec := read()
		patch := client.MergeFrom(rec.DeepCopy())
		if rec.Annotations == nil {
			rec.Annotations = map[string]string{}
		}
		rec.Annotations[valkeyv1.AnnotationRelease] = "true"
		return k8sClient.Patch(ctx, &rec, patch)
	})
	eventually(t, 30*time.Second, "the released record gone", func() error {
		var rec valkeyv1.ValkeyMeteringRecord
		if err := k8sClient.Get(ctx, recKey, &rec); !apierrors.IsNotFound(err) {
			return fmt.Errorf("still there: %v", err)
		}
		return nil
	})
}
