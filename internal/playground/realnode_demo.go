package playground

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/go-logr/logr/funcr"
	corev1 "k8s.io/api/core/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gomomento/valkey-operator/internal/controller"
	"github.com/gomomento/valkey-operator/internal/realcluster"
	"github.com/gomomento/valkey-operator/internal/render"
	"github.com/gomomento/valkey-operator/internal/testbin"
)

// RealNodeTry is what the real-node demo prints to try, and what its test
// runs the same way.
type RealNodeTry struct {
	// Kubeconfig is the path of the cluster's admin kubeconfig.
	Kubeconfig string
	// Pod is one of the sample's Valkey pods, Container its Valkey
	// container.
	Pod, Container string
	// Exec is the TLS page's PING, run inside that container against the
	// Service's name, verifying the certificate with the CA mounted there.
	Exec []string
}

// realNodeDemo is Demo on a real node: the cluster of internal/realcluster,
// the operator by its chart, the sample TLS cluster; it prints kubectl
// commands that show the pods as containers and runs until ctx ends.
func realNodeDemo(ctx context.Context, opts DemoOptions) (err error) {
	out := opts.Out
	if os.Geteuid() != 0 {
		return errors.New("--real-node runs containerd and a kubelet, which need root")
	}
	root, err := testbin.RepoRoot()
	if err != nil {
		return err
	}
	dir, err := filepath.Abs(opts.Dir)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	nodeDir := opts.NodeDir
	if nodeDir == "" {
		if nodeDir, err = os.MkdirTemp("", "rn-demo-"); err != nil {
			return err
		}
		defer os.RemoveAll(nodeDir)
	}
	logFile, err := os.Create(filepath.Join(dir, "realnode.log"))
	if err != nil {
		return err
	}
	defer logFile.Close()
	ctrl.SetLogger(funcr.New(func(prefix, args string) {
		fmt.Fprintf(logFile, "%s %s %s\n", time.Now().Format("15:04:05.000"), prefix, args)
	}, funcr.Options{}))

	start := time.Now()
	fmt.Fprintln(out, "starting the control plane, a real node (containerd, runc, kubelet, CoreDNS, kube-proxy), its images and the operator's chart")
	c, err := realcluster.Start(ctx, realcluster.Options{
		Dir:  nodeDir,
		Root: root,
		Logf: func(format string, args ...any) {
			fmt.Fprintf(out, "  %5.1fs "+format+"\n", append([]any{time.Since(start).Seconds()}, args...)...)
		},
		Warn:    func(err error) { fmt.Fprintln(out, "  ", err) },
		HelmLog: logFile,
		Log:     ctrl.Log,
	})
	defer func() {
		fmt.Fprintln(out, "uninstalling the operator, stopping the node and the control plane")
		c.Stop()
	}()
	if err != nil {
		return err
	}

	sample, err := installSample(ctx, out, c.Client, filepath.Join(root, "config", "samples"), dir, controller.DefaultOptions().ClusterDomain)
	if err != nil {
		return err
	}
	pod, err := valkeyPod(ctx, c.Client)
	if err != nil {
		return err
	}
	try := &RealNodeTry{
		Kubeconfig: c.Kubeconfig,
		Pod:        pod,
		Container:  render.ContainerValkey,
		Exec:       []string{"valkey-cli", "-h", sample.Service, "--tls", "--cacert", render.TLSCAFile, "-p", "6379", "PING"},
	}
	printRealNodeTry(out, time.Since(start), try)
	if opts.Ready != nil {
		sample.RealNode = try
		if err := opts.Ready(ctx, sample); err != nil {
			return err
		}
	}
	<-ctx.Done()
	return nil
}

// valkeyPod names the sample's first Valkey pod.
func valkeyPod(ctx context.Context, c client.Client) (string, error) {
	var pods corev1.PodList
	if err := c.List(ctx, &pods, client.InNamespace(Namespace)); err != nil {
		return "", fmt.Errorf("listing the pods of %s: %w", Namespace, err)
	}
	var names []string
	for _, p := range pods.Items {
		if slices.ContainsFunc(p.Spec.Containers, func(c corev1.Container) bool { return c.Name == render.ContainerValkey }) {
			names = append(names, p.Name)
		}
	}
	if len(names) == 0 {
		return "", fmt.Errorf("no Valkey pod in %s", Namespace)
	}
	slices.Sort(names)
	return names[0], nil
}

func printRealNodeTry(out io.Writer, took time.Duration, try *RealNodeTry) {
	kubectl := "kubectl --kubeconfig " + try.Kubeconfig
	fmt.Fprintf(out, "\nready after %s. The pods are containers under a real kubelet; try:\n\n", took.Round(time.Second))
	fmt.Fprintf(out, "  %s get valkeyclusters,valkeynodes -A\n", kubectl)
	fmt.Fprintf(out, "  %s get pods -n %s -o wide\n", kubectl, Namespace)
	fmt.Fprintf(out, "  %s logs -n %s %s -c %s\n", kubectl, Namespace, try.Pod, try.Container)
	fmt.Fprintf(out, "  %s exec -n %s %s -c %s -- %s\n", kubectl, Namespace, try.Pod, try.Container, strings.Join(try.Exec, " "))
	fmt.Fprintln(out, "\nPress Ctrl-C to stop.")
}
