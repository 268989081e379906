// Command bench runs the benchmarks and writes their report,
// docs/benchmarks.md, with its plots in docs/benchmarks/. `make bench` runs
// it from the repository root after building the test control plane and
// installing Valkey.
//
//	go run ./bench [-out docs/benchmarks.md] [-realistic-delay 30s] [-records DIR]
//
// The benchmarks live in test/e2e/bench_*_test.go, where they share the
// end-to-end harness, and test/realnode/bench_test.go on the real node; each writes what it measured as JSON into
// $VALKEY_BENCH_OUT (see bench/record). With -records the command only
// renders an earlier run's records.
package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/gomomento/valkey-operator/bench/record"
	"github.com/gomomento/valkey-operator/internal/localkube"
	"github.com/gomomento/valkey-operator/internal/testbin"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}

func run() error {
	out := flag.String("out", "docs/benchmarks.md", "the Markdown report to write; its plots go to a directory of the same name")
	realistic := flag.Duration("realistic-delay", 30*time.Second,
		"the runtime's projection delay for the realistic certificate rotation run (the kubelet syncs a pod's volumes about once a minute)")
	records := flag.String("records", "", "render the records in this directory instead of running the benchmarks")
	flag.Parse()

	start := time.Now()
	dir := *records
	if dir == "" {
		var err error
		if dir, err = os.MkdirTemp("", "valkey-bench-"); err != nil {
			return err
		}
		r := runMeta{}
		if r.Pods, err = runBenchmarks(dir, *realistic); err != nil {
			return fmt.Errorf("%w (records so far are in %s)", err, dir)
		}
		r.WallSeconds, r.Date = time.Since(start).Seconds(), start.UTC().Format("2006-01-02")
		if err := writeJSON(filepath.Join(dir, metaFile), r); err != nil {
			return err
		}
	}
	set, err := record.Load(dir)
	if err != nil {
		return err
	}
	var meta runMeta
	if b, err := os.ReadFile(filepath.Join(dir, metaFile)); err == nil {
		if err := json.Unmarshal(b, &meta); err != nil {
			return fmt.Errorf("%s: %w", metaFile, err)
		}
	}

	plotDir := strings.TrimSuffix(*out, filepath.Ext(*out))
	if err := os.MkdirAll(plotDir, 0o755); err != nil {
		return err
	}
	plots := map[string]string{}
	for _, kind := range []string{"throughput", "latency"} {
		name := "availability-" + kind + ".png"
		if err := plotAvailability(filepath.Join(plotDir, name), kind, set.Availability); err != nil {
			return err
		}
		if len(set.Availability) > 0 {
			plots[kind] = filepath.Base(plotDir) + "/" + name
		}
	}
	page := Render(Report{
		Machine: machine(),
		Date:    meta.Date,
		Command: "make bench",
		Wall:    time.Duration(meta.WallSeconds * float64(time.Second)),
		Records: set,
		Pods:    meta.Pods,
		Plots:   plots,
	})
	if err := os.WriteFile(*out, []byte(page), 0o644); err != nil {
		return err
	}
	fmt.Print(page)
	fmt.Fprintf(os.Stderr, "bench: wrote %s and %s/ in %s; records in %s\n", *out, plotDir, time.Since(start).Round(time.Second), dir)
	return nil
}

// metaFile keeps, beside the records, what the run itself measured, so
// -records renders the same page.
const metaFile = "run.meta"

type runMeta struct {
	Date        string        `json:"date"`
	WallSeconds float64       `json:"wallSeconds"`
	Pods        *PodStartStop `json:"pods,omitempty"`
}

func writeJSON(path string, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, b, 0o644)
}

// runBenchmarks runs every benchmark once, writing records into dir, and
// returns the runtime's pod start/stop figures.
func runBenchmarks(dir string, realistic time.Duration) (*PodStartStop, error) {
	podsOut, err := goTest(nil, "./internal/localkube/", "^BenchmarkStartStop50Pods$", "10m")
	if err != nil {
		return nil, err
	}
	var pods *PodStartStop
	if m, ok := parseBenchLine(podsOut, "BenchmarkStartStop50Pods"); ok {
		pods = &PodStartStop{Pods: 50, SecondsToReady: m["s-to-ready/op"], SecondsToGone: m["s-to-gone/op"]}
	}
	// With no projection delay, a rotation shows the operator's own share;
	// the other benchmarks do not depend on the delay.
	env := []string{record.EnvDir + "=" + dir, "VALKEY_E2E_PROJECTION_DELAY=0s", "VALKEY_BENCH_ROTATIONS=5"}
	if _, err := goTest(env, "./test/e2e/",
		"^Benchmark(Bootstrap|TLSLeafRotation|AvailabilityTLS|AvailabilityTopology|AvailabilityPlainPrimaryKill|AvailabilityPlanned|AutoscaleReaction|Resharding|Footprint|SecretCache)$", "60m"); err != nil {
		return nil, err
	}
	// The durability benchmark fills its clusters with a gigabyte
	// ($VALKEY_BENCH_DURABLE_MB): a run of its own, with its own timeout.
	if _, err := goTest([]string{record.EnvDir + "=" + dir}, "./test/e2e/", "^BenchmarkDurability$", "40m"); err != nil {
		return nil, err
	}
	// So does the backup benchmark ($VALKEY_BENCH_BACKUP_MB).
	if _, err := goTest([]string{record.EnvDir + "=" + dir}, "./test/e2e/", "^BenchmarkBackup$", "30m"); err != nil {
		return nil, err
	}
	// The fleet benchmark runs up to 400 clusters, 300 pods of 3x1 among
	// them ($VALKEY_BENCH_FLEET_SIZES, $VALKEY_BENCH_FLEET_3X1).
	if _, err := goTest([]string{record.EnvDir + "=" + dir}, "./test/e2e/", "^BenchmarkFleet$", "90m"); err != nil {
		return nil, err
	}
	// The real node's scenarios, then the same on the local runtime, one
	// after the other so neither shares the machine with the other.
	if _, err := goTest([]string{record.EnvDir + "=" + dir}, "./test/realnode/", "^BenchmarkRealNode$", "30m"); err != nil {
		return nil, err
	}
	if _, err := goTest([]string{record.EnvDir + "=" + dir}, "./test/e2e/", "^BenchmarkRealNodeCounterparts$", "20m"); err != nil {
		return nil, err
	}
	env = []string{record.EnvDir + "=" + dir, "VALKEY_E2E_PROJECTION_DELAY=" + realistic.String(), "VALKEY_BENCH_ROTATIONS=2"}
	if _, err := goTest(env, "./test/e2e/", "^BenchmarkTLSLeafRotation$", "20m"); err != nil {
		return nil, err
	}
	return pods, nil
}

