package realnode

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/gomomento/valkey-operator/internal/controller"
	"github.com/gomomento/valkey-operator/internal/render"
)

// TestSingleNodeCluster runs a 1x0 cluster on the real node: it becomes
// Active, serves PING, SET and GET at its pod IP, and its pod is what a
// user expects: every container Running and Ready without a restart,
// Valkey running as the valkey user (999) on a read-only root file
// system, its data and nodes.conf in the data volume.
func TestSingleNodeCluster(t *testing.T) {
	ns := "single"
	createNamespace(t, ns)
	t0 := time.Now()
	key := createCluster(t, ns, "cache", createMenu(t, "single", true), 1, 0)
	vc := waitConverged(t, key, 1, 0, 5*time.Minute)
	t.Logf("1x0 cluster created → Active in %v", time.Since(t0).Round(100*time.Millisecond))

	pods, lag := waitPodsHealthy(t, key, 1, 30*time.Second)
	t.Logf("pod Ready %v after the cluster is Active", lag.Round(10*time.Millisecond))
	t.Logf("conditions healthy %v later", waitHealthyConditions(t, key, time.Minute).Round(10*time.Millisecond))
	if pods[0].Name != vc.Status.Nodes[0] {
		t.Fatalf("pod %s, members %v", pods[0].Name, vc.Status.Nodes)
	}
	pod := pods[0]
	if len(pod.Spec.Containers) != 2 {
		t.Errorf("pod %s has %d containers, want Valkey and the exporter", pod.Name, len(pod.Spec.Containers))
	}

	n, err := dialPod(ns, pod.Name)
	if err != nil {
		t.Fatalf("dialing %s at %s: %v", pod.Name, pod.Status.PodIP, err)
	}
	defer n.Close()
	ctx := context.Background()
	c := clusterClient(t, pod.Status.PodIP)
	if got, err := c.Do(ctx, c.B().Ping().Build()).ToString(); err != nil || got != "PONG" {
		t.Fatalf("PING = %q, %v", got, err)
	}
	if err := c.Do(ctx, c.B().Set().Key("greeting").Value("hello").Build()).Error(); err != nil {
		t.Fatalf("SET: %v", err)
	}
	if got, err := c.Do(ctx, c.B().Get().Key("greeting").Build()).ToString(); err != nil || got != "hello" {
		t.Fatalf("GET = %q, %v", got, err)
	}

	// What runs inside the containers is read from the node's processes,
	// where the node is this machine.
	if nodeIsLocal() {
		checkValkeyProcesses(t, &pod, key.Name)
	}
	eventually(t, 30*time.Second, "the exporter's redis_up 1", func() error {
		resp, err := http.Get("http://" + net.JoinHostPort(pod.Status.PodIP, strconv.Itoa(int(render.PortExporter))) + "/metrics")
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		if err != nil {
			return err
		}
		if !strings.Contains(string(b), "\nredis_up 1") {
			return errors.New("no redis_up 1 in the exporter's metrics")
		}
		return nil
	})
}

// checkValkeyProcesses checks the processes of a Valkey pod on this
// machine's node: Valkey running as the valkey user (999) on a read-only
// root file system, its data and nodes.conf in the data volume, its name
// in /etc/hosts, its Secret files 0440 to the fsGroup, the exporter as the
// pod's user.
func checkValkeyProcesses(t *testing.T, pod *corev1.Pod, cluster string) {
	t.Helper()
	ns := pod.Namespace
	pid := containerPID(t, pod, render.ContainerValkey)
	status := procStatus(t, pid)
	t.Logf("valkey container's main process %d: %s", pid, status["Name"])
	for field, want := range map[string]string{
		"Name":       "valkey-server",
		"Uid":        "999\t999\t999\t999",
		"Gid":        "999\t999\t999\t999",
		"CapEff":     "0000000000000000",
		"NoNewPrivs": "1",
		"Seccomp":    "2",
	} {
		if got := status[field]; got != want {
			t.Errorf("valkey process %d: %s = %q, want %q", pid, field, got, want)
		}
	}
	if status["Groups"] != "999" {
		t.Logf("valkey process supplementary groups: %q", status["Groups"])
	}
	root := filepath.Join("/proc", strconv.Itoa(pid), "root")
	if err := os.WriteFile(filepath.Join(root, "etc", "written-by-test"), nil, 0o644); err == nil || !errors.Is(err, syscall.EROFS) {
		t.Errorf("writing to the container's root file system: %v, want EROFS", err)
	}
	// nodes.conf is where the render puts it: the data volume, written by
	// the server as the valkey user.
	if fi, err := os.Stat(filepath.Join(root, "var", "lib", "valkey", "nodes.conf")); err != nil {
		t.Errorf("nodes.conf: %v", err)
	} else if st := fi.Sys().(*syscall.Stat_t); st.Uid != 999 {
		t.Errorf("nodes.conf owned by %d, want 999", st.Uid)
	}
	// The pod's own /etc/hosts names it by the per-pod name a TLS node's
	// certificate and its exporter use.
	fqdn := render.PodFQDN(pod.Name, cluster, ns, controller.DefaultOptions().ClusterDomain)
	if b, err := os.ReadFile(filepath.Join(root, "etc", "hosts")); err != nil {
		t.Errorf("/etc/hosts: %v", err)
	} else if !hostsMaps(string(b), pod.Status.PodIP, fqdn) {
		t.Errorf("/etc/hosts does not map %s to %s:\n%s", fqdn, pod.Status.PodIP, b)
	}
	// Secret files: 0440 and the fsGroup.
	for _, f := range []string{"etc/valkey/acl", "etc/valkey/auth"} {
		entries, err := os.ReadDir(filepath.Join(root, f))
		if err != nil {
			t.Errorf("%s: %v", f, err)
			continue
		}
		files := 0
		for _, e := range entries {
			if e.Name()[0] == '.' {
				continue
			}
			files++
			fi, err := os.Stat(filepath.Join(root, f, e.Name()))
			if err != nil {
				t.Error(err)
				continue
			}
			if st := fi.Sys().(*syscall.Stat_t); fi.Mode().Perm() != 0o440 || st.Gid != 999 {
				t.Errorf("/%s/%s: mode %v group %d, want 0440 and 999", f, e.Name(), fi.Mode().Perm(), st.Gid)
			}
		}
		if files == 0 {
			t.Errorf("/%s holds no file", f)
		}
	}
	// The exporter runs as the pod's user too, and serves Valkey's
	// metrics: it reached Valkey at the pod IP as its own user.
	epid := containerPID(t, pod, render.ContainerExporter)
	if got := procStatus(t, epid)["Uid"]; got != "999\t999\t999\t999" {
		t.Errorf("exporter process %d: Uid = %q", epid, got)
	}
}

// hostsMaps says whether the hosts file maps name to ip.
func hostsMaps(hosts, ip, name string) bool {
	for _, line := range strings.Split(hosts, "\n") {
		f := strings.Fields(line)
		if len(f) < 2 || f[0] != ip {
			continue
		}
		for _, n := range f[1:] {
			if n == name {
				return true
			}
		}
	}
	return false
}
