package render

import (
	"encoding/hex"
	"fmt"
	"io"
	"strconv"

	"github.com/gomomento/valkey-operator/internal/dnsname"
)

// Object names and data keys: the one place that spells them.

// serviceName is the headless Service, and the pods' DNS subdomain.
// It is the cluster's name, which dnsname relies on to spell the DNS names
// under it without a lookup.
func serviceName(cluster string) string { return cluster }

// OperatorAuthSecretName holds the system users' passwords.
func OperatorAuthSecretName(cluster string) string { return cluster + "-operator-auth" }

// OperatorAuthRestoreSecretName keeps the passwords while a deleted
// {cluster}-operator-auth Secret is recreated.
func OperatorAuthRestoreSecretName(cluster string) string { return cluster + "-operator-auth-restore" }

// ACLSecretName holds the rendered ACL file. The documented operator uses a
// ConfigMap {cluster}-acl; a Secret is used because the file holds password
// hashes, which tenants with ConfigMap read access must not see.
func ACLSecretName(cluster string) string { return cluster + "-acl" }

// NodeTLSSecretName is the operator's copy of the user's TLS Secret that pods
// mount. It is not {cluster}-tls: the documented example cluster my-cluster
// keeps its own certificate in a Secret literally named my-cluster-tls.
func NodeTLSSecretName(cluster string) string { return cluster + "-node-tls" }

// networkPolicyName admits connections to the cluster's pods.
func networkPolicyName(cluster string) string { return cluster + "-ingress" }

// NodeConfigMapName holds one node's valkey.conf.
func NodeConfigMapName(node string) string { return node + "-config" }

// NodeClaimName is the PersistentVolumeClaim of a persistent node's data.
func NodeClaimName(node string) string { return node + "-data" }

// PodDisruptionBudgetName guards one shard.
func PodDisruptionBudgetName(cluster string, shard int32) string {
	return cluster + "-shard-" + strconv.Itoa(int(shard))
}

// Data keys.
const (
	// KeyOperatorPassword authenticates the operator's system user.
	KeyOperatorPassword = "operator-password"
	// keyReplicationPassword authenticates replicas to their primary.
	keyReplicationPassword = "repl-password"
	// KeyExporterPassword authenticates the metrics exporter.
	KeyExporterPassword = "exporter-password"
	// A credentials rotation's passwords: the next ones before the switch,
	// the previous ones after it (Passwords).
	keyNextOperatorPassword        = "next-operator-password"
	keyNextReplicationPassword     = "next-repl-password"
	keyPreviousOperatorPassword    = "previous-operator-password"
	keyPreviousReplicationPassword = "previous-repl-password"
	// KeyPrimaryAuth is the config fragment carrying the replication
	// password, included by valkey.conf so the password stays in a Secret.
	KeyPrimaryAuth = "primaryauth.conf"
	// KeyACL is the rendered ACL file.
	KeyACL = "users.acl"
	// keyValkeyConf is a node's configuration file.
	keyValkeyConf = "valkey.conf"
)

// nodeSuffixLen is the number of hex characters after "{cluster}-".
const nodeSuffixLen = 5

// NewNodeName draws a node name {cluster}-{5 lowercase hex} from random. The
// caller retries on a collision with an existing node.
func NewNodeName(cluster string, random io.Reader) (string, error) {
	b := make([]byte, (nodeSuffixLen+1)/2)
	if _, err := io.ReadFull(random, b); err != nil {
		return "", fmt.Errorf("draw node name suffix: %w", err)
	}
	return cluster + "-" + hex.EncodeToString(b)[:nodeSuffixLen], nil
}

// PodFQDN is the DNS name a node announces in TLS mode and the operator
// verifies the node's certificate against.
func PodFQDN(pod, cluster, namespace, clusterDomain string) string {
	return dnsname.Pod(pod, cluster, namespace, clusterDomain)
}
