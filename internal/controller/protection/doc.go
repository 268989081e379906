// Package protection holds the deletion of ValkeyImage, ValkeyConfig and
// ValkeyRole objects while a config or cluster still uses them: a finalizer
// keeps each until no user is left.
package protection
