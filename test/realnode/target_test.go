package realnode

import (
	"context"
	"fmt"
	"net"
	"net/url"
	"os"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gomomento/valkey-operator/internal/localkube"
	"github.com/gomomento/valkey-operator/internal/nodeimages"
	"github.com/gomomento/valkey-operator/internal/realnode"
	"github.com/gomomento/valkey-operator/internal/s3test"
	"github.com/gomomento/valkey-operator/internal/testregistry"
)

// The suite runs on one of two targets: the node TestMain started on this
// machine, or a cluster VALKEY_CONFORMANCE_KUBECONFIG names. This file
// owns what differs between them; every test runs on both, and only what
// a real cluster cannot show from outside (a container's processes, a
// volume's directory) is checked on the local node alone.

// The environment that completes a cluster of the user's
// (docs/install.md): the StorageClass of the persistent test's claims
// (default: the cluster's default class), the S3 the backup test writes
// to, which the operator's pod and the loaders must reach, the client
// pods' image, and a registry that serves only with credentials, which
// the pull-secret test pushes an image to and the nodes pull from.
const (
	envStorageClass     = "VALKEY_CONFORMANCE_STORAGE_CLASS"
	envS3Endpoint       = "VALKEY_CONFORMANCE_S3_ENDPOINT"
	envS3AccessKey      = "VALKEY_CONFORMANCE_S3_ACCESS_KEY"
	envS3SecretKey      = "VALKEY_CONFORMANCE_S3_SECRET_KEY"
	envS3Bucket         = "VALKEY_CONFORMANCE_S3_BUCKET"
	envClientImage      = "VALKEY_CONFORMANCE_CLIENT_IMAGE"
	envRegistry         = "VALKEY_CONFORMANCE_REGISTRY"
	envRegistryUser     = "VALKEY_CONFORMANCE_REGISTRY_USER"
	envRegistryPassword = "VALKEY_CONFORMANCE_REGISTRY_PASSWORD"
)

// nodeIsLocal says whether the pods run on the node TestMain started on
// this machine, whose containers' processes and volumes' directories the
// tests can read.
func nodeIsLocal() bool { return node != nil }

// clientImage is the image the TLS tests' client pods run the page's
// commands from (valkey-cli, openssl, a shell, sleep), and how the kubelet
// gets it: imported into the local node, never pulled; on a cluster of
// the user's, VALKEY_CONFORMANCE_CLIENT_IMAGE or the same image loaded
// onto its nodes (build-images -client writes it).
func clientImage() (string, corev1.PullPolicy) {
	if nodeIsLocal() {
		return nodeimages.Client().Name, corev1.PullNever
	}
	if img := os.Getenv(envClientImage); img != "" {
		return img, corev1.PullIfNotPresent
	}
	return nodeimages.Client().Name, corev1.PullIfNotPresent
}

// storageClass is the class the persistent nodes' claims are checked to
// get, and whether the tests must name it in the ValkeyConfig (a class
// VALKEY_CONFORMANCE_STORAGE_CLASS chose) rather than leave the default.
func storageClass(t testing.TB) (name string, explicit bool) {
	t.Helper()
	if nodeIsLocal() {
		return localkube.StorageClassName, false
	}
	if c := os.Getenv(envStorageClass); c != "" {
		return c, true
	}
	var classes storagev1.StorageClassList
	if err := k8sClient.List(context.Background(), &classes); err != nil {
		t.Fatalf("listing StorageClasses: %v", err)
	}
	for _, c := range classes.Items {
		if c.Annotations["storageclass.kubernetes.io/is-default-class"] == "true" {
			return c.Name, false
		}
	}
	t.Fatalf("the cluster has no default StorageClass: set %s to the class the persistent tests' claims use", envStorageClass)
	return "", false
}

var (
	resolverOnce sync.Once
	resolver     *net.Resolver
	resolverErr  error
)

// clusterResolver answers the cluster's DNS names as the pods' resolver
// does: the local node's CoreDNS, or on a cluster of the user's the
// kube-dns Service's endpoints, CoreDNS's pod IPs, which the suite reaches
// as it reaches every pod.
func clusterResolver(t testing.TB) *net.Resolver {
	t.Helper()
	resolverOnce.Do(func() {
		if nodeIsLocal() {
			resolver = node.Resolver()
			return
		}
		var addr string
		addr, resolverErr = kubeDNSEndpoint(context.Background())
		if resolverErr == nil {
			resolver = &net.Resolver{PreferGo: true, Dial: func(ctx context.Context, network, _ string) (net.Conn, error) {
				var d net.Dialer
				return d.DialContext(ctx, network, addr)
			}}
		}
	})
	if resolverErr != nil {
		t.Fatal(resolverErr)
	}
	return resolver
}

