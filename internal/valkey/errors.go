package valkey

import (
	"errors"
	"strings"

	"github.com/valkey-io/valkey-go"
)

// errNotSupported marks a command the node's Valkey version does not
// have, e.g. CLUSTER MIGRATESLOTS before 9.0.
var errNotSupported = errors.New("not supported by this Valkey version")

// IsNoPermission reports whether err is the node refusing a command the
// authenticated ACL user is not granted.
func IsNoPermission(err error) bool {
	return serverErrorHasPrefix(err, "NOPERM")
}

// IsServerError reports whether err is an error reply from the node: it
// answered, and refused, as opposed to a failure to get an answer.
func IsServerError(err error) bool {
	var ve *valkey.ValkeyError
	return errors.As(err, &ve)
}

func serverErrorHasPrefix(err error, prefix string) bool {
	var ve *valkey.ValkeyError
	return errors.As(err, &ve) && strings.HasPrefix(ve.Error(), prefix)
}

// isUnknownCommand recognises the replies for a command or subcommand the
// server does not implement.
func isUnknownCommand(err error) bool {
	return serverErrorContains(err, "unknown subcommand") || serverErrorContains(err, "unknown command")
}

// serverErrorContains reports whether err is an error reply from the
// server whose text contains s, ignoring case.
func serverErrorContains(err error, s string) bool {
	var ve *valkey.ValkeyError
	return errors.As(err, &ve) && strings.Contains(strings.ToLower(ve.Error()), strings.ToLower(s))
}
