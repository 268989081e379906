// Package operatorcmd is the operator's command line: its flags, its
// manager and its controllers, shared by every binary that runs them.
package operatorcmd

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"strings"

	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	valkeyv1 "github.com/gomomento/valkey-operator/api/v1alpha1"
	"github.com/gomomento/valkey-operator/internal/controller"
	"github.com/gomomento/valkey-operator/internal/version"
)

// LeaderElectionID names the Lease the operator's replicas elect their
// leader on, in the leader election namespace.
const LeaderElectionID = "valkey-operator.valkey.gomomento.com"

// settings is what the flags say.
type settings struct {
	opts         controller.Options
	metricsAddr  string
	metricsSafe  bool
	metricsCerts string
	probeAddr    string
	pprofAddr    string
	leaderElect  bool
	leaderNS     string
	zoneSpread   string
	fieldManager string
	printVersion bool
	zap          zap.Options
}

// Run parses args as the operator's flags and runs its controllers until a
// signal stops them, with pods run where rt says. It returns the process's
// exit code: 2 for a flag or setting that makes no sense, 1 for a failure.
func Run(args []string, rt controller.Runtime) int {
	s := defaults()
	fs := flag.NewFlagSet("valkey-operator", flag.ContinueOnError)
	s.bind(fs)
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if s.printVersion {
		fmt.Println(version.Version)
		return 0
	}
	ctrl.SetLogger(zap.New(zap.UseFlagOptions(&s.zap)))
	log := ctrl.Log.WithName("setup")
	log.Info("starting valkey-operator", "version", version.Version, "clusterDomain", s.opts.ClusterDomain, "defaultZoneSpread", s.zoneSpread, "watchNamespaces", s.opts.WatchNamespaces)
	s.opts.DefaultZoneSpread = valkeyv1.ZoneSpread(s.zoneSpread)
	if err := s.opts.Validate(); err != nil {
		log.Error(err, "invalid configuration")
		return 2
	}
	if err := checkFieldManager(s.fieldManager); err != nil {
		log.Error(err, "invalid configuration")
		return 2
	}
	if err := s.serve(rt); err != nil {
		log.Error(err, "stopped")
		return 1
	}
	return 0
}

func defaults() *settings {
	s := &settings{opts: controller.DefaultOptions()}
	s.zoneSpread = string(s.opts.DefaultZoneSpread)
	if v := os.Getenv("DEFAULT_ZONE_SPREAD"); v != "" {
		s.zoneSpread = v
	}
	s.opts.Namespace = ownNamespace(s.opts.Namespace)
	s.opts.RestoreFeedHost = os.Getenv("POD_IP")
	return s
}

func (s *settings) bind(fs *flag.FlagSet) {
	opts := &s.opts
	fs.StringVar(&s.metricsAddr, "metrics-bind-address", ":8443", "Address of the Prometheus /metrics endpoint; 0 disables it.")
	fs.BoolVar(&s.metricsSafe, "metrics-secure", true, "Serve /metrics over HTTPS to callers the apiserver authenticates and authorizes; false serves plain HTTP to anyone who can connect.")
	fs.StringVar(&s.metricsCerts, "metrics-cert-dir", "", "Directory with tls.crt and tls.key for /metrics (default: a self-signed certificate).")
	fs.StringVar(&s.probeAddr, "health-probe-bind-address", ":8081", "Address of the /healthz and /readyz endpoints.")
	fs.StringVar(&s.pprofAddr, "pprof-bind-address", "", "Address of Go's /debug/pprof endpoints, for profiling the operator's CPU and memory; empty (the default) disables them.")
	fs.BoolVar(&s.leaderElect, "leader-elect", false, "Elect a leader so several replicas can run with one active.")
	fs.StringVar(&s.leaderNS, "leader-election-namespace", "", "Namespace of the leader election Lease (default: the pod's namespace).")
	fs.StringVar(&opts.ClusterDomain, "cluster-domain", opts.ClusterDomain, "DNS suffix of per-pod names.")
	fs.StringVar(&s.zoneSpread, "default-zone-spread", s.zoneSpread, "Zone spread for clusters that do not set one: bestEffort or required (env DEFAULT_ZONE_SPREAD).")
	fs.IntVar(&opts.ClusterWorkers, "cluster-workers", opts.ClusterWorkers, "How many ValkeyClusters are reconciled at once (never the same one twice).")
	fs.IntVar(&opts.WaveConcurrency, "wave-concurrency", opts.WaveConcurrency, "How many independent actions of one cluster's wave run at once.")
	fs.DurationVar(&opts.SampleInterval, "sample-interval", opts.SampleInterval, "How often every node's utilisation is sampled and autoscaling decided.")
	fs.StringVar(&opts.Namespace, "operator-namespace", opts.Namespace, "The operator's namespace: metering records are kept there, and each cluster's NetworkPolicy admits it to the client port (default: env POD_NAMESPACE, then the service account's namespace).")
	fs.DurationVar(&opts.MeteringInterval, "metering-interval", opts.MeteringInterval, "How often every cluster's metering record is advanced.")
	fs.DurationVar(&opts.CredentialsSettle, "credentials-settle", opts.CredentialsSettle, "How long a credentials rotation keeps accepting the previous passwords after the switch; at least the kubelet's delay in refreshing a mounted Secret.")
	fs.StringVar(&opts.ExporterImage, "exporter-image", opts.ExporterImage, "Image of the metrics exporter run next to Valkey when a ValkeyConfig enables it (spec.exporter).")
	fs.BoolVar(&opts.FilterCache, "filter-cache", opts.FilterCache, "Cache only the Secrets and Pods the operator labeled; false caches every Secret and Pod of the cluster (more memory, for comparison).")
	fs.Func("watch-namespaces", "Comma-separated namespaces whose ValkeyClusters the operator manages, and the only ones it reads or writes namespaced objects in besides its own metering records (default: every namespace).", func(v string) error {
		opts.WatchNamespaces = controller.SplitNamespaces(v)
		return nil
	})
	fs.StringVar(&opts.RestoreFeedAddress, "restore-feed-bind-address", opts.RestoreFeedAddress, "Address the operator listens on, once a restore needs it, for the scratch servers that load a backup's files from it.")
	fs.StringVar(&opts.RestoreFeedHost, "restore-feed-host", opts.RestoreFeedHost, "Address restore loaders dial to reach the operator (default: env POD_IP).")
	fs.StringVar(&s.fieldManager, "field-manager", "", "Name the apiserver records the operator's writes under (managedFields) and the first word of its requests' User-Agent (default: the binary's name, valkey-operator); give each of several installs on one Kubernetes cluster its own.")
	fs.BoolVar(&s.printVersion, "version", false, "Print the version and exit.")
	// controller-runtime registers --kubeconfig globally and reads it there.
	if f := flag.CommandLine.Lookup("kubeconfig"); f != nil {
		fs.Var(f.Value, f.Name, f.Usage)
	}
	s.zap.BindFlags(fs)
}

