package render

import (
	"testing"
)

func TestSigtermFailoverFollowsTheVersion(t *testing.T) {
	tests := []struct {
		version string
		user    map[string]string
		want    string // shutdown-on-sigterm as recorded, "" for absent
	}{
		{version: "8.0.1"},
		{version: "8.1.4"},
		{version: "9.0.0", want: "failover"},
		{version: "9.1.2", want: "failover"},
		{version: "10.0.0", want: "failover"},
		{version: "not-a-version"},
		// 8.x keeps what the user chose; 9 needs the flag for the backstop.
		{version: "8.0.1", user: map[string]string{"shutdown-on-sigterm": "nosave"}, want: "nosave"},
		{version: "9.1.2", user: map[string]string{"SHUTDOWN-ON-SIGTERM": "nosave"}, want: "failover"},
	}
	for _, tt := range tests {
		t.Run(tt.version, func(t *testing.T) {
			settings, err := settings(tt.user, false, nil)
			if err != nil {
				t.Fatal(err)
			}
			withSigtermFailover(settings, tt.version)
			var got string
			for k, v := range settings {
				if k == keyShutdownOnSigterm || k == "SHUTDOWN-ON-SIGTERM" {
					if got != "" {
						t.Fatalf("two spellings of %s in %v", keyShutdownOnSigterm, settings)
					}
					got = v
				}
			}
			if got != tt.want {
				t.Errorf("shutdown-on-sigterm = %q, want %q", got, tt.want)
			}
		})
	}
}

// A pod is held before SIGTERM, for the operator's hand-over, whenever its
// cluster has replicas to hand over to, whatever the version.
func TestPreStopHold(t *testing.T) {
	tests := []struct {
		name     string
		version  string
		replicas int32
		held     bool
	}{
		{name: "8.x with replicas", version: "8.0.1", replicas: 1, held: true},
		{name: "8.x without replicas", version: "8.0.1", replicas: 0},
		{name: "9.x with replicas", version: "9.1.2", replicas: 1, held: true},
		{name: "9.x without replicas", version: "9.1.2", replicas: 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := testCluster(false)
			c.Cluster.Spec.ReplicasPerShard = tt.replicas
			r := *testResolved
			r.Version = tt.version
			n, err := c.Node("my-cluster-a1b2c", &r, 0, "")
			if err != nil {
				t.Fatal(err)
			}
			n.UID = "uid-1"
			pod, err := c.Pod(n)
			if err != nil {
				t.Fatal(err)
			}
			l := pod.Spec.Containers[0].Lifecycle
			held := l != nil && l.PreStop != nil && l.PreStop.Sleep != nil
			if held != tt.held {
				t.Fatalf("preStop hold = %v, want %v (lifecycle %+v)", held, tt.held, l)
			}
			if held && l.PreStop.Sleep.Seconds*3 > *pod.Spec.TerminationGracePeriodSeconds {
				t.Errorf("hold %ds leaves too little of the %ds grace period for the shutdown", l.PreStop.Sleep.Seconds, *pod.Spec.TerminationGracePeriodSeconds)
			}
		})
	}
}
