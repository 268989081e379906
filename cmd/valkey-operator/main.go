// Command valkey-operator runs the Valkey operator's controllers.
package main

import (
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

func main() {
	opts := controller.DefaultOptions()
	var (
		metricsAddr  string
		metricsSafe  bool
		metricsCerts string
		probeAddr    string
		leaderElect  bool
		leaderNS     string
		zoneSpread   = string(opts.DefaultZoneSpread)
		printVersion bool
	)
	if v := os.Getenv("DEFAULT_ZONE_SPREAD"); v != "" {
		zoneSpread = v
	}
	opts.Namespace = ownNamespace(opts.Namespace)
	flag.StringVar(&metricsAddr, "metrics-bind-address", ":8443", "Address of the Prometheus /metrics endpoint; 0 disables it.")
	flag.BoolVar(&metricsSafe, "metrics-secure", true, "Serve /metrics over HTTPS to callers the apiserver authenticates and authorizes; false serves plain HTTP to anyone who can connect.")
	flag.StringVar(&metricsCerts, "metrics-cert-dir", "", "Directory with tls.crt and tls.key for /metrics (default: a self-signed certificate).")
	flag.StringVar(&probeAddr, "health-probe-bind-address", ":8081", "Address of the /healthz and /readyz endpoints.")
	flag.BoolVar(&leaderElect, "leader-elect", false, "Elect a leader so several replicas can run with one active.")
	flag.StringVar(&leaderNS, "leader-election-namespace", "", "Namespace of the leader election Lease (default: the pod's namespace).")
	flag.StringVar(&opts.ClusterDomain, "cluster-domain", opts.ClusterDomain, "DNS suffix of per-pod names.")
	flag.StringVar(&zoneSpread, "default-zone-spread", zoneSpread, "Zone spread for clusters that do not set one: bestEffort or required (env DEFAULT_ZONE_SPREAD).")
	flag.IntVar(&opts.ClusterWorkers, "cluster-workers", opts.ClusterWorkers, "How many ValkeyClusters are reconciled at once (never the same one twice).")
	flag.IntVar(&opts.WaveConcurrency, "wave-concurrency", opts.WaveConcurrency, "How many independent actions of one cluster's wave run at once.")
	flag.DurationVar(&opts.SampleInterval, "sample-interval", opts.SampleInterval, "How often every node's utilisation is sampled and autoscaling decided.")
	flag.StringVar(&opts.Namespace, "operator-namespace", opts.Namespace, "The operator's namespace: metering records are kept there, and each cluster's NetworkPolicy admits it to the client port (default: env POD_NAMESPACE, then the service account's namespace).")
	flag.DurationVar(&opts.MeteringInterval, "metering-interval", opts.MeteringInterval, "How often every cluster's metering record is advanced.")
	flag.DurationVar(&opts.CredentialsSettle, "credentials-settle", opts.CredentialsSettle, "How long a credentials rotation keeps accepting the previous passwords after the switch; at least the kubelet's delay in refreshing a mounted Secret.")
	flag.StringVar(&opts.ExporterImage, "exporter-image", opts.ExporterImage, "Image of the metrics exporter run next to Valkey when a ValkeyConfig enables it (spec.exporter).")
	flag.BoolVar(&opts.FilterCache, "filter-cache", opts.FilterCache, "Cache only the Secrets and Pods the operator labeled; false caches every Secret and Pod of the cluster (more memory, for comparison).")
	flag.Func("watch-namespaces", "Comma-separated namespaces whose ValkeyClusters the operator manages, and the only ones it reads or writes namespaced objects in besides its own metering records (default: every namespace).", func(v string) error {
		opts.WatchNamespaces = controller.SplitNamespaces(v)
		return nil
	})
	flag.BoolVar(&printVersion, "version", false, "Print the version and exit.")
	zapOpts := zap.Options{}
	zapOpts.BindFlags(flag.CommandLine)
	flag.Parse()

	if printVersion {
		fmt.Println(version.Version)
		return
	}
	ctrl.SetLogger(zap.New(zap.UseFlagOptions(&zapOpts)))
	log := ctrl.Log.WithName("setup")
	log.Info("starting valkey-operator", "version", version.Version, "clusterDomain", opts.ClusterDomain, "defaultZoneSpread", zoneSpread, "watchNamespaces", opts.WatchNamespaces)

	opts.DefaultZoneSpread = valkeyv1.ZoneSpread(zoneSpread)
	if err := opts.Validate(); err != nil {
		log.Error(err, "invalid configuration")
		os.Exit(2)
	}

	scheme, err := controller.NewScheme()
	if err != nil {
		log.Error(err, "building scheme")
		os.Exit(1)
	}
	mgr, err := ctrl.NewManager(ctrl.GetConfigOrDie(), ctrl.Options{
		Scheme:                  scheme,
		Cache:                   controller.CacheOptions(opts),
		Metrics:                 controller.MetricsServer(metricsAddr, metricsSafe, metricsCerts),
		HealthProbeBindAddress:  probeAddr,
		LeaderElection:          leaderElect,
		LeaderElectionID:        "valkey-operator.valkey.gomomento.com",
		LeaderElectionNamespace: leaderNS,
		// A new leader must not act on a stale view of the old one's work.
		LeaderElectionReleaseOnCancel: true,
	})
	if err != nil {
		log.Error(err, "creating manager")
		os.Exit(1)
	}
	if err := controller.Setup(mgr, opts); err != nil {
		log.Error(err, "setting up controllers")
		os.Exit(1)
	}
	if err := mgr.AddHealthzCheck("healthz", healthz.Ping); err != nil {
		log.Error(err, "adding health check")
		os.Exit(1)
	}
	if err := mgr.AddReadyzCheck("readyz", healthz.Ping); err != nil {
		log.Error(err, "adding readiness check")
		os.Exit(1)
	}
	if err := mgr.Start(ctrl.SetupSignalHandler()); err != nil {
		log.Error(err, "manager stopped")
		os.Exit(1)
	}
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
