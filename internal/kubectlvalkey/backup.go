package kubectlvalkey

import (
	"context"
	"fmt"
	"io"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	valkeyv1 "github.com/gomomento/valkey-operator/api/v1alpha1"
)

// backupNameTime is the UTC timestamp of a default backup name, lower case
// because object names must be.
const backupNameTime = "20060102t150405z"

// backupRequest is a parsed backup command line.
type backupRequest struct {
	cluster     string
	name        string // empty: <cluster>-<time>
	destination valkeyv1.BackupDestination
	wait        bool
	timeout     time.Duration
}

func runBackup(ctx context.Context, args []string, env Env) error {
	req, common, err := parseBackup(args, env)
	if err != nil {
		return err
	}
	conn, err := connect(common)
	if err != nil {
		return err
	}
	return backup(ctx, conn.client, conn.namespace, req, env)
}

func parseBackup(args []string, env Env) (backupRequest, commonFlags, error) {
	var (
		common commonFlags
		req    backupRequest
		d      = &req.destination
	)
	fs := newFlagSet("backup", "backup CLUSTER --bucket BUCKET --endpoint URL --credentials SECRET [flags]", env)
	common.bind(fs)
	fs.StringVar(&d.Bucket, "bucket", "", "Existing bucket to write the backup to (required).")
	fs.StringVar(&d.Endpoint, "endpoint", "", "URL of the S3-compatible store, scheme and host, e.g. https://s3.eu-west-1.amazonaws.com (required).")
	fs.StringVar(&d.CredentialsSecretRef, "credentials", "", "Secret in the namespace with accessKeyID and secretAccessKey (required).")
	fs.StringVar(&d.Prefix, "prefix", "", "Prefix of every object written, without a leading or trailing /.")
	fs.BoolVar(&d.Insecure, "insecure", false, "Allow an http:// endpoint: credentials and data travel in clear text.")
	fs.StringVar(&d.Region, "region", "", "Region sent with signed requests (default: found by the client).")
	fs.StringVar(&d.CASecretRef, "ca-secret", "", "Secret whose ca.crt verifies the endpoint instead of the system roots.")
	fs.StringVar(&req.name, "name", "", "Name of the ValkeyBackup (default: CLUSTER-<UTC time>, e.g. cache-20261205t041500z).")
	fs.BoolVar(&req.wait, "wait", false, "Wait until the backup is Completed or Failed and print what it holds.")
	fs.DurationVar(&req.timeout, "timeout", defaultWaitTimeout, "Bound on --wait.")
	cluster, err := parse(fs, args)
	if err != nil {
		return req, common, err
	}
	req.cluster = cluster
	var missing []string
	for _, f := range []struct{ flag, value string }{
		{"--bucket", d.Bucket}, {"--endpoint", d.Endpoint}, {"--credentials", d.CredentialsSecretRef},
	} {
		if f.value == "" {
			missing = append(missing, f.flag)
		}
	}
	if len(missing) > 0 {
		return req, common, usageErrorf("backup: %s required", strings.Join(missing, ", "))
	}
	switch {
	case !strings.HasPrefix(d.Endpoint, "https://") && !strings.HasPrefix(d.Endpoint, "http://"):
		return req, common, usageErrorf("backup: --endpoint %q must start with https:// (or http:// with --insecure)", d.Endpoint)
	case strings.HasPrefix(d.Endpoint, "http://") && !d.Insecure:
		return req, common, usageErrorf("backup: --endpoint %q is plain http: add --insecure to send credentials and data in clear text, or use https://", d.Endpoint)
	case strings.HasPrefix(d.Prefix, "/") || strings.HasSuffix(d.Prefix, "/"):
		return req, common, usageErrorf("backup: --prefix %q must not start or end with /", d.Prefix)
	}
	if err := timeoutNeedsWait(fs, req.wait, req.timeout); err != nil {
		return req, common, err
	}
	return req, common, nil
}

// timeoutNeedsWait refuses a --timeout that would bound nothing.
func timeoutNeedsWait(fs interface{ Changed(string) bool }, wait bool, timeout time.Duration) error {
	if fs.Changed("timeout") && !wait {
		return usageErrorf("--timeout bounds --wait: add --wait")
	}
	if timeout <= 0 {
		return usageErrorf("--timeout must be positive, got %s", timeout)
	}
	return nil
}

