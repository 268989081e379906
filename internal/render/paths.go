package render

import "path"

// Mount paths inside a Valkey container. Every volume is mounted as a whole
// directory, never with subPath, so the kubelet's updates reach the files.
const (
	ConfigDir = "/etc/valkey/conf"
	ACLDir    = "/etc/valkey/acl"
	TLSDir    = "/etc/valkey/tls"
	AuthDir   = "/etc/valkey/auth"
	DataDir   = "/var/lib/valkey"
	// ExporterTLSDir holds only the CA, in the exporter's container: it
	// verifies the node and must not read the node's private key.
	ExporterTLSDir = "/etc/valkey/exporter-tls"
)

// Files inside those directories.
var (
	ConfigFile      = path.Join(ConfigDir, KeyValkeyConf)
	ACLFilePath     = path.Join(ACLDir, KeyACL)
	PrimaryAuthFile = path.Join(AuthDir, KeyPrimaryAuth)
	NodesConfFile   = path.Join(DataDir, "nodes.conf")
	TLSCertFile     = path.Join(TLSDir, keyTLSCert)
	TLSKeyFile      = path.Join(TLSDir, keyTLSKey)
	TLSCAFile       = path.Join(TLSDir, keyTLSCA)
	ExporterCAFile  = path.Join(ExporterTLSDir, keyTLSCA)
)

// Volume names in the pod spec.
const (
	volumeData   = "data"
	volumeConfig = "config"
	volumeACL    = "acl"
	volumeAuth   = "auth"
	volumeTLS    = "tls"
	// volumeExporterCA is the node's TLS Secret again, with only the CA.
	volumeExporterCA = "exporter-ca"
)
