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

// Passwords of the system users. They are generated when the cluster's
// auth Secret is first created; the exporter's is added to the Secret of a
// cluster created before it existed. The operator's and the replication
// user's rotate in two steps, each node accepting both passwords meanwhile:
// the next ones are drawn and accepted everywhere before anyone uses them,
// then they become current and the previous ones are accepted until every
// node replicates with the new one.
type Passwords struct {
	Operator    string
	Replication string
	// Exporter is empty when read from a Secret that predates it.
	Exporter string
	// NextOperator and NextReplication are set while a rotation waits for
	// every node to accept them.
	NextOperator    string
	NextReplication string
	// PreviousOperator and PreviousReplication are set after the switch
	// until every node replicates with the current password.
	PreviousOperator    string
	PreviousReplication string
}

// operatorAccepted are every password the operator's user is accepted with.
func (p Passwords) operatorAccepted() []string {
	return nonEmpty(p.Operator, p.NextOperator, p.PreviousOperator)
}

func (p Passwords) replicationAccepted() []string {
	return nonEmpty(p.Replication, p.NextReplication, p.PreviousReplication)
}

func nonEmpty(ss ...string) []string {
	var out []string
	for _, s := range ss {
		if s != "" {
			out = append(out, s)
		}
	}
	return out
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
// anything else. The exporter's may be missing (Passwords.Exporter), and
// the rotation's come in pairs or not at all.
func PasswordsFromSecret(s *corev1.Secret) (Passwords, error) {
	var p Passwords
	for _, f := range []struct {
		key      string
		dst      *string
		optional bool
	}{
		{KeyOperatorPassword, &p.Operator, false},
		{keyReplicationPassword, &p.Replication, false},
		{KeyExporterPassword, &p.Exporter, true},
		{keyNextOperatorPassword, &p.NextOperator, true},
		{keyNextReplicationPassword, &p.NextReplication, true},
		{keyPreviousOperatorPassword, &p.PreviousOperator, true},
		{keyPreviousReplicationPassword, &p.PreviousReplication, true},
	} {
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
	switch {
	case (p.NextOperator == "") != (p.NextReplication == ""):
		return Passwords{}, fmt.Errorf("secret %s/%s: keys %q and %q must be set together", s.Namespace, s.Name, keyNextOperatorPassword, keyNextReplicationPassword)
	case (p.PreviousOperator == "") != (p.PreviousReplication == ""):
		return Passwords{}, fmt.Errorf("secret %s/%s: keys %q and %q must be set together", s.Namespace, s.Name, keyPreviousOperatorPassword, keyPreviousReplicationPassword)
	case p.NextOperator != "" && p.PreviousOperator != "":
		return Passwords{}, fmt.Errorf("secret %s/%s: a rotation cannot have both next and previous passwords", s.Namespace, s.Name)
	}
	return p, nil
}

// passwordHash is the SHA-256 digest Valkey's ACL "#<hash>" expects.
func passwordHash(password string) string {
	sum := sha256.Sum256([]byte(password))
	return hex.EncodeToString(sum[:])
}
