package controller

// A controller that writes what another controller acts on must also make
// sure that controller hears of it: most watches here filter their updates
// (the cluster controller ignores status writes, since it makes most of
// them itself), and a write that passes no filter waits for a periodic
// pass, minutes later. Handoffs lists every kind of write the controllers
// make, with who acts on it and how they are woken; the package's tests
// hold it to the code, so a new write cannot land without its wake being
// thought of.

// A Handoff is one package's writes of one resource.
type Handoff struct {
	// Writer is the package under internal/controller whose code decides
	// the write ("controller" for this package itself). A shared helper
	// (clusterstatus, finalizer) writes for the package that calls it.
	Writer string
	// Resource is what it writes, as an RBAC rule names it:
	// "valkeyclusters/status", "pods".
	Resource string
	// What is the part written.
	What string
	// Wakes are the other controllers that act on the write.
	Wakes []Wake
	// NoConsumer says why no other controller acts on it, when Wakes is
	// empty.
	NoConsumer string
}

// A Wake is one controller acting on a write, and how it hears of it.
type Wake struct {
	// Consumer is the controller, by the name it is registered under.
	Consumer string
	// By is the watch, predicate or channel that wakes it at once, by its
	// Go name; for one that is not woken at once, what brings it round.
	By string
}

// Handoffs are the operator's writes, by writer and resource.
var Handoffs = []Handoff{
	{
		Writer: "autoscaler", Resource: "valkeyclusters/status",
		What:  "status.autoscaling (desiredShards, the decision) and the Autoscaling condition",
		Wakes: []Wake{{Consumer: "valkeycluster", By: "watch.HandedOver on its For(ValkeyCluster): desiredShards moved"}},
	},
	{
		Writer: "autoscaler", Resource: "valkeynodes/status",
		What: "status.utilisation, the node's samples",
		// The cluster controller filters samples out (autoscaler.IgnoreNewSamples):
		// they are not what it decides from, and a wake per sample per node
		// would cost a reconcile each.
		Wakes: []Wake{{Consumer: "valkeymeteringrecord", By: "its Watches(ValkeyNode) with figureChanged: a higher peak moves the billed figure"}},
	},

	{
		Writer: "backup", Resource: "pods",
		What:       "the restore's loader pods, created and deleted",
		NoConsumer: "the restore controller's own loaders, which it waits on within the pass that creates them; they carry no instance label, so no node watch maps them",
	},
	{
		Writer: "backup", Resource: "secrets",
		What:       "the restore loaders' password Secret, created and deleted",
		NoConsumer: "read only by the restore controller that made it, in the same pass",
	},
	{
		Writer: "backup", Resource: "valkeybackups",
		What: "a schedule's backups: created when due, deleted when out of retention",
		Wakes: []Wake{
			{Consumer: "valkeybackup", By: "its For(ValkeyBackup): the creation"},
			{Consumer: "restore", By: "Watches(ValkeyBackup) with restoresFromBackup: a deletion passes backupPhaseChanged"},
		},
	},
	{
		Writer: "backup", Resource: "valkeybackups/status",
		What: "status.phase and the backup's outcome",
		Wakes: []Wake{
			{Consumer: "restore", By: "Watches(ValkeyBackup) with restoresFromBackup and backupPhaseChanged"},
			{Consumer: "valkeyscheduledbackup", By: "Owns(ValkeyBackup): a finished backup may put an older one out of retention"},
		},
	},
	{
		Writer: "backup", Resource: "valkeyclusters/status",
		What:  "status.restore, the restore's progress",
		Wakes: []Wake{{Consumer: "valkeycluster", By: "watch.HandedOver on its For(ValkeyCluster): status.restore changed"}},
	},
	{
		Writer: "backup", Resource: "valkeyscheduledbackups/status",
		What:       "the schedule's last and next backup",
		NoConsumer: "for people; the schedule's own due times come from its RequeueAfter",
	},

	{
		Writer: "cluster", Resource: "pods",
		What:       "spec.podAnnotations added to running pods; the operator's labels put back on a pod that lost them",
		NoConsumer: "the annotations are the user's; the labels are what the pod watches map a pod to its cluster by, and the cluster controller restoring them already holds that cluster",
	},
	{
		Writer: "cluster", Resource: "pods/status",
		What:       "the Synced readiness-gate condition",
		NoConsumer: "for Kubernetes: the kubelet derives the pod's Ready from it, which the Service and the PodDisruptionBudget read",
	},
	{
		Writer: "cluster", Resource: "secrets",
		What: "the operator's Secrets of a cluster (auth, ACL file, node TLS copy) and their credentials finalizer",
		// The pods mount these, and every dial reads the auth Secret afresh:
		// only the reloaders act on a change.
		Wakes: []Wake{
			{Consumer: "aclreload", By: "Watches(Secret) with watch.ToCluster(render.ACLSecretName)"},
			{Consumer: "tlsreload", By: "Watches(Secret) with watch.ToCluster(render.NodeTLSSecretName)"},
		},
	},
	{
		Writer: "cluster", Resource: "services",
		What:       "the cluster's headless Service",
		NoConsumer: "for Kubernetes' DNS and endpoints",
	},
	{
		Writer: "cluster", Resource: "networkpolicies",
		What:       "the cluster's NetworkPolicy",
		NoConsumer: "for the network plugin",
	},
	{
		Writer: "cluster", Resource: "poddisruptionbudgets",
		What:       "the cluster's PodDisruptionBudget",
		NoConsumer: "for Kubernetes' eviction",
	},
	{
		Writer: "cluster", Resource: "valkeyclusters",
		What: "the cluster finalizer, whose removal lets a deleted cluster go; the replacement-backoff annotation",
		// The annotation is the cluster controller's own memory and wakes
		// only itself; the finalizer's removal is what the others hear of,
		// as the cluster's deletion.
		Wakes: []Wake{
			{Consumer: "valkeyimage-protection", By: "Watches(ValkeyCluster) with its deleted handler: the cluster may have been an image's last user"},
			{Consumer: "valkeyconfig-protection", By: "Watches(ValkeyCluster) with its deleted handler"},
			{Consumer: "valkeyrole-protection", By: "Watches(ValkeyCluster) with its deleted handler"},
			{Consumer: "valkeymeteringrecord", By: "Watches(ValkeyCluster) with byCluster: the deletion closes the record"},
		},
	},
	{
		Writer: "cluster", Resource: "valkeyclusters/status",
		What: "the state and the conditions (Ready with reason Restoring, Progressing, the TLS and data conditions), the data-loss report",
		Wakes: []Wake{
			{Consumer: "restore", By: "its For(ValkeyCluster): every update of a cluster with spec.restore passes withRestore"},
			{Consumer: "autoscaler", By: "watch.ClusterChangedFor(Progressing) on its For(ValkeyCluster)"},
			{Consumer: "tlsreload", By: "watch.ClusterChangedFor(CertificatesServed, sameServedCounts): the state moved, or the patch undid its condition"},
			{Consumer: "aclreload", By: "watch.ClusterChangedFor(ACLApplied): the state moved, or the patch undid its condition"},
			{Consumer: "valkeybackup", By: "Watches(ValkeyCluster) with backupsOfCluster and clusterStateChanged"},
		},
	},
	{
		Writer: "cluster", Resource: "valkeyconfigs",
		What:  "the rollout-release annotation removed once acted on",
		Wakes: []Wake{{Consumer: "valkeycluster", By: "Watches(ValkeyConfig) with clusterHandlers.allClusters: the other clusters' rollouts"}},
	},
	{
		Writer: "cluster", Resource: "valkeyconfigs/status",
		What:  "status.rollout, the slots the clusters take and give back",
		Wakes: []Wake{{Consumer: "valkeycluster", By: "Watches(ValkeyConfig) with clusterHandlers.allClusters: a slot given back lets a waiting cluster roll"}},
	},
	{
		Writer: "cluster", Resource: "valkeyimages",
		What:  "the rollout-release annotation removed once acted on",
		Wakes: []Wake{{Consumer: "valkeycluster", By: "Watches(ValkeyImage) with clusterHandlers.allClusters"}},
	},
	{
		Writer: "cluster", Resource: "valkeyimages/status",
		What:  "status.rollout, the slots the clusters take and give back",
		Wakes: []Wake{{Consumer: "valkeycluster", By: "Watches(ValkeyImage) with clusterHandlers.allClusters: a slot given back lets a waiting cluster roll"}},
	},
	{
		Writer: "cluster", Resource: "valkeynodes",
		What: "the nodes: created, deleted, their spec (lifecycle, valkeySettings, volume size) and annotations (a failover asked, live settings pending or refused) patched",
		Wakes: []Wake{
			{Consumer: "valkeynode", By: "its For(ValkeyNode)"},
			{Consumer: "valkeymeteringrecord", By: "its Watches(ValkeyNode) with figureChanged: a node added or removed, its maxmemory changed"},
		},
	},
	{
		Writer: "cluster", Resource: "valkeynodes/status",
		What: "the node's pod IP, Valkey ID, role and slots; the slots cleared once a loss is reported",
		// The cluster controller reads these back itself (a dead node's
		// identity, its lost slots); the autoscaler decides on its own tick
		// from samples, and takes the roles with them.
		Wakes: []Wake{{Consumer: "autoscaler", By: "not woken: the roles are read at its next sample tick (options.SampleInterval)"}},
	},

	{
		Writer: "metering", Resource: "valkeymeteringrecords",
		What:       "a cluster's record, created, and its finalizer",
		NoConsumer: "billing reads the records; no controller but metering's own acts on them",
	},
	{
		Writer: "metering", Resource: "valkeymeteringrecords/status",
		What:       "the metered GB-hours and the last sample",
		NoConsumer: "billing reads it",
	},

	{
		Writer: "node", Resource: "configmaps",
		What:       "the node's valkey.conf, created, rewritten and deleted",
		NoConsumer: "mounted into the node's pod; the cluster controller applies live settings itself",
	},
	{
		Writer: "node", Resource: "persistentvolumeclaims",
		What:  "the node's claim, created and expanded",
		Wakes: []Wake{{Consumer: "valkeycluster", By: "Watches(PersistentVolumeClaim) with clusterHandlers.byInstanceLabel: the VolumeSize condition moves on"}},
	},
	{
		Writer: "node", Resource: "pods",
		What: "the node's pod, created and deleted",
		Wakes: []Wake{
			{Consumer: "valkeycluster", By: "Watches(Pod) with clusterHandlers.byInstanceLabel, watch.ManagedPods and podChangesThatMatter"},
			{Consumer: "tlsreload", By: "Watches(Pod) with watch.ToCluster, watch.ManagedPods and watch.PodAddressChanged"},
			{Consumer: "aclreload", By: "Watches(Pod) with watch.ToCluster, watch.ManagedPods and watch.PodAddressChanged"},
		},
	},
	{
		Writer: "node", Resource: "valkeynodes",
		What: "the config-digest annotation; the node finalizer, whose removal lets a deleted node go",
		Wakes: []Wake{
			{Consumer: "valkeycluster", By: "Owns(ValkeyNode) with autoscaler.IgnoreNewSamples: the node's deletion"},
			{Consumer: "valkeymeteringrecord", By: "its Watches(ValkeyNode): the deletion passes figureChanged, which filters only updates"},
		},
	},
	{
		Writer: "node", Resource: "valkeynodes/status",
		What:  "the PodCreated condition",
		Wakes: []Wake{{Consumer: "valkeycluster", By: "Owns(ValkeyNode) with autoscaler.IgnoreNewSamples"}},
	},

	{
		Writer: "protection", Resource: "valkeyconfigs",
		What: "the in-use finalizer, whose removal lets a deleted config go",
		Wakes: []Wake{
			{Consumer: "valkeycluster", By: "Watches(ValkeyConfig) with clusterHandlers.allClusters"},
			// A config gone may have been the last use of an image, a role
			// or a parent config.
			{Consumer: "valkeyimage-protection", By: "Watches(ValkeyConfig) with its deleted handler"},
			{Consumer: "valkeyrole-protection", By: "Watches(ValkeyConfig) with its deleted handler"},
		},
	},
	{
		Writer: "protection", Resource: "valkeyconfigs/status",
		What:       "the DeletionBlocked condition",
		NoConsumer: "for people: it names who holds the deletion",
	},
	{
		Writer: "protection", Resource: "valkeyimages",
		What:  "the in-use finalizer, whose removal lets a deleted image go",
		Wakes: []Wake{{Consumer: "valkeycluster", By: "Watches(ValkeyImage) with clusterHandlers.allClusters"}},
	},
	{
		Writer: "protection", Resource: "valkeyimages/status",
		What:       "the DeletionBlocked condition",
		NoConsumer: "for people: it names who holds the deletion",
	},
	{
		Writer: "protection", Resource: "valkeyroles",
		What:  "the in-use finalizer, whose removal lets a deleted role go",
		Wakes: []Wake{{Consumer: "valkeycluster", By: "Watches(ValkeyRole) with clusterHandlers.allClusters"}},
	},
	{
		Writer: "protection", Resource: "valkeyroles/status",
		What:       "the DeletionBlocked condition",
		NoConsumer: "for people: it names who holds the deletion",
	},

	{
		Writer: "reload", Resource: "secrets",
		What: "the verified-leaves annotation on the node TLS copy",
		// Every dial reads the pins afresh; the cluster controller also
		// decides from them whether a CA rotation must be held.
		Wakes: []Wake{{Consumer: "valkeycluster", By: "Watches(Secret) with clusterHandlers.byOwnSecret"}},
	},
	{
		Writer: "reload", Resource: "valkeyclusters/status",
		What:       "the CertificatesServed and ACLApplied conditions",
		NoConsumer: "for people: no controller decides from them",
	},
}
