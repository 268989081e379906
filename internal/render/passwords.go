package render

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"regexp"

	corev1 "k8s.io/api/core/v1"
)

// passwordBytes of randomness, hex-encoded to 128 characters.
const passwordBytes = 64

var passwordPattern = regexp.MustCompile(`^[0-9a-f]{128}$`)

// Passwords of the system users. They are generated once, when the
// cluster's auth Secret is first created, and never rotated; the exporter's
// is added to the Secret of a cluster created before it existed.
type Passwords struct {
	Operator    string
	Replication string
	// Exporter is empty when read from a Secret that predates it.
	Exporter string
}

// NewPasswords draws every password from random (crypto/rand in the
// operator, a fixed stream in tests).
func NewPasswords(random io.Reader) (Passwords, error) {
	var p Passwords
	for _, dst := range []*string{&p.Operator, &p.Replication, &p.Exporter} {
		var err error
		if *dst, err = NewPassword(random); err != nil {
			return Passwords{}, err
		}
	}
	return p, nil
}

// NewPassword draws one system user password from random.
func NewPassword(random io.Reader) (string, error) {
	b := make([]byte, passwordBytes)
	if _, err := io.ReadFull(random, b); err != nil {
		return "", fmt.Errorf("draw system user password: %w", err)
	}
	return hex.EncodeToString(b), nil
}

// PasswordsFromSecret reads the passwords back from the auth Secret. The
// error names the key, never its content. A password must be 128 lowercase
// hex characters: it is written into a config line and must not carry
// anything else. The exporter's may be missing (Passwords.Exporter).
func PasswordsFromSecret(s *corev1.Secret) (Passwords, error) {
	var p Passwords
	for _, f := range []struct {
		key      string
		dst      *string
		optional bool
	}{{KeyOperatorPassword, &p.Operator, false}, {KeyReplicationPassword, &p.Replication, false}, {KeyExporterPassword, &p.Exporter, true}} {
		key, dst := f.key, f.dst
		v, ok := s.Data[key]
		if !ok && f.optional {
			continue
		}
		if !ok {
			return Passwords{}, fmt.Errorf("secret %s/%s: missing key %q", s.Namespace, s.Name, key)
		}
		if !passwordPattern.Match(v) {
			return Passwords{}, fmt.Errorf("secret %s/%s: key %q is not 128 lowercase hex characters", s.Namespace, s.Name, key)
		}
		*dst = string(v)
	}
	return p, nil
}

// passwordHash is the SHA-256 digest Valkey's ACL "#<hash>" expects.
func passwordHash(password string) string {
	sum := sha256.Sum256([]byte(password))
	return hex.EncodeToString(sum[:])
}
