package e2e

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// The operator binary as the image runs it serves /metrics over HTTPS,
// and only to a caller whose token the apiserver authorizes to get it.
// Not parallel: it stops the operator every other test relies on.
func TestOperatorMetricsSecureByDefault(t *testing.T) {
	bin := buildOperatorBinary(t)
	stopOperator()
	t.Cleanup(func() {
		var err error
		if stopOperator, err = startOperator(context.Background()); err != nil {
			t.Fatalf("restarting the suite's operator: %v", err)
		}
	})
	const ns = "operator-metrics"
	createNamespace(t, ns)
	ctx := context.Background()
	reader := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "prometheus"}}
	binding := &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "operator-metrics-reader"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "valkey-operator-metrics-reader"},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: reader.Name, Namespace: ns}},
	}
	role := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "valkey-operator-metrics-reader"},
		Rules: []rbacv1.PolicyRule{{NonResourceURLs: []string{"/metrics"}, Verbs: []string{"get"}}}}
	for _, o := range []client.Object{reader, role, binding} {
		if err := k8sClient.Create(ctx, o); err != nil {
			t.Fatal(err)
		}
	}
	tr := &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To[int64](600)}}
	if err := k8sClient.SubResource("token").Create(ctx, reader, tr); err != nil {
		t.Fatal(err)
	}

	addr := freeAddr(t)
	logPath := filepath.Join(t.TempDir(), "operator.log")
	logFile, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	// Only the address differs from the Deployment: the port is free here.
	p := &operatorProcess{name: "secure-metrics", log: logPath}
	p.cmd = exec.Command(bin, "--metrics-bind-address", addr, "--health-probe-bind-address", freeAddr(t))
	p.cmd.Env = append(os.Environ(), "KUBECONFIG="+local.Kubeconfig)
	p.cmd.Stdout, p.cmd.Stderr = logFile, logFile
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		p.stop(t)
		logFile.Close()
		if t.Failed() {
			if b, err := os.ReadFile(logPath); err == nil {
				t.Logf("operator log:\n%s", tail(b, 8000))
			}
		}
	})

	httpc := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{
		// Self-signed, as shipped without --metrics-cert-dir.
		TLSClientConfig: &tls.Config{InsecureSkipVerify: true},
	}}
	get := func(url, token string) (int, string, error) {
		req, err := http.NewRequest(http.MethodGet, url, nil)
		if err != nil {
			return 0, "", err
		}
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := httpc.Do(req)
		if err != nil {
			return 0, "", err
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b), err
	}
	url := "https://" + addr + "/metrics"
	eventually(t, time.Minute, "the operator's HTTPS metrics endpoint", func() error {
		_, _, err := get(url, "")
		return err
	})
	if code, _, err := get(url, ""); err != nil || code != http.StatusUnauthorized {
		t.Errorf("without a token: %d, %v; want 401", code, err)
	}
	// The reconcile counters appear once the controllers have started,
	// which may come after the endpoint answers.
	eventually(t, time.Minute, "the operator's metrics, with the reader's token", func() error {
		code, body, err := get(url, tr.Status.Token)
		if err != nil || code != http.StatusOK || !strings.Contains(body, "controller_runtime_reconcile_total") {
			return fmt.Errorf("%d, %v; want 200 with the operator's metrics\n%.300s", code, err, body)
		}
		return nil
	})
	if code, _, err := get("http://"+addr+"/metrics", tr.Status.Token); err == nil && code == http.StatusOK {
		t.Errorf("plain HTTP was answered")
	}
}
