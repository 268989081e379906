package realnode

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gomomento/valkey-operator/internal/chartinstall"
)

// The names the chart gives the operator's objects.
const (
	chartDeployment     = "valkey-operator"
	chartServiceAccount = "valkey-operator"
	chartContainer      = "manager"
	chartMetricsReader  = "valkey-operator-metrics-reader"
	chartMetricsPort    = 8443
)

// TestOperatorDeployment checks the operator a user gets from the chart:
// every replica of its Deployment Ready without a restart, running as the
// chart's ServiceAccount in a namespace that enforces Pod Security
// restricted; on this machine's node, its process runs as nonroot (65532)
// with no capability, no new privileges and a read-only root file system.
func TestOperatorDeployment(t *testing.T) {
	ctx := context.Background()
	var dep appsv1.Deployment
	if err := k8sClient.Get(ctx, client.ObjectKey{Namespace: operatorNamespace, Name: chartDeployment}, &dep); err != nil {
		t.Fatalf("the chart's Deployment: %v", err)
	}
	want := ptr.Deref(dep.Spec.Replicas, 1)
	if dep.Status.AvailableReplicas != want || dep.Status.ReadyReplicas != want {
		t.Errorf("Deployment %s: %d ready, %d available of %d", dep.Name, dep.Status.ReadyReplicas, dep.Status.AvailableReplicas, want)
	}
	if dep.Labels["app.kubernetes.io/managed-by"] != "Helm" {
		t.Errorf("Deployment %s labels %v: not managed by Helm", dep.Name, dep.Labels)
	}

	var sa corev1.ServiceAccount
	if err := k8sClient.Get(ctx, client.ObjectKey{Namespace: operatorNamespace, Name: chartServiceAccount}, &sa); err != nil {
		t.Fatalf("the chart's ServiceAccount: %v", err)
	}
	if sa.Labels["app.kubernetes.io/managed-by"] != "Helm" {
		t.Errorf("ServiceAccount %s labels %v: not the chart's", sa.Name, sa.Labels)
	}

	checkRestrictedEnforced(t, operatorNamespace)

	pods, err := chartinstall.OperatorPods(ctx, clientset, operatorNamespace)
	if err != nil {
		t.Fatal(err)
	}
	if int32(len(pods)) != want {
		t.Errorf("%d operator pods, want %d", len(pods), want)
	}
	for i := range pods {
		p := &pods[i]
		if p.Spec.ServiceAccountName != sa.Name {
			t.Errorf("pod %s runs as ServiceAccount %q, want %q", p.Name, p.Spec.ServiceAccountName, sa.Name)
		}
		for _, problem := range podProblems(p) {
			t.Error(problem)
		}
		if !nodeIsLocal() {
			continue
		}
		pid := containerPID(t, p, chartContainer)
		status := procStatus(t, pid)
		for field, want := range map[string]string{
			"Name":       "valkey-operator",
			"Uid":        "65532\t65532\t65532\t65532",
			"Gid":        "65532\t65532\t65532\t65532",
			"CapEff":     "0000000000000000",
			"NoNewPrivs": "1",
			"Seccomp":    "2",
		} {
			if got := status[field]; got != want {
				t.Errorf("operator pod %s process %d: %s = %q, want %q", p.Name, pid, field, got, want)
			}
		}
		root := filepath.Join("/proc", strconv.Itoa(pid), "root")
		if err := os.WriteFile(filepath.Join(root, "written-by-test"), nil, 0o644); err == nil || !errors.Is(err, syscall.EROFS) {
			t.Errorf("writing to operator pod %s's root file system: %v, want EROFS", p.Name, err)
		}
	}
}

// checkRestrictedEnforced checks namespace enforces Pod Security
// restricted: a pod that runs as root is refused there, so every pod that
// runs in it was admitted as restricted.
func checkRestrictedEnforced(t *testing.T, namespace string) {
	t.Helper()
	root := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: "runs-as-root"},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{
			Name: "c", Image: "gomomento/valkey-operator:latest",
			SecurityContext: &corev1.SecurityContext{RunAsUser: ptr.To[int64](0)},
		}}},
	}
	err := k8sClient.Create(context.Background(), root, client.DryRunAll)
	if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), "restricted") {
		t.Errorf("namespace %s admitted a pod running as root (%v): Pod Security restricted is not enforced there", namespace, err)
	}
}

