package localkube

import (
	"time"
)

// RestartDelayAnnotation, set on a pod to a Go duration ("0s", "20s"),
// is the delay before each restart of that pod's crashed containers, in
// place of the runtime's doubling backoff. It lets a test choose, pod by
// pod, whether a crashed process is back before its peers notice or only
// after they have acted on its absence. A value that does not parse, or
// is negative, is ignored.
const RestartDelayAnnotation = "localkube.valkey.gomomento.com/restart-delay"

// restartDelay is how long a container of a pod with these annotations
// waits before its next start after restarts restarts: the annotation's
// delay when it holds one, else base doubled per restart up to max, as
// the kubelet backs off.
func restartDelay(annotations map[string]string, restarts int32, base, max time.Duration) time.Duration {
	if d, err := time.ParseDuration(annotations[RestartDelayAnnotation]); err == nil && d >= 0 {
		return d
	}
	d := base
	for i := int32(0); i < restarts && d < max; i++ {
		d *= 2
	}
	return min(d, max)
}