// serve runs the manager and its controllers until a signal stops them.
func (s *settings) serve(rt controller.Runtime) error {
	scheme, err := controller.NewScheme()
	if err != nil {
		return fmt.Errorf("building scheme: %w", err)
	}
	cfg, err := ctrl.GetConfig()
	if err != nil {
		return fmt.Errorf("reading the kubeconfig: %w", err)
	}
	if s.fieldManager != "" {
		cfg.UserAgent = userAgent(s.fieldManager, version.Version)
	}
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Scheme:                  scheme,
		Cache:                   controller.CacheOptions(s.opts),
		Metrics:                 controller.MetricsServer(s.metricsAddr, s.metricsSafe, s.metricsCerts),
		HealthProbeBindAddress:  s.probeAddr,
		PprofBindAddress:        s.pprofAddr,
		LeaderElection:          s.leaderElect,
		LeaderElectionID:        LeaderElectionID,
		LeaderElectionNamespace: s.leaderNS,
		// A new leader must not act on a stale view of the old one's work.
		LeaderElectionReleaseOnCancel: true,
	})
	if err != nil {
		return fmt.Errorf("creating manager: %w", err)
	}
	if err := controller.SetupWithRuntime(mgr, s.opts, rt); err != nil {
		return fmt.Errorf("setting up controllers: %w", err)
	}
	if err := errors.Join(mgr.AddHealthzCheck("healthz", healthz.Ping), mgr.AddReadyzCheck("readyz", healthz.Ping)); err != nil {
		return fmt.Errorf("adding health checks: %w", err)
	}
	if err := mgr.Start(ctrl.SetupSignalHandler()); err != nil {
		return fmt.Errorf("manager stopped: %w", err)
	}
	return nil
}

// userAgent is the User-Agent that makes the apiserver record writes under
// manager: for a create, update or patch that names no field manager, it
// takes the User-Agent up to its first slash.
func userAgent(manager, version string) string {
	return manager + "/" + version
}

// checkFieldManager refuses a name the apiserver would not record as
// given: it cuts the User-Agent at the first slash and keeps 128 bytes.
func checkFieldManager(name string) error {
	switch {
	case strings.ContainsAny(name, "/ "):
		return fmt.Errorf("field manager %q: must hold no slash or space", name)
	case len(name) > 128:
		return fmt.Errorf("field manager %q: must be at most 128 bytes", name)
	}
	return nil
}

// serviceAccountNamespace is where Kubernetes tells a pod its namespace.
const serviceAccountNamespace = "/var/run/secrets/kubernetes.io/serviceaccount/namespace"

// ownNamespace is the pod's namespace: POD_NAMESPACE (the Deployment sets
// it from the downward API), else the service account's, else def.
func ownNamespace(def string) string {
	if ns := os.Getenv("POD_NAMESPACE"); ns != "" {
		return ns
	}
	if b, err := os.ReadFile(serviceAccountNamespace); err == nil && strings.TrimSpace(string(b)) != "" {
		return strings.TrimSpace(string(b))
	}
	return def
}
