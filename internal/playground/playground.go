// Package playground installs the sample TLS cluster into a control plane
// and waits for it: the last step of `valkey-local demo`, also run by the
// end-to-end tests so the demo keeps working.
package playground

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/controller-runtime/pkg/client"

	valkeyv1 "github.com/gomomento/valkey-operator/api/v1alpha1"
	"github.com/gomomento/valkey-operator/internal/dnsname"
)

// The sample cluster of config/samples: the TLS page's example.
const (
	Namespace  = "my-app"
	Cluster    = "my-cluster"
	secretName = "my-cluster-tls"
)

// sampleFiles are applied in this order from the samples directory.
var sampleFiles = []string{"valkeyimage.yaml", "valkeyconfig.yaml", "valkeycluster.yaml"}

// Sample is what a newcomer needs to reach the installed cluster.
type Sample struct {
	// CAFile holds the CA that signed the cluster's certificate.
	CAFile string
	// Service is the name clients use as a seed.
	Service string
	// RealNode is what the real-node demo printed to try; nil otherwise.
	RealNode *RealNodeTry
}

// Command is the TLS page's verification command for this sample.
func (s *Sample) Command() string {
	return fmt.Sprintf("valkey-cli -h %s --tls --cacert %s -p 6379 PING", s.Service, s.CAFile)
}

// Install issues the cluster's certificate into its Secret (as cert-manager
// would), writes the CA to outDir/ca.crt and applies the sample manifests.
func Install(ctx context.Context, c client.Client, samplesDir, outDir, clusterDomain string) (*Sample, error) {
	for i, f := range sampleFiles {
		if err := applyFile(ctx, c, filepath.Join(samplesDir, f)); err != nil {
			return nil, err
		}
		if i == 1 {
			// The namespace comes with the cluster manifest; the Secret must
			// exist before the cluster so it is valid from the start.
			if err := ensureNamespace(ctx, c, Namespace); err != nil {
				return nil, err
			}
			if err := installSecret(ctx, c, outDir, clusterDomain); err != nil {
				return nil, err
			}
		}
	}
	return &Sample{
		CAFile:  filepath.Join(outDir, "ca.crt"),
		Service: dnsname.Service(Cluster, Namespace, clusterDomain),
	}, nil
}

func installSecret(ctx context.Context, c client.Client, outDir, domain string) error {
	certs, err := issue(Cluster, Namespace, domain)
	if err != nil {
		return err
	}
	secret := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: Namespace, Name: secretName},
		Type:       corev1.SecretTypeTLS,
		Data: map[string][]byte{
			corev1.TLSCertKey:       certs.certPEM,
			corev1.TLSPrivateKeyKey: certs.keyPEM,
			"ca.crt":                certs.caPEM,
		},
	}
	if err := c.Create(ctx, secret); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("creating Secret %s: %w", secretName, err)
	}
	if apierrors.IsAlreadyExists(err) {
		var existing corev1.Secret
		if err := c.Get(ctx, client.ObjectKeyFromObject(secret), &existing); err != nil {
			return err
		}
		certs.caPEM = existing.Data["ca.crt"]
	}
	if err := os.MkdirAll(outDir, 0o755); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(outDir, "ca.crt"), certs.caPEM, 0o644)
}

func ensureNamespace(ctx context.Context, c client.Client, name string) error {
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}
	if err := c.Create(ctx, ns); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("creating namespace %s: %w", name, err)
	}
	return nil
}

// applyFile creates every document of a manifest file, keeping existing objects.
func applyFile(ctx context.Context, c client.Client, path string) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("reading sample %s: %w", path, err)
	}
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
	for {
		obj := &unstructured.Unstructured{}
		if err := dec.Decode(&obj.Object); err != nil {
			if errors.Is(err, io.EOF) {
				return nil
			}
			return fmt.Errorf("parsing %s: %w", path, err)
		}
		if len(obj.Object) == 0 {
			continue
		}
		if err := c.Create(ctx, obj); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("applying %s %s from %s: %w", obj.GetKind(), obj.GetName(), filepath.Base(path), err)
		}
	}
}

// waitActive polls the sample cluster until it is Active, reporting each
// change of its state to progress.
func waitActive(ctx context.Context, c client.Client, progress func(state, message string)) error {
	key := client.ObjectKey{Namespace: Namespace, Name: Cluster}
	last := ""
	tick := time.NewTicker(500 * time.Millisecond)
	defer tick.Stop()
	for {
		var vc valkeyv1.ValkeyCluster
		if err := c.Get(ctx, key, &vc); err == nil {
			now := string(vc.Status.State) + " " + vc.Status.Message
			if now != last && progress != nil && vc.Status.State != "" {
				progress(string(vc.Status.State), vc.Status.Message)
				last = now
			}
			if vc.Status.State == valkeyv1.StateActive {
				return nil
			}
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("waiting for %s/%s to become Active: %w", Namespace, Cluster, ctx.Err())
		case <-tick.C:
		}
	}
}
