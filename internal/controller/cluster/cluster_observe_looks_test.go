package cluster

import (
	"context"
	"regexp"
	"strconv"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gomomento/valkey-operator/internal/controller/looks"
	"github.com/gomomento/valkey-operator/internal/valkey"
)

// An observation followed, within the interval, by the autoscaler's sample
// of the same node sends INFO once: the sample reads the observation's
// look. Counted on a real server with INFO commandstats.
func TestObserveThenSampleSendsOneInfo(t *testing.T) {
	conn := observedConnector(t, "9.1.2")
	ctx := context.Background()
	key := client.ObjectKeyFromObject(conn.Cluster)
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "c-0", UID: "pod-c-0"}, Status: corev1.PodStatus{PodIP: "127.0.0.1"}}
	r := &Reconciler{Looks: looks.New(nil)}
	dial := func(ctx context.Context) (*valkey.Node, error) { return conn.Dial(ctx, pod.Name, pod.Status.PodIP) }
	sample := func(maxAge time.Duration) {
		t.Helper()
		look, err := r.Looks.Recent(ctx, key, pod, maxAge, time.Time{}, dial)
		if err != nil {
			t.Fatal(err)
		}
		if u, err := look.Usage(); err != nil || u.RunID == "" || u.UsedMemory == 0 {
			t.Fatalf("sample from the look = %+v, %v", u, err)
		}
	}

	before := infoCalls(t, dial)
	if _, _, _, err := r.observeNode(ctx, conn, key, pod, nil); err != nil {
		t.Fatal(err)
	}
	sample(45 * time.Second)
	// One INFO is the count read before; the other is the observation's.
	if got := infoCalls(t, dial) - before; got != 2 {
		t.Fatalf("observe then sample sent %d INFO, want 1 (plus the count's own)", got-1)
	}

	// A look older than the sampler accepts is not used: it asks itself.
	before = infoCalls(t, dial)
	sample(0)
	if got := infoCalls(t, dial) - before; got != 2 {
		t.Fatalf("a sample with no fresh look sent %d INFO, want 1 (plus the count's own)", got-1)
	}
}

var infoStat = regexp.MustCompile(`calls=(\d+)`)

// infoCalls is how many INFO commands the node has run, this one excluded.
func infoCalls(t *testing.T, dial func(context.Context) (*valkey.Node, error)) int {
	t.Helper()
	n, err := dial(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer n.Close()
	stats, err := n.Info(context.Background(), "commandstats")
	if err != nil {
		t.Fatal(err)
	}
	m := infoStat.FindStringSubmatch(stats["commandstats"]["cmdstat_info"])
	if m == nil {
		return 0
	}
	calls, err := strconv.Atoi(m[1])
	if err != nil {
		t.Fatal(err)
	}
	return calls
}
