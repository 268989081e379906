package render

import "path"

// Mount paths inside a Valkey container. Every volume is mounted as a whole
// directory, never with subPath, so the kubelet's updates reach the files.
const (
	configDir = "/etc/valkey/conf"
	aclDir    = "/etc/valkey/acl"
	tlsDir    = "/etc/valkey/tls"
	authDir   = "/etc/valkey/auth"
	dataDir   = "/var/lib/valkey"
	// exporterTLSDir holds only the CA, in the exporter's container: it
	// verifies the node and must not read the node's private key.
	exporterTLSDir = "/etc/valkey/exporter-tls"
)

// Files inside those directories.
var (
	configFile      = path.Join(configDir, keyValkeyConf)
	aclFilePath     = path.Join(aclDir, KeyACL)
	primaryAuthFile = path.Join(authDir, KeyPrimaryAuth)
	nodesConfFile   = path.Join(dataDir, "nodes.conf")
	TLSCertFile     = path.Join(tlsDir, keyTLSCert)
	TLSKeyFile      = path.Join(tlsDir, keyTLSKey)
	TLSCAFile       = path.Join(tlsDir, keyTLSCA)
	exporterCAFile  = path.Join(exporterTLSDir, keyTLSCA)
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
