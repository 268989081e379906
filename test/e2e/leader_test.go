package e2e

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	valkeyv1 "github.com/gomomento/valkey-operator/api/v1alpha1"
)

// Two operator processes with leader election, as the Deployment runs them:
// exactly one leads and reconciles while the other waits; when the leader
// stops, the other takes over and carries on with the same clusters.
// Not parallel: it stops the operator every other test relies on.
func TestLeaderElectionTwoReplicas(t *testing.T) {
	bin, kubeconfig := operatorProcessesInstead(t, shippedOperator)
	// The Lease lives in the operator's namespace, the cluster in its own.
	const leaseNS, ns = "leader-operator", "leader"
	createNamespace(t, leaseNS)
	a := startOperatorProcess(t, bin, kubeconfig, leaseNS, "a")
	b := startOperatorProcess(t, bin, kubeconfig, leaseNS, "b")

	var leader, follower *operatorProcess
	eventually(t, time.Minute, "one replica to lead", func() error {
		la, lb := a.leading(), b.leading()
		switch {
		case la && lb:
			t.Fatalf("both replicas lead")
		case la:
			leader, follower = a, b
		case lb:
			leader, follower = b, a
		default:
			return fmt.Errorf("no leader yet")
		}
		return nil
	})
	t.Logf("replica %s leads", leader.name)

	key := newPlainCluster(t, ns, "cache", 1, 0)
	if n := follower.reconciles(); n != 0 {
		t.Fatalf("the waiting replica %s reconciled %v times", follower.name, n)
	}
	if n := leader.reconciles(); n == 0 {
		t.Fatalf("the leader %s reconciled nothing", leader.name)
	}

	leader.stop(t)
	eventually(t, time.Minute, "the other replica to take over", func() error {
		if !follower.leading() {
			return fmt.Errorf("replica %s does not lead yet", follower.name)
		}
		return nil
	})
	start := time.Now()
	updateCluster(t, key, func(vc *valkeyv1.ValkeyCluster) { vc.Spec.Shards = 2 })
	waitConverged(t, key, 2, 0, 5*time.Minute)
	t.Logf("the new leader scaled the cluster to 2 shards in %s", time.Since(start).Round(time.Second))
	if n := follower.reconciles(); n == 0 {
		t.Fatalf("the new leader %s reconciled nothing", follower.name)
	}
}

// operatorBuild says which command runs the operator as a process.
type operatorBuild int

const (
	// shippedOperator is cmd/valkey-operator as the image ships it: its
	// TLS reloads name the certificate paths inside a pod, which a node
	// of the local runtime does not see.
	shippedOperator operatorBuild = iota
	// localOperator is `valkey-local operator`: the same controllers, told
	// where the local runtime keeps each pod's files, so it can run TLS
	// clusters here too.
	localOperator
)

// operatorProcessesInstead stops the suite's in-process operator, which
// would reconcile too, until the test ends, and returns the command line
// that runs the operator as a process and a kubeconfig for it.
func operatorProcessesInstead(t testing.TB, build operatorBuild) (argv []string, kubeconfig string) {
	t.Helper()
	switch build {
	case localOperator:
		argv = []string{buildCommand(t, "valkey-local"), "operator", "--dir", local.Runtime.BaseDir(), "--"}
	default:
		argv = []string{buildOperatorBinary(t)}
	}
	kubeconfig = filepath.Join(t.TempDir(), "kubeconfig")
	if err := local.ControlPlane.WriteKubeconfig(kubeconfig); err != nil {
		t.Fatal(err)
	}
	stopOperator()
	t.Cleanup(func() {
		var err error
		if stopOperator, err = startOperator(context.Background()); err != nil {
			t.Fatalf("restarting the suite's operator: %v", err)
		}
	})
	return argv, kubeconfig
}

// buildOperatorBinary builds cmd/valkey-operator as the image ships it.
func buildOperatorBinary(t testing.TB) string {
	t.Helper()
	return buildCommand(t, "valkey-operator")
}

// buildCommand builds cmd/<name>.
func buildCommand(t testing.TB, name string) string {
	t.Helper()
	out := filepath.Join(t.TempDir(), name)
	cmd := exec.Command("go", "build", "-o", out, "../../cmd/"+name)
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("building %s: %v\n%s", name, err, b)
	}
	return out
}

type operatorProcess struct {
	name    string
	cmd     *exec.Cmd
	metrics string
	log     string
}

// startOperatorProcess runs one replica of the operator Deployment.
func startOperatorProcess(t testing.TB, argv []string, kubeconfig, ns, name string) *operatorProcess {
	t.Helper()
	p := &operatorProcess{name: name, metrics: freeAddr(t), log: filepath.Join(t.TempDir(), name+".log")}
	logFile, err := os.Create(p.log)
	if err != nil {
		t.Fatal(err)
	}
	// The test reads the replicas' metrics as plain HTTP; that metrics
	// are only served to authorized callers is internal/controller's test.
	p.cmd = exec.Command(argv[0], append(argv[1:], "--leader-elect", "--leader-election-namespace", ns,
		"--metrics-bind-address", p.metrics, "--metrics-secure=false", "--health-probe-bind-address", freeAddr(t),
		// The kubelet here projects a changed Secret within projectionDelay.
		"--credentials-settle", (2*projectionDelay).String(),
		// Restore loaders are processes here: they reach it on loopback.
		"--restore-feed-bind-address", "127.0.0.1:0", "--restore-feed-host", "127.0.0.1")...)
	p.cmd.Env = append(os.Environ(), "KUBECONFIG="+kubeconfig)
	p.cmd.Stdout, p.cmd.Stderr = logFile, logFile
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		p.stop(t)
		logFile.Close()
		if t.Failed() {
			if b, err := os.ReadFile(p.log); err == nil {
				t.Logf("replica %s log:\n%s", name, tail(b, 8000))
			}
		}
	})
	return p
}

// stop sends SIGTERM, as the kubelet does, and waits for the exit.
func (p *operatorProcess) stop(t testing.TB) {
	if p.cmd.ProcessState != nil {
		return
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	done := make(chan struct{})
	go func() { _ = p.cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		_ = p.cmd.Process.Kill()
		<-done
		t.Errorf("replica %s ignored SIGTERM for 30s", p.name)
	}
}

// leading reads controller-runtime's leader_election_master_status gauge.
func (p *operatorProcess) leading() bool {
	v, ok := p.metric("leader_election_master_status")
	return ok && v == 1
}

// reconciles sums the ValkeyCluster controller's reconcile counts.
func (p *operatorProcess) reconciles() float64 {
	v, _ := p.metric(`controller_runtime_reconcile_total{controller="valkeycluster"`)
	return v
}

// metric sums the samples whose line starts with prefix.
func (p *operatorProcess) metric(prefix string) (float64, bool) {
	resp, err := http.Get("http://" + p.metrics + "/metrics")
	if err != nil {
		return 0, false
	}
	defer resp.Body.Close()
	sum, found := 0.0, false
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, prefix) {
			continue
		}
		fields := strings.Fields(line)
		if v, err := strconv.ParseFloat(fields[len(fields)-1], 64); err == nil {
			sum, found = sum+v, true
		}
	}
	return sum, found
}

func freeAddr(t testing.TB) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

func tail(b []byte, n int) []byte {
	if len(b) > n {
		return b[len(b)-n:]
	}
	return b
}
