package controller

// The operator's ClusterRole: make generate turns these markers into
// config/rbac/role.yaml, and TestClusterRoleMatchesCode fails when they
// grant more or less than the code here calls. Reads through the manager's
// cache need list and watch only; get is granted where a read goes around
// the cache (the API reader). Leader election is not here: its Lease and
// Events are granted by a Role in the operator's own namespace. A
// namespace-scoped install (--watch-namespaces) grants the same rules split
// by where each resource lives; a resource new to these markers must be
// placed in rbacscope.Scopes, or make generate fails.
//
// The kinds the operator owns, and the users' clusters, whose finalizer it
// patches and whose status every controller writes:
// +kubebuilder:rbac:groups=valkey.gomomento.com,resources=valkeyclusters,verbs=get;list;watch;patch
// +kubebuilder:rbac:groups=valkey.gomomento.com,resources=valkeyclusters/status,verbs=update;patch
// +kubebuilder:rbac:groups=valkey.gomomento.com,resources=valkeynodes,verbs=get;list;watch;create;patch;delete
// +kubebuilder:rbac:groups=valkey.gomomento.com,resources=valkeynodes/status,verbs=patch
//
// Backups: read, and their status written as each one runs; created at a
// schedule's due times and deleted when out of its retention:
// +kubebuilder:rbac:groups=valkey.gomomento.com,resources=valkeybackups,verbs=list;watch;create;delete
// +kubebuilder:rbac:groups=valkey.gomomento.com,resources=valkeybackups/status,verbs=update
// +kubebuilder:rbac:groups=valkey.gomomento.com,resources=valkeyscheduledbackups,verbs=list;watch
// +kubebuilder:rbac:groups=valkey.gomomento.com,resources=valkeyscheduledbackups/status,verbs=update
//
// Metering records, one per cluster in the operator's namespace: created,
// advanced and released, never deleted by the operator:
// +kubebuilder:rbac:groups=valkey.gomomento.com,resources=valkeymeteringrecords,verbs=list;watch;create;patch
// +kubebuilder:rbac:groups=valkey.gomomento.com,resources=valkeymeteringrecords/status,verbs=patch
//
// Owner references that block the owner's deletion (ValkeyNodes and the
// cluster's objects on the cluster, pods and ConfigMaps on their node):
// +kubebuilder:rbac:groups=valkey.gomomento.com,resources=valkeyclusters/finalizers;valkeynodes/finalizers,verbs=update
//
// The platform team's menu, read; each object carries a finalizer that
// holds its deletion, with a status condition saying why, while a config
// or cluster uses it (the configs and clusters that decide it are listed
// around the cache); a config's or image's rollout status records the
// clusters rolling because of it, and the release annotation is removed
// once served:
// +kubebuilder:rbac:groups=valkey.gomomento.com,resources=valkeyconfigs;valkeyimages;valkeyroles,verbs=list;watch;patch
// +kubebuilder:rbac:groups=valkey.gomomento.com,resources=valkeyconfigs/status;valkeyimages/status;valkeyroles/status,verbs=patch
// +kubebuilder:rbac:groups=valkey.gomomento.com,resources=valkeyconfigs/status;valkeyimages/status,verbs=update
//
// A node's pod is created once, annotated (and relabelled, if someone
// removed its labels) in place and deleted, never updated; a pod missing
// from the label-filtered cache is read by name (get) before anything
// treats it as gone. A restore's scratch servers (loaders) are pods too,
// created, read by name and deleted one by one, with their Secret. A node's
// ConfigMap is never read back: created, and its valkey.conf patched when
// live settings recorded on the node change it:
// +kubebuilder:rbac:groups="",resources=pods,verbs=get;list;watch;create;patch;delete
//
// The readiness gate valkey.gomomento.com/synced is a pod status condition:
// +kubebuilder:rbac:groups="",resources=pods/status,verbs=patch
// +kubebuilder:rbac:groups="",resources=configmaps,verbs=create;patch;delete
//
// A persistent node's claim is created with its first pod and collected
// with it (owner reference); its request is raised when persistence.size
// grows, and the cluster watches its capacity follow. Whether its
// StorageClass allows expansion is read around the cache, only when a
// claim is to grow. The claim is read around the cache before the node's
// pod is created again on it, and, while the node's pod does not run, so
// are the claim's volume and the Kubernetes node the volume is pinned to:
// proof that the node's data is gone for good:
// +kubebuilder:rbac:groups="",resources=persistentvolumeclaims,verbs=get;create;list;watch;patch
// +kubebuilder:rbac:groups=storage.k8s.io,resources=storageclasses,verbs=get
// +kubebuilder:rbac:groups="",resources=persistentvolumes,verbs=get
// +kubebuilder:rbac:groups="",resources=nodes,verbs=list
//
// The auth, ACL and node TLS Secrets, and the user's TLS Secret (get, read
// around the cache, which holds only the operator's own Secrets); delete
// only the copy of the operator's passwords once it has restored them:
// +kubebuilder:rbac:groups="",resources=secrets,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups="",resources=services,verbs=list;watch;create;update
// +kubebuilder:rbac:groups=policy,resources=poddisruptionbudgets,verbs=list;watch;create;update;delete
// +kubebuilder:rbac:groups=networking.k8s.io,resources=networkpolicies,verbs=list;watch;create;update;delete
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch
//
// The metrics endpoint asks the apiserver who a scraper is and whether it
// may read /metrics (MetricsServer):
// +kubebuilder:rbac:groups=authentication.k8s.io,resources=tokenreviews,verbs=create
// +kubebuilder:rbac:groups=authorization.k8s.io,resources=subjectaccessreviews,verbs=create
