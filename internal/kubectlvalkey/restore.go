package kubectlvalkey

import (
	"context"
	"fmt"
	"io"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	valkeyv1 "github.com/gomomento/valkey-operator/api/v1alpha1"
)

// defaultRestoreReplicas is the replica count of a restored cluster whose
// backup's source cluster is gone: one replica, so a node's loss does not
// lose the restored keys.
const defaultRestoreReplicas = 1

// restoreRequest is a parsed restore command line; a nil field was not
// given and comes from the backup's source cluster.
type restoreRequest struct {
	backup    string
	into      string
	config    *string
	shards    *int32
	replicas  *int32
	tlsSecret *string
	wait      bool
	timeout   time.Duration
}

func runRestore(ctx context.Context, args []string, env Env) error {
	req, common, err := parseRestore(args, env)
	if err != nil {
		return err
	}
	conn, err := connect(common)
	if err != nil {
		return err
	}
	return restore(ctx, conn.client, conn.namespace, req, env)
}

func parseRestore(args []string, env Env) (restoreRequest, commonFlags, error) {
	var (
		common    commonFlags
		req       restoreRequest
		config    string
		tlsSecret string
		shards    int32
		replicas  int32
	)
	fs := newFlagSet("restore", "restore BACKUP --into NEW_CLUSTER [flags]", env)
	common.bind(fs)
	fs.StringVar(&req.into, "into", "", "Name of the new ValkeyCluster to create and fill (required; it must not exist).")
	fs.StringVar(&config, "config", "", "ValkeyConfig of the new cluster (default: the source cluster's).")
	fs.Int32Var(&shards, "shards", 0, "Shard count of the new cluster (default: the source cluster's, else the backup's).")
	fs.Int32Var(&replicas, "replicas", 0, fmt.Sprintf("Replicas per shard (default: the source cluster's, else %d).", defaultRestoreReplicas))
	fs.StringVar(&tlsSecret, "tls-secret", "", "TLS Secret of the new cluster (default: the source cluster's, if it has TLS).")
	fs.BoolVar(&req.wait, "wait", false, "Wait until the restore is Completed or Failed.")
	fs.DurationVar(&req.timeout, "timeout", defaultWaitTimeout, "Bound on --wait.")
	name, err := parseNamed(fs, args, "BACKUP")
	if err != nil {
		return req, common, err
	}
	req.backup = name
	if req.into == "" {
		return req, common, usageErrorf("restore: --into NEW_CLUSTER required")
	}
	if fs.Changed("config") {
		if config == "" {
			return req, common, usageErrorf("restore: --config must not be empty")
		}
		req.config = &config
	}
	if fs.Changed("shards") {
		if shards < 1 {
			return req, common, usageErrorf("restore: --shards must be at least 1, got %d", shards)
		}
		req.shards = &shards
	}
	if fs.Changed("replicas") {
		if replicas < 0 {
			return req, common, usageErrorf("restore: --replicas must not be negative, got %d", replicas)
		}
		req.replicas = &replicas
	}
	if fs.Changed("tls-secret") {
		if tlsSecret == "" {
			return req, common, usageErrorf("restore: --tls-secret must not be empty")
		}
		req.tlsSecret = &tlsSecret
	}
	if err := timeoutNeedsWait(fs, req.wait, req.timeout); err != nil {
		return req, common, err
	}
	return req, common, nil
}

// restore creates a new ValkeyCluster filled from a Completed backup, and
// with req.wait follows the restore to its end.
func restore(ctx context.Context, c client.Client, namespace string, req restoreRequest, env Env) error {
	var b valkeyv1.ValkeyBackup
	bkey := client.ObjectKey{Namespace: namespace, Name: req.backup}
	if err := c.Get(ctx, bkey, &b); err != nil {
		if apierrors.IsNotFound(err) {
			return fmt.Errorf("ValkeyBackup %s not found", bkey)
		}
		return fmt.Errorf("reading ValkeyBackup %s: %w", bkey, err)
	}
	if b.Status.Phase != valkeyv1.BackupCompleted {
		return fmt.Errorf("ValkeyBackup %s is not Completed (%s): only a Completed backup can be restored", bkey, phaseText(string(b.Status.Phase), b.Status.Message))
	}
	tkey := client.ObjectKey{Namespace: namespace, Name: req.into}
	var existing valkeyv1.ValkeyCluster
	switch err := c.Get(ctx, tkey, &existing); {
	case err == nil:
		return fmt.Errorf("ValkeyCluster %s already exists: a restore fills a new cluster; name another with --into", tkey)
	case !apierrors.IsNotFound(err):
		return fmt.Errorf("reading ValkeyCluster %s: %w", tkey, err)
	}
	var source *valkeyv1.ValkeyCluster
	skey := client.ObjectKey{Namespace: namespace, Name: b.Spec.Cluster}
	var vc valkeyv1.ValkeyCluster
	switch err := c.Get(ctx, skey, &vc); {
	case err == nil:
		source = &vc
	case !apierrors.IsNotFound(err):
		return fmt.Errorf("reading ValkeyCluster %s, the backup's source: %w", skey, err)
	}
	spec, err := restoredSpec(req, &b, source)
	if err != nil {
		return err
	}
	target := &valkeyv1.ValkeyCluster{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: req.into},
		Spec:       spec,
	}
	if err := c.Create(ctx, target); err != nil {
		return fmt.Errorf("creating ValkeyCluster %s: %w", tkey, err)
	}
	writeRestoreCreated(env.Stdout, target, &b, source, req.tlsSecret == nil)
	if !req.wait {
		return nil
	}
	return waitRestore(ctx, c, tkey, req.timeout, env)
}

