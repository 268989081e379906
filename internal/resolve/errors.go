package resolve

import (
	"errors"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
)

// Reasons of a failed resolution, for status conditions and Events.
const (
	ReasonConfigChainTooDeep = "ConfigChainTooDeep"
	ReasonConfigNotFound     = "ConfigNotFound"
	ReasonNoImageRef         = "NoImageRef"
	ReasonImageNotFound      = "ImageNotFound"
	ReasonDuplicateUsername  = "DuplicateUsername"
	ReasonRoleNotFound       = "RoleNotFound"
	// ReasonUnrenderableACL: a binding or role holds text the ACL file
	// cannot carry (see User.Check).
	ReasonUnrenderableACL = "UnrenderableACL"
)

// errNotFound is what a lookup returns (or wraps) for a missing object. A
// Kubernetes NotFound API error is recognised as well, so a lookup backed by
// a client may return the client's error unchanged.
var errNotFound = errors.New("not found")

func isNotFound(err error) bool {
	return errors.Is(err, errNotFound) || apierrors.IsNotFound(err)
}

// Error is a resolution failure caused by the menu objects themselves (as
// opposed to a failed lookup). Message is the documented log line, verbatim.
type Error struct {
	Reason  string
	Message string

	// Chain holds the config names visited, child to root, including a
	// missing one, and Image the ValkeyImage name when one was reached: the
	// objects whose creation or change may fix the failure.
	Chain []string
	Image string
}

func (e *Error) Error() string { return e.Message }

func chainTooDeep(chain []string) *Error {
	return &Error{
		Reason:  ReasonConfigChainTooDeep,
		Message: fmt.Sprintf("config inheritance depth exceeds %d (cycle?)", maxChainDepth),
		Chain:   chain,
	}
}

func configNotFound(name string, chain []string) *Error {
	return &Error{
		Reason:  ReasonConfigNotFound,
		Message: fmt.Sprintf("ValkeyConfig %q not found", name),
		Chain:   chain,
	}
}

func noImageRef(name string, chain []string) *Error {
	return &Error{
		Reason:  ReasonNoImageRef,
		Message: fmt.Sprintf("no image_ref in config chain ending at %q", name),
		Chain:   chain,
	}
}

func imageNotFound(image string, chain []string) *Error {
	return &Error{
		Reason:  ReasonImageNotFound,
		Message: fmt.Sprintf("ValkeyImage %q not found", image),
		Chain:   chain,
		Image:   image,
	}
}

func duplicateUsername(username string) *Error {
	return &Error{
		Reason:  ReasonDuplicateUsername,
		Message: fmt.Sprintf("duplicate username %q in merged ACL bindings", username),
	}
}

func roleNotFound(role, username string) *Error {
	return &Error{
		Reason:  ReasonRoleNotFound,
		Message: fmt.Sprintf("ValkeyRole %q not found (referenced by user %q)", role, username),
	}
}

func unrenderableACL(err error) *Error {
	return &Error{Reason: ReasonUnrenderableACL, Message: err.Error()}
}