// TestOperatorLeads checks one Ready replica of the Deployment holds the
// leader election Lease, and that it is the only one that does.
func TestOperatorLeads(t *testing.T) {
	ctx := context.Background()
	leader, err := chartinstall.Leader(ctx, clientset, operatorNamespace)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("operator pod %s holds the Lease", leader.Name)
	pods, err := chartinstall.OperatorPods(ctx, clientset, operatorNamespace)
	if err != nil {
		t.Fatal(err)
	}
	// The others wait for the Lease: they log that they try to acquire it
	// and never that they did.
	for _, p := range pods {
		if p.Name == leader.Name {
			continue
		}
		log := podLog(t, p.Name, chartContainer)
		lower := strings.ToLower(log)
		if !strings.Contains(lower, "attempting to acquire leader lease") {
			t.Errorf("operator pod %s, not the leader, never tried to acquire the Lease:\n%s", p.Name, log)
		}
		if strings.Contains(lower, "successfully acquired lease") {
			t.Errorf("operator pod %s acquired the Lease, which %s holds:\n%s", p.Name, leader.Name, log)
		}
	}
}

// TestOperatorMetricsHTTPS scrapes the leader's /metrics over HTTPS at its
// pod IP as Prometheus would: with the token of a ServiceAccount bound to
// the chart's metrics reader role it gets the controllers' metrics; without
// a token, or with one the role is not bound to, it is refused.
func TestOperatorMetricsHTTPS(t *testing.T) {
	ctx := context.Background()
	ns := "metrics-scrape"
	createNamespace(t, ns)
	t.Cleanup(func() {
		_ = k8sClient.Delete(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})
	})
	reader := serviceAccountToken(t, ns, "scraper")
	stranger := serviceAccountToken(t, ns, "stranger")
	binding := &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "metrics-scrape-test"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: chartMetricsReader},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: ns, Name: "scraper"}},
	}
	if err := k8sClient.Create(ctx, binding); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = k8sClient.Delete(context.Background(), binding) })

	leader, err := chartinstall.Leader(ctx, clientset, operatorNamespace)
	if err != nil {
		t.Fatal(err)
	}
	url := "https://" + net.JoinHostPort(leader.Status.PodIP, strconv.Itoa(chartMetricsPort)) + "/metrics"
	// The chart serves a self-signed certificate unless given one; the
	// check is that the endpoint speaks TLS at all and authorizes callers.
	hc := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}
	scrape := func(token string) (int, string, error) {
		req, err := http.NewRequest(http.MethodGet, url, nil)
		if err != nil {
			return 0, "", err
		}
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := hc.Do(req)
		if err != nil {
			return 0, "", err
		}
		defer resp.Body.Close()
		if resp.TLS == nil {
			return 0, "", errors.New("the answer did not come over TLS")
		}
		b, err := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b), err
	}
	// The binding takes a moment to reach the apiserver's authorizer.
	eventually(t, 30*time.Second, "the metrics reader's scrape", func() error {
		code, body, err := scrape(reader)
		if err != nil {
			return err
		}
		if code != http.StatusOK {
			return fmt.Errorf("status %d: %s", code, body)
		}
		if !strings.Contains(body, "controller_runtime_reconcile_total{") {
			return fmt.Errorf("no controller_runtime_reconcile_total in %d bytes of metrics", len(body))
		}
		return nil
	})
	for _, tc := range []struct {
		who, token string
		want       int
	}{
		{"no token", "", http.StatusUnauthorized},
		{"a ServiceAccount not bound to " + chartMetricsReader, stranger, http.StatusForbidden},
	} {
		code, body, err := scrape(tc.token)
		if err != nil || code != tc.want {
			t.Errorf("scrape with %s: status %d (%v), want %d: %s", tc.who, code, err, tc.want, body)
		}
	}
}

// serviceAccountToken creates a ServiceAccount and returns a token of it.
func serviceAccountToken(t *testing.T, ns, name string) string {
	t.Helper()
	ctx := context.Background()
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
	if err := k8sClient.Create(ctx, sa); err != nil {
		t.Fatal(err)
	}
	tr, err := clientset.CoreV1().ServiceAccounts(ns).CreateToken(ctx, name, &authenticationv1.TokenRequest{
		Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To[int64](3600)},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("a token of %s/%s: %v", ns, name, err)
	}
	return tr.Status.Token
}

// podLog is what kubectl logs prints of a container of an operator pod.
func podLog(t *testing.T, pod, container string) string {
	t.Helper()
	b, err := clientset.CoreV1().Pods(operatorNamespace).GetLogs(pod, &corev1.PodLogOptions{Container: container}).DoRaw(context.Background())
	if err != nil {
		t.Fatalf("logs of %s/%s: %v", pod, container, err)
	}
	return string(b)
}
