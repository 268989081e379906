package cluster

import (
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/events"

	valkeyv1 "github.com/gomomento/valkey-operator/api/v1alpha1"
	"github.com/gomomento/valkey-operator/internal/tlssecret"
)

// A valid Secret's warnings are each announced by one Event, however many
// reconciles see them and however many warnings there are; an expiring
// leaf is reported by its condition alone.
func TestTLSWarningEventsOnce(t *testing.T) {
	now := time.Now()
	for _, tt := range []struct {
		name      string
		usages    []string
		notBefore time.Time
		notAfter  time.Time
		want      map[string]int // Events by reason over every call
	}{
		{"no warning", nil, now.Add(-time.Hour), now.Add(365 * 24 * time.Hour), map[string]int{}},
		{"one usage missing", []string{tlssecret.UsageServerAuth}, now.Add(-time.Hour), now.Add(365 * 24 * time.Hour),
			map[string]int{tlssecret.ReasonMissingClientAuth: 1}},
		{"both usages missing", []string{tlssecret.UsageCodeSigning}, now.Add(-time.Hour), now.Add(365 * 24 * time.Hour),
			map[string]int{tlssecret.ReasonMissingServerAuth: 1, tlssecret.ReasonMissingClientAuth: 1}},
		{"usage missing and not yet valid", []string{tlssecret.UsageServerAuth}, now.Add(time.Hour), now.Add(365 * 24 * time.Hour),
			map[string]int{tlssecret.ReasonMissingClientAuth: 1, tlssecret.ReasonCertificateNotYetValid: 1}},
		{"usage missing and expiring soon", []string{tlssecret.UsageServerAuth}, now.Add(-time.Hour), now.Add(24 * time.Hour),
			map[string]int{tlssecret.ReasonMissingClientAuth: 1}},
		{"both usages missing and expired", []string{tlssecret.UsageCodeSigning}, now.Add(-48 * time.Hour), now.Add(-time.Hour),
			map[string]int{tlssecret.ReasonMissingServerAuth: 1, tlssecret.ReasonMissingClientAuth: 1, tlssecret.ReasonCertificateExpired: 1}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			rec := events.NewFakeRecorder(100)
			r := &Reconciler{Recorder: rec}
			vc := &valkeyv1.ValkeyCluster{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "c"},
				Spec: valkeyv1.ValkeyClusterSpec{TLS: &valkeyv1.TLSSpec{SecretRef: "c-tls"}}}
			tls := tlsCheck{Info: &tlssecret.Info{SecretName: "c-tls", Leaf: tlssecret.CertInfo{
				NotBefore: tt.notBefore, NotAfter: tt.notAfter, ExtKeyUsages: tt.usages, Fingerprint: "f"}}}
			for range 3 {
				rep := r.announceTLS(vc, tls)
				vc.Status = clusterStatus(vc.Status, vc.Generation, findings{tls: &tlsFinding{report: rep, info: tls.Info}})
			}
			close(rec.Events)
			got := map[string]int{}
			for e := range rec.Events {
				// "<type> <reason> <message>"
				got[strings.Fields(e)[1]]++
			}
			for reason, n := range tt.want {
				if got[reason] != n {
					t.Errorf("%d %s Events over 3 calls, want %d (all: %v)", got[reason], reason, n, got)
				}
			}
			for reason, n := range got {
				if _, ok := tt.want[reason]; !ok {
					t.Errorf("%d unexpected %s Events", n, reason)
				}
			}
			for _, w := range tlssecret.Warnings(tls.Info, now) {
				if w.Reason == tlssecret.ReasonCertificateExpiringSoon || w.Reason == tlssecret.ReasonCertificateExpired {
					continue
				}
				if !isConditionMessageContaining(vc, valkeyv1.CondTLSValid, w.Message) {
					t.Errorf("TLSValid does not carry the warning %q", w.Message)
				}
			}
		})
	}
}

func isConditionMessageContaining(vc *valkeyv1.ValkeyCluster, typ, part string) bool {
	for _, c := range vc.Status.Conditions {
		if c.Type == typ {
			return strings.Contains(c.Message, part)
		}
	}
	return false
}

// A warning is news against the TLSValid condition the cluster already has:
// one that joins others is announced alone, and a condition left by an
// invalid Secret carries none.
func TestReportTLSAnnounces(t *testing.T) {
	now := time.Now()
	year := now.Add(365 * 24 * time.Hour)
	server := tlssecret.MissingServerAuthMessage("c-tls")
	client := tlssecret.MissingClientAuthMessage("c-tls")
	valid := `TLS Secret "c-tls" is valid`
	for _, tt := range []struct {
		name   string
		prior  *metav1.Condition
		usages []string
		want   []string
	}{
		{"first sight", nil, []string{tlssecret.UsageCodeSigning},
			[]string{tlssecret.ReasonMissingServerAuth, tlssecret.ReasonMissingClientAuth}},
		{"both carried", &metav1.Condition{Status: metav1.ConditionTrue, Message: valid + "; " + server + "; " + client},
			[]string{tlssecret.UsageCodeSigning}, nil},
		{"second joins the first", &metav1.Condition{Status: metav1.ConditionTrue, Message: valid + "; " + server},
			[]string{tlssecret.UsageCodeSigning}, []string{tlssecret.ReasonMissingClientAuth}},
		{"after an invalid Secret", &metav1.Condition{Status: metav1.ConditionFalse, Message: server},
			[]string{tlssecret.UsageClientAuth}, []string{tlssecret.ReasonMissingServerAuth}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			vc := &valkeyv1.ValkeyCluster{Spec: valkeyv1.ValkeyClusterSpec{TLS: &valkeyv1.TLSSpec{SecretRef: "c-tls"}}}
			if tt.prior != nil {
				c := *tt.prior
				c.Type, c.Reason = valkeyv1.CondTLSValid, valkeyv1.ReasonValid
				vc.Status.Conditions = []metav1.Condition{c}
			}
			info := &tlssecret.Info{SecretName: "c-tls", Leaf: tlssecret.CertInfo{
				NotBefore: now.Add(-time.Hour), NotAfter: year, ExtKeyUsages: tt.usages}}
			rep := reportTLS(vc, info, now)
			var got []string
			for _, w := range rep.announce {
				got = append(got, w.Reason)
			}
			if strings.Join(got, ",") != strings.Join(tt.want, ",") {
				t.Errorf("announced %v, want %v", got, tt.want)
			}
		})
	}
}
