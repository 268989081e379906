package controller_test

import (
	"context"
	"crypto/tls"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/gomomento/valkey-operator/internal/controller"
)

// The operator's /metrics, as it ships (secure), answers over HTTPS and
// only a caller whose token the apiserver authenticates and who may get
// /metrics: a ServiceAccount bound to config/rbac's metrics reader role.
// The operator asks the apiserver with nothing but its generated role.
func TestMetricsServedOnlyToAuthorizedCallers(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	addr := freeAddr(t)
	mgr, err := ctrl.NewManager(operatorConfig, ctrl.Options{
		Scheme:                 env.Scheme,
		Metrics:                controller.MetricsServer(addr, true, ""),
		HealthProbeBindAddress: "0",
	})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { defer close(done); _ = mgr.Start(ctx) }()
	defer func() { cancel(); <-done }()

	ns := namespace(t, "metrics-auth")
	reader := metricsReader(t, ns)
	stranger := serviceAccountToken(t, ns, "stranger")

	https := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{
		// A self-signed certificate; what is tested is who gets an answer.
		TLSClientConfig: &tls.Config{InsecureSkipVerify: true},
	}}
	get := func(scheme, token string) (int, string, error) {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, scheme+"://"+addr+"/metrics", nil)
		if err != nil {
			return 0, "", err
		}
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := https.Do(req)
		if err != nil {
			return 0, "", err
		}
		defer resp.Body.Close()
		body, err := io.ReadAll(resp.Body)
		return resp.StatusCode, string(body), err
	}
	eventually(t, 30*time.Second, "the metrics endpoint", func() error {
		_, _, err := get("https", "")
		return err
	})
	for _, tc := range []struct {
		name, token string
		want        int
	}{
		{"no token", "", http.StatusUnauthorized},
		{"a token the apiserver does not know", "not-a-token", refused},
		{"a ServiceAccount without the role", stranger, http.StatusForbidden},
		{"the metrics reader", reader, http.StatusOK},
	} {
		code, body, err := get("https", tc.token)
		if tc.want == refused && err == nil && code != http.StatusOK {
			continue
		}
		if err != nil || code != tc.want {
			t.Errorf("%s: %d, %v; want %d\n%.300s", tc.name, code, err, tc.want, body)
		}
		if tc.want == http.StatusOK && !strings.Contains(body, "\nrest_client_requests_total{") {
			t.Errorf("%s: the page lacks the operator's metrics:\n%.300s", tc.name, body)
		}
	}
	if code, body, err := get("http", reader); err == nil && code == http.StatusOK {
		t.Errorf("plain HTTP was answered:\n%.300s", body)
	}
}

// metricsReader creates a ServiceAccount bound to config/rbac's metrics
// reader ClusterRole and returns a token of it.
// refused is any answer but 200: the filter answers 401 or, when the
// apiserver cannot review the token at all, 500.
const refused = -1

func metricsReader(t *testing.T, ns string) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("..", "..", "config", "rbac", "metrics_reader_role.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var role rbacv1.ClusterRole
	if err := yaml.Unmarshal(data, &role); err != nil {
		t.Fatal(err)
	}
	binding := &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: ns + "-reader"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role.Name},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: "reader", Namespace: ns}},
	}
	for _, o := range []client.Object{&role, binding} {
		if err := k8sClient.Create(context.Background(), o); err != nil {
			t.Fatal(err)
		}
	}
	return serviceAccountToken(t, ns, "reader")
}

// serviceAccountToken creates a ServiceAccount and returns a bound token
// of it, as a pod would get.
func serviceAccountToken(t *testing.T, ns, name string) string {
	t.Helper()
	ctx := context.Background()
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
	if err := k8sClient.Create(ctx, sa); err != nil {
		t.Fatal(err)
	}
	tr := &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To[int64](600)}}
	if err := k8sClient.SubResource("token").Create(ctx, sa, tr); err != nil {
		t.Fatalf("requesting a token of %s: %v", name, err)
	}
	return tr.Status.Token
}

func freeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}
