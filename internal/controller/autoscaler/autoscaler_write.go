package autoscaler

import (
	"time"

	valkeyv1 "github.com/gomomento/valkey-operator/api/v1alpha1"
	"github.com/gomomento/valkey-operator/internal/autoscale"
)

// writeEvery is how long a node's status.utilisation may trail its samples
// when nothing reads them at once: each node's status write is an API
// request, and an idle cluster without autoscaling should cost next to none.
const writeEvery = 5 * time.Minute

// needsWrite says whether a node's new utilisation is written now, given
// what its status holds. A cluster with spec.autoscaling decides from the
// samples, so it gets every one; metering reads the peak, so a new peak
// (or a new denominator or limit) is written at once; otherwise the samples
// wait in memory until the newest written one is writeEvery old, and go
// out together.
func needsWrite(autoscaling bool, written, next *valkeyv1.NodeUtilisation, now time.Time) bool {
	if autoscaling || written == nil {
		return true
	}
	if written.PeakUsedMemoryBytes != next.PeakUsedMemoryBytes ||
		written.MemoryDenominatorBytes != next.MemoryDenominatorBytes ||
		written.CPULimitMillis != next.CPULimitMillis {
		return true
	}
	return now.Sub(newestWritten(written)) >= writeEvery
}

// newestWritten is the time of the newest sample in u; zero without one.
func newestWritten(u *valkeyv1.NodeUtilisation) time.Time {
	if u == nil || len(u.Samples) == 0 {
		return time.Time{}
	}
	return u.Samples[len(u.Samples)-1].Time.Time
}

// historyBase is the history a new sample extends: the one kept in memory
// (which holds the samples not yet written), unless the status is newer
// (written by another operator process while this one was not leading).
func historyBase(kept []autoscale.Sample, written *valkeyv1.NodeUtilisation) []autoscale.Sample {
	var status []valkeyv1.UtilisationSample
	if written != nil {
		status = written.Samples
	}
	if len(kept) > 0 && !kept[len(kept)-1].Time.Before(newestWritten(written)) {
		return kept
	}
	return samplesFromAPI(status)
}

func samplesFromAPI(in []valkeyv1.UtilisationSample) []autoscale.Sample {
	out := make([]autoscale.Sample, len(in))
	for i, s := range in {
		out[i] = autoscale.Sample{Time: s.Time.Time, MemoryPercent: s.MemoryPercent, CPUPercent: s.CPUPercent,
			BandwidthMbps: s.BandwidthMbps, UsedMemoryBytes: s.UsedMemoryBytes}
	}
	return out
}
