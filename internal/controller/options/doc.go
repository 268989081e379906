// Package options holds the operator's process-wide settings, their
// defaults and validation, which every controller reads.
package options
