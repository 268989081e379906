package v1alpha1

import (
	"errors"
	"regexp"
	"strings"
	"unicode/utf8"
)

// The text of bindings and roles is written verbatim into the ACL file.
// These are the CEL rules of those fields again, for the renderer: an
// object stored before a rule existed, or built without the apiserver,
// must not produce a file that Valkey refuses (or, for an unterminated
// selector, crashes on) or that the operator cannot read back.

var (
	aclNameRE      = regexp.MustCompile(`^[a-zA-Z][a-zA-Z0-9_-]*$`)
	usernameRE     = regexp.MustCompile(`^[a-zA-Z0-9_-]+$`)
	passwordHashRE = regexp.MustCompile(`^[0-9a-f]{64}$`)
	unsafeGlobRE   = regexp.MustCompile(`[\p{Cc}\p{Z}"']`)
	errGlobEmpty   = errors.New("must not be empty")
	errGlobUnsafe  = errors.New("must not contain control characters, whitespace or quotes")
	// Valkey ends a selector at the first word ending in ')', and the
	// operator reads ACL LIST the same way.
	errGlobParen = errors.New("must not end with ')', which would end an ACL selector early; write a final ')' as [)]")
)

// SystemUserPrefix starts the names of the operator's own users.
const SystemUserPrefix = "_momento_"

// CheckGlob checks a key or channel pattern as admission does.
func CheckGlob(p string) error {
	switch {
	case p == "":
		return errGlobEmpty
	case !utf8.ValidString(p) || unsafeGlobRE.MatchString(p):
		return errGlobUnsafe
	case strings.HasSuffix(p, ")"):
		return errGlobParen
	}
	return nil
}

// CheckACLName checks a category, command or subcommand name as admission
// does.
func CheckACLName(n string) error {
	if n == "" {
		return errors.New("must not be empty")
	}
	if !aclNameRE.MatchString(n) {
		return errors.New("must match " + aclNameRE.String())
	}
	return nil
}

// CheckUsername checks a binding's username as admission does.
func CheckUsername(n string) error {
	if !usernameRE.MatchString(n) {
		return errors.New("must match " + usernameRE.String())
	}
	if strings.HasPrefix(n, SystemUserPrefix) {
		return errors.New("prefix " + SystemUserPrefix + " is reserved for system users")
	}
	return nil
}

// CheckPasswordHash checks a password hash as admission does.
func CheckPasswordHash(h PasswordHash) error {
	if !passwordHashRE.MatchString(string(h)) {
		return errors.New("must be 64 lowercase hex characters (a SHA-256 digest without the '#' prefix)")
	}
	return nil
}
