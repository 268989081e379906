package kubectlvalkey

import (
	"context"
	"errors"
	"strings"
	"testing"
)

func TestRunChecks(t *testing.T) {
	pass := func(detail string) func(context.Context) outcome {
		return func(context.Context) outcome { return outcome{Detail: detail} }
	}
	fail := func(msg string) func(context.Context) outcome {
		return func(context.Context) outcome { return outcome{Err: errors.New(msg)} }
	}
	cases := []struct {
		name       string
		checks     []check
		wantOut    string
		wantFirst  string
		wantFailed int
	}{
		{
			name:    "all pass",
			checks:  []check{{"a", pass("")}, {"b", pass("fine")}},
			wantOut: "ok   a\nok   b: fine\n",
		},
		{
			name:       "a failure does not stop later checks",
			checks:     []check{{"a", pass("")}, {"b", fail("broken")}, {"c", pass("")}},
			wantOut:    "ok   a\nFAIL b: broken\nok   c\n",
			wantFirst:  "b",
			wantFailed: 1,
		},
		{
			name:       "the first failure is named",
			checks:     []check{{"a", fail("one")}, {"b", fail("two")}},
			wantOut:    "FAIL a: one\nFAIL b: two\n",
			wantFirst:  "a",
			wantFailed: 2,
		},
		{
			name: "notes and warnings",
			checks: []check{{"n", func(context.Context) outcome {
				return outcome{Detail: "d", Notes: []string{"x", "y"}, Warn: "careful"}
			}}},
			wantOut: "ok   n: d\n       x\n       y\nWARN n: careful\n",
		},
		{
			name: "a failed check prints notes, not its warning",
			checks: []check{{"n", func(context.Context) outcome {
				return outcome{Err: errors.New("bad"), Notes: []string{"x"}, Warn: "ignored"}
			}}},
			wantOut:    "FAIL n: bad\n       x\n",
			wantFirst:  "n",
			wantFailed: 1,
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var out strings.Builder
			err := runChecks(context.Background(), &out, tc.checks)
			if out.String() != tc.wantOut {
				t.Errorf("output:\n%s\nwant:\n%s", out.String(), tc.wantOut)
			}
			var ce *CheckError
			switch {
			case tc.wantFirst == "" && err != nil:
				t.Errorf("err = %v, want nil", err)
			case tc.wantFirst != "" && !errors.As(err, &ce):
				t.Errorf("err = %v, want a *CheckError", err)
			case tc.wantFirst != "" && (ce.Check != tc.wantFirst || ce.Failed != tc.wantFailed):
				t.Errorf("CheckError = %s with %d failed, want %s with %d", ce.Check, ce.Failed, tc.wantFirst, tc.wantFailed)
			}
		})
	}
}

func TestReplyClassification(t *testing.T) {
	cases := []struct {
		reply string
		acl   bool
		resp  bool
	}{
		{"+PONG", false, true},
		{"-NOAUTH Authentication required.", true, true},
		{"-WRONGPASS invalid username-password pair or user is disabled.", true, true},
		{"-NOPERM User alice has no permissions to run the 'ping' command", true, true},
		{"-ERR unknown command", false, true},
		{"\x15\x03\x03\x00\x02\x02\x32", false, false},
		{"", false, false},
	}
	for _, tc := range cases {
		if got := isACLError(tc.reply); got != tc.acl {
			t.Errorf("isACLError(%q) = %v, want %v", tc.reply, got, tc.acl)
		}
		if got := looksLikeRESP([]byte(tc.reply)); got != tc.resp {
			t.Errorf("looksLikeRESP(%q) = %v, want %v", tc.reply, got, tc.resp)
		}
	}
}
