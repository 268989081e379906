package backup

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	valkeyv1 "github.com/gomomento/valkey-operator/api/v1alpha1"
	"github.com/gomomento/valkey-operator/internal/tlssecret"
)

// Keys of the Secret spec.destination.credentialsSecretRef names.
const (
	backupKeyAccessKeyID     = "accessKeyID"
	backupKeySecretAccessKey = "secretAccessKey"
)

// backupPartSize is the part each shard's stream buffers before sending
// it, so memory per shard stays bounded whatever the RDB's size (up to
// 10,000 parts: 156 GiB a shard).
const backupPartSize = 16 << 20

// destinationError is a destination the backup cannot write to: wrong or
// missing Secrets, credentials the store refuses, a bucket that does not
// exist, an endpoint that does not answer.
type destinationError struct{ err error }

func (e destinationError) Error() string { return e.err.Error() }
func (e destinationError) Unwrap() error { return e.err }

// backupStore opens a client of a destination's bucket, its Secrets in
// namespace, and checks that the bucket exists and the credentials may
// read it; the Secrets are read around the cache, which holds only the
// operator's own.
func backupStore(ctx context.Context, c client.Reader, namespace string, d valkeyv1.BackupDestination) (*minio.Client, error) {
	var creds corev1.Secret
	if err := c.Get(ctx, client.ObjectKey{Namespace: namespace, Name: d.CredentialsSecretRef}, &creds); err != nil {
		return nil, destinationError{fmt.Errorf("reading credentials Secret %s: %w", d.CredentialsSecretRef, err)}
	}
	id, secret := string(creds.Data[backupKeyAccessKeyID]), string(creds.Data[backupKeySecretAccessKey])
	if id == "" || secret == "" {
		return nil, destinationError{fmt.Errorf("credentials Secret %s needs the keys %s and %s", d.CredentialsSecretRef, backupKeyAccessKeyID, backupKeySecretAccessKey)}
	}
	u, err := url.Parse(d.Endpoint)
	if err != nil || u.Host == "" {
		return nil, destinationError{fmt.Errorf("endpoint %q is not a URL", d.Endpoint)}
	}
	secure := u.Scheme == "https"
	if !secure && !d.Insecure {
		return nil, destinationError{fmt.Errorf("endpoint %s is http: set insecure: true to send credentials and data in clear text", d.Endpoint)}
	}
	transport, err := minio.DefaultTransport(secure)
	if err != nil {
		return nil, fmt.Errorf("building the store's transport: %w", err)
	}
	transport.ResponseHeaderTimeout = time.Minute
	if d.CASecretRef != "" {
		var ca corev1.Secret
		if err := c.Get(ctx, client.ObjectKey{Namespace: namespace, Name: d.CASecretRef}, &ca); err != nil {
			return nil, destinationError{fmt.Errorf("reading CA Secret %s: %w", d.CASecretRef, err)}
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(ca.Data[tlssecret.KeyCA]) {
			return nil, destinationError{fmt.Errorf("CA Secret %s: %s holds no PEM certificate", d.CASecretRef, tlssecret.KeyCA)}
		}
		transport.TLSClientConfig = &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
	}
	mc, err := minio.New(u.Host, &minio.Options{
		Creds:     credentials.NewStaticV4(id, secret, ""),
		Secure:    secure,
		Transport: transport,
		Region:    d.Region,
		// A refused or unreachable store fails the backup at once rather
		// than after minutes of retries.
		MaxRetries: 2,
	})
	if err != nil {
		return nil, destinationError{fmt.Errorf("endpoint %s: %w", d.Endpoint, err)}
	}
	exists, err := mc.BucketExists(ctx, d.Bucket)
	if err != nil {
		return nil, destinationError{fmt.Errorf("checking bucket %s at %s: %s", d.Bucket, d.Endpoint, describeStoreError(err))}
	}
	if !exists {
		return nil, destinationError{fmt.Errorf("bucket %s does not exist at %s", d.Bucket, d.Endpoint)}
	}
	return mc, nil
}

// describeStoreError is the store's own code and message when it sent
// one: "InvalidAccessKeyId: The access key ID you provided does not
// exist" says more than the HTTP status.
func describeStoreError(err error) string {
	r := minio.ToErrorResponse(err)
	if r.Code == "" {
		return err.Error()
	}
	msg := strings.TrimSpace(r.Message)
	if msg == "" {
		msg = http.StatusText(r.StatusCode)
	}
	return r.Code + ": " + msg
}