// backup creates the ValkeyBackup, and with req.wait follows it to its end.
func backup(ctx context.Context, c client.Client, namespace string, req backupRequest, env Env) error {
	var vc valkeyv1.ValkeyCluster
	ckey := client.ObjectKey{Namespace: namespace, Name: req.cluster}
	if err := c.Get(ctx, ckey, &vc); err != nil {
		if apierrors.IsNotFound(err) {
			return fmt.Errorf("ValkeyCluster %s not found: no backup created", ckey)
		}
		return fmt.Errorf("reading ValkeyCluster %s: %w", ckey, err)
	}
	name := req.name
	if name == "" {
		name = req.cluster + "-" + env.now().UTC().Format(backupNameTime)
	}
	b := &valkeyv1.ValkeyBackup{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name},
		Spec:       valkeyv1.ValkeyBackupSpec{Cluster: req.cluster, Destination: req.destination},
	}
	if err := c.Create(ctx, b); err != nil {
		return fmt.Errorf("creating ValkeyBackup %s/%s: %w", namespace, name, err)
	}
	d := req.destination
	fmt.Fprintf(env.Stdout, "ValkeyBackup %s/%s created: cluster %s to bucket %s at %s%s\n",
		namespace, name, req.cluster, d.Bucket, d.Endpoint, prefixText(d.Prefix))
	if !req.wait {
		return nil
	}
	return waitBackup(ctx, c, client.ObjectKeyFromObject(b), req.timeout, env)
}

func prefixText(prefix string) string {
	if prefix == "" {
		return ""
	}
	return ", prefix " + prefix
}

// waitBackup polls the backup until it is Completed or Failed.
func waitBackup(ctx context.Context, c client.Reader, key client.ObjectKey, timeout time.Duration, env Env) error {
	var (
		b        valkeyv1.ValkeyBackup
		progress phaseChange
	)
	what := "ValkeyBackup " + key.String()
	err := waitFor(ctx, env.pollInterval(), timeout, what, func() string { return progress.last },
		func(ctx context.Context) (bool, error) {
			if err := c.Get(ctx, key, &b); err != nil {
				return false, fmt.Errorf("reading %s: %w", what, err)
			}
			if t, ok := progress.changed(string(b.Status.Phase), b.Status.Message); ok {
				fmt.Fprintf(env.Stdout, "  %s\n", t)
			}
			return b.Status.Phase == valkeyv1.BackupCompleted || b.Status.Phase == valkeyv1.BackupFailed, nil
		})
	if err != nil {
		return err
	}
	if b.Status.Phase == valkeyv1.BackupFailed {
		return fmt.Errorf("%s Failed: %s", what, oneLine(b.Status.Message))
	}
	return writeBackupResult(env.Stdout, &b)
}

// writeBackupResult prints where a Completed backup is and what it holds.
func writeBackupResult(w io.Writer, b *valkeyv1.ValkeyBackup) error {
	fmt.Fprintf(w, "Path: %s\n", orDash(b.Status.Path))
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "SHARD\tNODE\tKEYS\tBYTES")
	shards := append([]valkeyv1.BackupShard(nil), b.Status.Shards...)
	sort.Slice(shards, func(i, j int) bool { return shards[i].Index < shards[j].Index })
	var keys, bytes int64
	for _, s := range shards {
		fmt.Fprintf(tw, "%d\t%s\t%d\t%d\n", s.Index, orDash(s.Node), s.Keys, s.Bytes)
		keys += s.Keys
		bytes += s.Bytes
	}
	if b.Status.Bytes != 0 {
		// The operator's own sum, should a shard omit its size.
		bytes = b.Status.Bytes
	}
	fmt.Fprintf(tw, "total\t%s\t%d\t%d\n", shardCount(len(shards)), keys, bytes)
	return tw.Flush()
}

func shardCount(n int) string {
	if n == 1 {
		return "1 shard"
	}
	return fmt.Sprintf("%d shards", n)
}
