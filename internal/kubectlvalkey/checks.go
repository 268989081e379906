package kubectlvalkey

import (
	"context"
	"fmt"
	"io"
)

// check is one line of verify-tls: it passes, fails, or passes with a warning.
type check struct {
	name string
	run  func(ctx context.Context) outcome
}

// outcome is what a check found. Err set means the check failed; Detail
// follows the name on the line; Notes are indented lines under it; Warn,
// when set on a passing check, prints a WARN line that does not fail the run.
type outcome struct {
	Err    error
	Detail string
	Notes  []string
	Warn   string
}

// CheckError names the first check that failed.
type CheckError struct {
	Check string
	// Failed counts every failed check of the run.
	Failed int
	Err    error
}

func (e *CheckError) Error() string {
	if e.Failed > 1 {
		return fmt.Sprintf("check %s failed (%d checks failed): %v", e.Check, e.Failed, e.Err)
	}
	return fmt.Sprintf("check %s failed: %v", e.Check, e.Err)
}

func (e *CheckError) Unwrap() error { return e.Err }

// runChecks runs every check in order, even after a failure, so one run
// shows the whole picture; the error names the first failure.
func runChecks(ctx context.Context, out io.Writer, checks []check) error {
	var first *CheckError
	for _, c := range checks {
		o := c.run(ctx)
		switch {
		case o.Err != nil:
			fmt.Fprintf(out, "FAIL %s: %v\n", c.name, o.Err)
			if first == nil {
				first = &CheckError{Check: c.name, Err: o.Err}
			}
			first.Failed++
		case o.Detail != "":
			fmt.Fprintf(out, "ok   %s: %s\n", c.name, o.Detail)
		default:
			fmt.Fprintf(out, "ok   %s\n", c.name)
		}
		for _, n := range o.Notes {
			fmt.Fprintf(out, "       %s\n", n)
		}
		if o.Err == nil && o.Warn != "" {
			fmt.Fprintf(out, "WARN %s: %s\n", c.name, o.Warn)
		}
	}
	if first != nil {
		return first
	}
	return nil
}
