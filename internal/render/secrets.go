package render

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"

	"github.com/gomomento/valkey-operator/api/v1alpha1"
	"github.com/gomomento/valkey-operator/internal/resolve"
	"github.com/gomomento/valkey-operator/internal/tlssecret"
)

// OperatorAuthSecret holds the system users' passwords, plus the config
// fragment that hands the replication password to Valkey. The documented
// operator writes primaryauth into every node's ConfigMap; here it stays in
// this Secret, so ConfigMap read access reveals no credential.
func (c Cluster) OperatorAuthSecret(p Passwords) *corev1.Secret {
	meta := c.clusterMeta(OperatorAuthSecretName(c.Cluster.Name))
	meta.Finalizers = []string{v1alpha1.FinalizerCredentials}
	return &corev1.Secret{
		ObjectMeta: meta,
		Type:       corev1.SecretTypeOpaque,
		Data:       OperatorAuthData(p),
	}
}

// OperatorAuthData is the content of {cluster}-operator-auth for p.
func OperatorAuthData(p Passwords) map[string][]byte {
	data := map[string][]byte{
		KeyOperatorPassword:    []byte(p.Operator),
		keyReplicationPassword: []byte(p.Replication),
		KeyExporterPassword:    []byte(p.Exporter),
		KeyPrimaryAuth:         []byte(PrimaryAuthConf(p.Replication)),
	}
	for k, v := range map[string]string{
		keyNextOperatorPassword:        p.NextOperator,
		keyNextReplicationPassword:     p.NextReplication,
		keyPreviousOperatorPassword:    p.PreviousOperator,
		keyPreviousReplicationPassword: p.PreviousReplication,
	} {
		if v != "" {
			data[k] = []byte(v)
		}
	}
	return data
}

// OperatorAuthRestoreSecret carries the passwords of a deleted
// {cluster}-operator-auth Secret until it is recreated.
func (c Cluster) OperatorAuthRestoreSecret(p Passwords) *corev1.Secret {
	s := c.OperatorAuthSecret(p)
	s.ObjectMeta = c.clusterMeta(OperatorAuthRestoreSecretName(c.Cluster.Name))
	return s
}

// ACLSecret holds the rendered ACL file every pod mounts; see ACLFile for
// valkeyVersion and exporter.
func (c Cluster) ACLSecret(users []resolve.User, p Passwords, valkeyVersion string, exporter bool) (*corev1.Secret, error) {
	file, err := ACLFile(users, p, valkeyVersion, exporter)
	if err != nil {
		return nil, fmt.Errorf("render ACL file of cluster %s/%s: %w", c.Cluster.Namespace, c.Cluster.Name, err)
	}
	return &corev1.Secret{
		ObjectMeta: c.clusterMeta(ACLSecretName(c.Cluster.Name)),
		Type:       corev1.SecretTypeOpaque,
		Data:       map[string][]byte{KeyACL: []byte(file)},
	}, nil
}

// Keys of the TLS material, as the user's Secret and the copy name them.
const (
	keyTLSCert = tlssecret.KeyCert
	keyTLSKey  = tlssecret.KeyPrivateKey
	keyTLSCA   = tlssecret.KeyCA
)

// NodeTLSSecret is the copy of the user's (already validated) TLS Secret
// that pods mount. Pods never mount the user's Secret directly: a rename of
// spec.tls.secretRef then needs no pod change, and material that failed
// validation never reaches a node because the copy is only refreshed from a
// valid Secret.
func (c Cluster) NodeTLSSecret(source *corev1.Secret) *corev1.Secret {
	data := map[string][]byte{}
	for _, k := range []string{keyTLSCert, keyTLSKey, keyTLSCA} {
		data[k] = source.Data[k]
	}
	return &corev1.Secret{
		ObjectMeta: c.clusterMeta(NodeTLSSecretName(c.Cluster.Name)),
		Type:       corev1.SecretTypeTLS,
		Data:       data,
	}
}