// goTest runs one package's benchmarks once each, streaming the output,
// and returns it.
func goTest(env []string, pkg, bench, timeout string) ([]byte, error) {
	args := []string{"test", "-count=1", "-run", "^$", "-bench", bench, "-benchtime", "1x", "-timeout", timeout, pkg}
	fmt.Fprintf(os.Stderr, "bench: %s go %s\n", strings.Join(env, " "), strings.Join(args, " "))
	cmd := exec.Command("go", args...)
	cmd.Env = append(os.Environ(), env...)
	var buf bytes.Buffer
	cmd.Stdout = io.MultiWriter(os.Stderr, &buf)
	cmd.Stderr = os.Stderr
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("go test %s: %w", pkg, err)
	}
	return buf.Bytes(), nil
}

// parseBenchLine finds a benchmark's result line in go test output and
// returns its metrics by unit.
func parseBenchLine(out []byte, name string) (map[string]float64, bool) {
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) < 4 || (fields[0] != name && !strings.HasPrefix(fields[0], name+"-")) {
			continue
		}
		if _, err := strconv.Atoi(fields[1]); err != nil {
			continue
		}
		m := map[string]float64{}
		for i := 2; i+1 < len(fields); i += 2 {
			if v, err := strconv.ParseFloat(fields[i], 64); err == nil {
				m[fields[i+1]] = v
			}
		}
		return m, true
	}
	return nil, false
}

// machine collects the facts the report names; a fact that cannot be read
// is left out.
func machine() Machine {
	m := Machine{Cores: runtime.NumCPU(), Go: runtime.Version()}
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		m.CPU = field(string(b), "model name", ":")
		var notes []string
		if strings.Contains(" "+field(string(b), "flags", ":")+" ", " hypervisor ") {
			notes = append(notes, "virtual machine")
		}
		if mhz, err := strconv.ParseFloat(field(string(b), "cpu MHz", ":"), 64); err == nil {
			notes = append(notes, fmt.Sprintf("%.1f GHz", mhz/1000))
		}
		if len(notes) > 0 {
			m.CPU += " (" + strings.Join(notes, ", ") + ")"
		}
	}
	if b, err := os.ReadFile("/proc/meminfo"); err == nil {
		kb, _ := strconv.ParseFloat(strings.Fields(field(string(b), "MemTotal", ":") + " 0")[0], 64)
		m.MemoryGiB = kb / (1 << 20)
	}
	if b, err := os.ReadFile("/etc/os-release"); err == nil {
		m.OS = strings.Trim(field(string(b), "PRETTY_NAME", "="), `"`)
	}
	if b, err := os.ReadFile("/proc/sys/kernel/osrelease"); err == nil {
		m.Kernel = strings.TrimSpace(string(b))
	}
	// Every mapped image that runs a valkey-server (others, such as the
	// metrics exporter, have none), oldest first.
	for _, mapping := range localkube.DefaultImageMappings(testbin.Valkey9Dir()) {
		argv := mapping.Commands["valkey-server"]
		if len(argv) == 0 {
			continue
		}
		if v := versionOf(argv, "v="); v != "" && !slices.Contains(m.Valkey, v) {
			m.Valkey = append(m.Valkey, v)
		}
	}
	slices.Sort(m.Valkey)
	m.Kubernetes = versionOf([]string{"bin/testbin/kube-apiserver"}, "")
	return m
}

// versionOf runs argv --version and returns the field that starts with
// prefix (without it), or the whole first line.
func versionOf(argv []string, prefix string) string {
	if len(argv) == 0 {
		return ""
	}
	out, err := exec.Command(argv[0], append(argv[1:], "--version")...).Output()
	if err != nil {
		return ""
	}
	line, _, _ := strings.Cut(strings.TrimSpace(string(out)), "\n")
	if prefix == "" {
		return line
	}
	for _, f := range strings.Fields(line) {
		if v, ok := strings.CutPrefix(f, prefix); ok {
			return v
		}
	}
	return line
}

// field returns the value of the first "key<sep>value" line of text.
func field(text, key, sep string) string {
	for line := range strings.SplitSeq(text, "\n") {
		k, v, ok := strings.Cut(line, sep)
		if ok && strings.TrimSpace(k) == key {
			return strings.TrimSpace(v)
		}
	}
	return ""
}
