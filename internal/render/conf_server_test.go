package render

import (
	"bufio"
	"crypto/tls"
	"crypto/x509"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gomomento/valkey-operator/api/v1alpha1"
	"github.com/gomomento/valkey-operator/internal/resolve"
	"github.com/gomomento/valkey-operator/internal/testcerts"
)

// TestValkeyConfStartsValkey runs a real server on a node's rendered files,
// laid out as the pod mounts them under a temporary root, with the pod's
// command-line flags. It proves every forced directive exists in the
// server, the include brings in the replication credentials, and in TLS mode
// the node serves its certificate under its announced name.
func TestValkeyConfStartsValkey(t *testing.T) {
	const adminPassword = "admin-secret"
	admin := resolve.User{
		Binding: v1alpha1.AclBinding{
			Username:       "admin",
			PasswordHashes: []v1alpha1.PasswordHash{v1alpha1.PasswordHash(passwordHash(adminPassword))},
			Permissions:    []v1alpha1.Permission{{RoleRef: "all", Keys: []v1alpha1.KeyPattern{{Pattern: "*"}}}},
		},
		Roles: []v1alpha1.ValkeyRoleSpec{{Categories: []v1alpha1.CategoryRule{{Name: "all", Access: v1alpha1.RuleAllow}}}},
	}
	ca := testcerts.NewCA("test-ca")
	leaf := testcerts.Leaf(ca, testClusterName, testNamespace, "cluster.local")

	for _, server := range valkeyServers(t) {
		for _, withTLS := range []bool{false, true} {
			name := server.name + "/plaintext"
			if withTLS {
				name = server.name + "/tls"
			}
			t.Run(name, func(t *testing.T) {
				c := testCluster(withTLS)
				node := testNode(c, 0)
				cm, err := c.NodeConfigMap(node)
				if err != nil {
					t.Fatal(err)
				}
				acl, err := ACLFile([]resolve.User{admin}, testPasswords, server.version, false)
				if err != nil {
					t.Fatal(err)
				}

				// The pod's filesystem, under root.
				root := t.TempDir()
				at := func(p string) string { return filepath.Join(root, p) }
				conf := strings.NewReplacer("/etc/valkey/", root+"/etc/valkey/", "/var/lib/valkey", root+"/var/lib/valkey").
					Replace(cm.Data[keyValkeyConf])
				files := map[string]string{
					configFile:      conf,
					aclFilePath:     acl,
					primaryAuthFile: PrimaryAuthConf(testPasswords.Replication),
				}
				if withTLS {
					files[TLSCertFile] = string(leaf.CertPEM)
					files[TLSKeyFile] = string(leaf.KeyPEM)
					files[TLSCAFile] = string(ca.CertPEM)
				}
				for p, content := range files {
					if err := os.MkdirAll(filepath.Dir(at(p)), 0o700); err != nil {
						t.Fatal(err)
					}
					writeFile(t, at(p), content)
				}
				if err := os.MkdirAll(at(dataDir), 0o700); err != nil {
					t.Fatal(err)
				}

				// The container's flags with the pod IP, then the test's ports.
				port, busPort := freePort(t), freePort(t)
				args := []string{at(configFile),
					"--bind", "127.0.0.1",
					"--cluster-announce-ip", "127.0.0.1",
					"--replica-announce-ip", "127.0.0.1",
					"--cluster-port", strconv.Itoa(busPort),
				}
				if withTLS {
					args = append(args, "--tls-port", strconv.Itoa(port))
				} else {
					args = append(args, "--port", strconv.Itoa(port))
				}
				addr := server.run(t, port, args...)

				cl := dial(t, addr)
				if withTLS {
					pool := x509.NewCertPool()
					pool.AddCert(ca.Cert)
					tc := tls.Client(cl.c, &tls.Config{RootCAs: pool, ServerName: PodFQDN(node.Name, testClusterName, testNamespace, "")})
					_ = tc.SetDeadline(time.Now().Add(5 * time.Second))
					if err := tc.Handshake(); err != nil {
						t.Fatalf("TLS handshake with the announced name: %v", err)
					}
					cl = &conn{c: tc, r: bufio.NewReader(tc)}
				}
				cl.must(t, "AUTH", OperatorUser, testPasswords.Operator)
				if info, _ := cl.must(t, "CLUSTER", "INFO").(string); !strings.Contains(info, "cluster_state:") {
					t.Fatalf("CLUSTER INFO = %q", info)
				}
				cl.must(t, "AUTH", "admin", adminPassword)
				want := map[string]string{
					"primaryuser":      ReplicationUser,
					"primaryauth":      testPasswords.Replication,
					"cluster-enabled":  "yes",
					"protected-mode":   "no",
					"maxmemory-policy": "allkeys-lru",
				}
				if withTLS {
					want["cluster-announce-hostname"] = PodFQDN(node.Name, testClusterName, testNamespace, "")
					want["cluster-preferred-endpoint-type"] = "hostname"
					want["tls-cluster"] = "yes"
					want["tls-auth-clients"] = "no"
					want["port"] = "0"
				}
				for key, value := range want {
					reply, _ := cl.must(t, "CONFIG", "GET", key).([]any)
					if len(reply) != 2 || reply[1] != value {
						t.Errorf("CONFIG GET %s = %v, want %q", key, reply, value)
					}
				}
			})
		}
	}
}
