package e2e

import (
	"context"
	"testing"
)

// shippedPacingInstead replaces the suite's operator, whose sampling and
// safety pass are quickened for other tests, with one at the shipped
// options (environmentOptions: only what this machine needs differs), and
// brings the suite's back when the test ends. A test that calls it must
// not be parallel.
func shippedPacingInstead(t testing.TB) {
	t.Helper()
	stopOperator()
	var err error
	if stopOperator, err = startOperatorFrom(context.Background(), environmentOptions(), nil); err != nil {
		t.Fatalf("starting the operator at the shipped pacing: %v", err)
	}
	t.Cleanup(func() {
		stopOperator()
		var err error
		if stopOperator, err = startOperator(context.Background()); err != nil {
			t.Fatalf("restarting the suite's operator: %v", err)
		}
	})
}
