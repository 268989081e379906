// Package chartinstall installs charts/valkey-operator into a cluster the
// way `helm install` does, through Helm's own library, and waits until the
// operator it runs is ready and one of its replicas leads. The real-node
// suite installs the operator with it, on its own node or on a cluster a
// kubeconfig names.
package chartinstall

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"time"

	"helm.sh/helm/v4/pkg/action"
	"helm.sh/helm/v4/pkg/chart/v2/loader"
	"helm.sh/helm/v4/pkg/kube"
	"k8s.io/cli-runtime/pkg/genericclioptions"
)

// Options say which chart goes where, with which values.
type Options struct {
	// Kubeconfig is the path of the kubeconfig of the cluster; Context
	// picks one of its contexts (empty: its current context).
	Kubeconfig, Context string
	// ChartDir is charts/valkey-operator.
	ChartDir string
	// Namespace is the release namespace, created when missing.
	Namespace string
	// Release is the release name (default valkey-operator).
	Release string
	// Values are layered over the chart's values.yaml, as --set-file or
	// -f would.
	Values map[string]any
	// Timeout bounds the install's wait for its objects to be ready
	// (default 5 minutes).
	Timeout time.Duration
	// Log receives Helm's log (default: discarded).
	Log io.Writer
}

func (o Options) release() string {
	if o.Release == "" {
		return "valkey-operator"
	}
	return o.Release
}

func (o Options) timeout() time.Duration {
	if o.Timeout == 0 {
		return 5 * time.Minute
	}
	return o.Timeout
}

func (o Options) configuration() (*action.Configuration, error) {
	w := o.Log
	if w == nil {
		w = io.Discard
	}
	cfg := action.NewConfiguration(action.ConfigurationSetLogger(slog.NewTextHandler(w, &slog.HandlerOptions{Level: slog.LevelDebug})))
	flags := genericclioptions.NewConfigFlags(true)
	flags.KubeConfig = &o.Kubeconfig
	flags.Namespace = &o.Namespace
	if o.Context != "" {
		flags.Context = &o.Context
	}
	// Releases are stored as Secrets in the release namespace, as helm's
	// default driver keeps them, so `helm list` shows this one.
	if err := cfg.Init(flags, o.Namespace, "secret"); err != nil {
		return nil, fmt.Errorf("helm configuration for %s: %w", o.Kubeconfig, err)
	}
	return cfg, nil
}

// Install installs the chart, CRDs (its crds/) included, and waits until
// every object it made is ready: the Deployment's replicas available.
func Install(ctx context.Context, o Options) error {
	ch, err := loader.Load(o.ChartDir)
	if err != nil {
		return fmt.Errorf("loading the chart %s: %w", o.ChartDir, err)
	}
	cfg, err := o.configuration()
	if err != nil {
		return err
	}
	in := action.NewInstall(cfg)
	in.ReleaseName = o.release()
	in.Namespace = o.Namespace
	in.CreateNamespace = true
	in.WaitStrategy = kube.StatusWatcherStrategy
	in.Timeout = o.timeout()
	if _, err := in.RunWithContext(ctx, ch, o.Values); err != nil {
		return fmt.Errorf("helm install %s %s -n %s: %w", in.ReleaseName, o.ChartDir, o.Namespace, err)
	}
	return nil
}

// Uninstall removes the release and waits until its objects are gone.
// Helm never deletes the CRDs a chart's crds/ installed, nor the
// namespace: they stay, as after `helm uninstall`.
func Uninstall(o Options) error {
	cfg, err := o.configuration()
	if err != nil {
		return err
	}
	un := action.NewUninstall(cfg)
	un.WaitStrategy = kube.StatusWatcherStrategy
	un.Timeout = o.timeout()
	un.IgnoreNotFound = true
	if _, err := un.Run(o.release()); err != nil {
		return fmt.Errorf("helm uninstall %s -n %s: %w", o.release(), o.Namespace, err)
	}
	return nil
}

// ImageValues are the chart values that run image (repository:tag) with
// pullPolicy.
func ImageValues(image, pullPolicy string) (map[string]any, error) {
	// The chart joins repository and tag with a colon: a digest has no
	// place in it.
	if strings.Contains(image, "@") {
		return nil, fmt.Errorf("image %q: the chart takes a tag, not a digest", image)
	}
	i := strings.LastIndex(image, ":")
	if i < 0 || strings.Contains(image[i:], "/") {
		return nil, fmt.Errorf("image %q names no tag", image)
	}
	return map[string]any{"image": map[string]any{
		"repository": image[:i], "tag": image[i+1:], "pullPolicy": pullPolicy,
	}}, nil
}