// kubeDNSEndpoint is a ready address and the DNS port of the kube-system
// kube-dns Service, the name every distribution gives the cluster's DNS.
func kubeDNSEndpoint(ctx context.Context) (string, error) {
	slices, err := clientset.DiscoveryV1().EndpointSlices("kube-system").List(ctx, metav1.ListOptions{
		LabelSelector: discoveryv1.LabelServiceName + "=kube-dns",
	})
	if err != nil {
		return "", fmt.Errorf("the endpoints of kube-system/kube-dns: %w", err)
	}
	for _, s := range slices.Items {
		port := int32(realnode.DNSPort)
		for _, p := range s.Ports {
			if p.Port != nil && p.Protocol != nil && *p.Protocol == corev1.ProtocolUDP {
				port = *p.Port
			}
		}
		for _, e := range s.Endpoints {
			if e.Conditions.Ready != nil && !*e.Conditions.Ready || len(e.Addresses) == 0 {
				continue
			}
			return net.JoinHostPort(e.Addresses[0], strconv.Itoa(int(port))), nil
		}
	}
	return "", fmt.Errorf("kube-system/kube-dns has no ready endpoint: the suite resolves the cluster's names from it")
}

// privateRegistry is a registry that refuses pulls without credentials:
// on the local node, a fresh one on this machine's loopback, which the
// node's containerd is told to pull from over plain HTTP; on a cluster of
// the user's, the one the environment names.
func privateRegistry(t testing.TB) *testregistry.Registry {
	t.Helper()
	if nodeIsLocal() {
		reg := testregistry.Start(t)
		if err := node.UsePlainHTTPRegistry(reg.Host); err != nil {
			t.Fatal(err)
		}
		return reg
	}
	host, user, password := os.Getenv(envRegistry), os.Getenv(envRegistryUser), os.Getenv(envRegistryPassword)
	if host == "" || user == "" || password == "" {
		t.Fatalf("on a cluster of yours the pull-secret test needs a registry that refuses anonymous pulls, which this machine pushes to and the nodes pull from: set %s (host[:port][/path]), %s and %s",
			envRegistry, envRegistryUser, envRegistryPassword)
	}
	return &testregistry.Registry{Host: host, User: user, Password: password}
}

// objectStore is the S3 the backup test writes to and reads back from.
type objectStore struct {
	Endpoint  string
	Host      string
	Secure    bool
	AccessKey string
	SecretKey string
	Bucket    string
}

// backupStore is a fresh versitygw on the local node's address, which the
// operator and the loaders reach, or on a cluster of the user's the S3 the
// environment names; its bucket exists.
func backupStore(t testing.TB) *objectStore {
	t.Helper()
	if nodeIsLocal() {
		s := s3test.Start(t, s3test.ListenOn(node.IP.String()))
		store := &objectStore{Endpoint: s.Endpoint, Host: s.Host, AccessKey: s.AccessKey, SecretKey: s.SecretKey, Bucket: backupBucket}
		store.makeBucket(t)
		return store
	}
	endpoint, access, secret := os.Getenv(envS3Endpoint), os.Getenv(envS3AccessKey), os.Getenv(envS3SecretKey)
	if endpoint == "" || access == "" || secret == "" {
		t.Fatalf("on a cluster of yours the backup test needs an S3 the operator's pod reaches: set %s (http://host:port or https://host:port), %s and %s (and %s, default %s)",
			envS3Endpoint, envS3AccessKey, envS3SecretKey, envS3Bucket, backupBucket)
	}
	u, err := url.Parse(endpoint)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		t.Fatalf("%s=%q: want http://host:port or https://host:port (%v)", envS3Endpoint, endpoint, err)
	}
	store := &objectStore{Endpoint: u.Scheme + "://" + u.Host, Host: u.Host, Secure: u.Scheme == "https",
		AccessKey: access, SecretKey: secret, Bucket: backupBucket}
	if b := os.Getenv(envS3Bucket); b != "" {
		store.Bucket = b
	}
	store.makeBucket(t)
	return store
}

// Client is a client of the store with the test's credentials.
func (s *objectStore) Client(t testing.TB) *minio.Client {
	t.Helper()
	c, err := minio.New(s.Host, &minio.Options{Creds: credentials.NewStaticV4(s.AccessKey, s.SecretKey, ""), Secure: s.Secure})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// makeBucket creates the store's bucket unless it exists.
func (s *objectStore) makeBucket(t testing.TB) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c := s.Client(t)
	exists, err := c.BucketExists(ctx, s.Bucket)
	if err != nil {
		t.Fatalf("S3 %s: bucket %s: %v", s.Endpoint, s.Bucket, err)
	}
	if exists {
		return
	}
	if err := c.MakeBucket(ctx, s.Bucket, minio.MakeBucketOptions{}); err != nil {
		t.Fatalf("S3 %s: creating bucket %s: %v", s.Endpoint, s.Bucket, err)
	}
}
