package kubectlvalkey

import (
	"context"
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
)

// defaultWaitTimeout bounds --wait; a large backup or restore takes minutes
// per gigabyte, and the operator goes on after the plugin stops waiting.
const defaultWaitTimeout = time.Hour

// waitFor reads the object every interval until done says it has reached a
// final phase or fails, or timeout passes. what names the object and
// last says where it was, for the timeout's message.
func waitFor(ctx context.Context, interval, timeout time.Duration, what string, last func() string, done func(context.Context) (bool, error)) error {
	err := wait.PollUntilContextTimeout(ctx, interval, timeout, true, done)
	if err != nil && wait.Interrupted(err) && ctx.Err() == nil {
		return fmt.Errorf("gave up waiting for %s after %s (%s); the operator goes on with it", what, timeout, last())
	}
	return err
}

// phaseChange prints a phase and message when they differ from the last
// ones printed, so a wait shows progress without repeating itself.
type phaseChange struct{ last string }

// phaseText is a phase and its message on one line; no phase yet is
// Pending, as the operator has not reached the object.
func phaseText(phase, message string) string {
	if phase == "" {
		phase = "Pending"
	}
	if message == "" {
		return phase
	}
	return phase + ": " + oneLine(message)
}

// changed reports whether phase and message are new, remembering them.
func (p *phaseChange) changed(phase, message string) (string, bool) {
	t := phaseText(phase, message)
	if t == p.last {
		return t, false
	}
	p.last = t
	return t, true
}