// restoredSpec is the new cluster's spec: the flags given, else the
// source cluster's values, else what the backup says.
func restoredSpec(req restoreRequest, b *valkeyv1.ValkeyBackup, source *valkeyv1.ValkeyCluster) (valkeyv1.ValkeyClusterSpec, error) {
	spec := valkeyv1.ValkeyClusterSpec{
		Shards:           int32(len(b.Status.Shards)),
		ReplicasPerShard: defaultRestoreReplicas,
		Restore:          &valkeyv1.ClusterRestore{BackupName: b.Name},
	}
	if source != nil {
		spec.ConfigRef = source.Spec.ConfigRef
		spec.Shards = source.Spec.Shards
		spec.ReplicasPerShard = source.Spec.ReplicasPerShard
		if source.Spec.TLS != nil {
			spec.TLS = &valkeyv1.TLSSpec{SecretRef: source.Spec.TLS.SecretRef}
		}
	}
	if req.config != nil {
		spec.ConfigRef = *req.config
	}
	if req.shards != nil {
		spec.Shards = *req.shards
	}
	if req.replicas != nil {
		spec.ReplicasPerShard = *req.replicas
	}
	if req.tlsSecret != nil {
		spec.TLS = &valkeyv1.TLSSpec{SecretRef: *req.tlsSecret}
	}
	if spec.ConfigRef == "" {
		return spec, usageErrorf("restore: --config CONFIG required: the backup's source cluster %s no longer exists to take it from", b.Spec.Cluster)
	}
	if spec.Shards < 1 {
		return spec, usageErrorf("restore: --shards N required: ValkeyBackup %s lists no shards", b.Name)
	}
	return spec, nil
}

// writeRestoreCreated says what was created and where its values came
// from; sourceTLS is whether the TLS Secret is the source cluster's.
func writeRestoreCreated(w io.Writer, vc *valkeyv1.ValkeyCluster, b *valkeyv1.ValkeyBackup, source *valkeyv1.ValkeyCluster, sourceTLS bool) {
	from := fmt.Sprintf("source cluster %s no longer exists", b.Spec.Cluster)
	if source != nil {
		from = "defaults from source cluster " + source.Name
	}
	tls := "none"
	if vc.Spec.TLS != nil {
		tls = "Secret " + vc.Spec.TLS.SecretRef
	}
	fmt.Fprintf(w, "ValkeyCluster %s/%s created from ValkeyBackup %s (%s)\n", vc.Namespace, vc.Name, b.Name, from)
	fmt.Fprintf(w, "  config %s, shards %d, replicasPerShard %d, TLS %s\n",
		vc.Spec.ConfigRef, vc.Spec.Shards, vc.Spec.ReplicasPerShard, tls)
	fmt.Fprintf(w, "  backup %s: %s\n", orDash(b.Status.Path), shardCount(len(b.Status.Shards)))
	if sourceTLS && vc.Spec.TLS != nil {
		// A certificate names the cluster it serves: the source's Secret
		// serves the copy only if it was issued for both.
		fmt.Fprintf(w, "  note: Secret %s is %s's; unless its certificate also names %s.%s.svc.%s and *.%s.%s.svc.%s, the cluster stays not Ready (MissingSAN): pass --tls-secret\n",
			vc.Spec.TLS.SecretRef, source.Name, vc.Name, vc.Namespace, defaultClusterDomain, vc.Name, vc.Namespace, defaultClusterDomain)
	}
}

// waitRestore polls the cluster until its restore is Completed or Failed.
func waitRestore(ctx context.Context, c client.Reader, key client.ObjectKey, timeout time.Duration, env Env) error {
	var (
		vc       valkeyv1.ValkeyCluster
		progress phaseChange
	)
	what := "the restore of ValkeyCluster " + key.String()
	err := waitFor(ctx, env.pollInterval(), timeout, what, func() string { return progress.last },
		func(ctx context.Context) (bool, error) {
			if err := c.Get(ctx, key, &vc); err != nil {
				return false, fmt.Errorf("reading ValkeyCluster %s: %w", key, err)
			}
			r := vc.Status.Restore
			if r == nil {
				r = &valkeyv1.RestoreStatus{}
			}
			if t, ok := progress.changed(string(r.Phase), r.Message); ok {
				fmt.Fprintf(env.Stdout, "  %s\n", t)
			}
			return r.Phase == valkeyv1.RestoreCompleted || r.Phase == valkeyv1.RestoreFailed, nil
		})
	if err != nil {
		return err
	}
	r := vc.Status.Restore
	if r.Phase == valkeyv1.RestoreFailed {
		return fmt.Errorf("restore of ValkeyCluster %s Failed: %s", key, oneLine(r.Message))
	}
	fmt.Fprintf(env.Stdout, "Restore Completed: %d keys, %d/%d shards\n", r.Keys, r.ShardsDone, r.ShardsTotal)
	return nil
}
