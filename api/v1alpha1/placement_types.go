package v1alpha1

import corev1 "k8s.io/api/core/v1"

// ZoneSpread is how strictly a shard's members are spread across zones.
// +kubebuilder:validation:Enum=bestEffort;required
type ZoneSpread string

const (
	ZoneSpreadBestEffort ZoneSpread = "bestEffort"
	ZoneSpreadRequired   ZoneSpread = "required"
)

// Placement says where a cluster's pods may run.
type Placement struct {
	// Zones the pods must run in (required node affinity on
	// topology.kubernetes.io/zone). Compared as a set: order is irrelevant.
	// +optional
	// +kubebuilder:validation:MaxItems=32
	// +listType=set
	Zones []string `json:"zones,omitempty"`

	// ZoneSpread is the strictness of the per-shard zone spread; the
	// operator's default applies when unset. Affects only pods created later.
	// +optional
	ZoneSpread ZoneSpread `json:"zoneSpread,omitempty"`

	// NodeSelector is copied verbatim to every pod.
	// +optional
	NodeSelector map[string]string `json:"nodeSelector,omitempty"`
}

// PodSettings are the pod settings a platform team chooses for every
// cluster that uses a config: where the pods may run, how urgent they are,
// where their image comes from and what they are labelled with. Each field
// is inherited along baseRef like the rest of a config: a list or a
// setting is taken whole from the first config, child to root, that sets
// it; labels, annotations and nodeSelector are merged key by key, a
// child's value overriding its parent's; an empty list is set, and clears
// the inherited one. The operator's own settings (the
// security context, probes, the hand-over hook, its labels) cannot be
// changed here. See docs/placement.md.
type PodSettings struct {
	// Tolerations added to the one the operator sets (arm64 nodes tainted
	// for architecture). Changing them replaces the nodes one at a time.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=32
	// +kubebuilder:validation:XValidation:rule="self.all(t, !has(t.operator) || t.operator != 'Exists' || !has(t.value) || t.value == '')",message="spec.pod.tolerations: a toleration with operator Exists takes no value"
	// +kubebuilder:validation:XValidation:rule="self.all(t, has(t.key) && t.key != '' || has(t.operator) && t.operator == 'Exists')",message="spec.pod.tolerations: a toleration without a key must have operator Exists"
	// +kubebuilder:validation:XValidation:rule="self.all(t, !has(t.tolerationSeconds) || has(t.effect) && t.effect == 'NoExecute')",message="spec.pod.tolerations: tolerationSeconds applies only to effect NoExecute"
	Tolerations []corev1.Toleration `json:"tolerations,omitzero"`

	// Affinity of the pods: node affinity, pod affinity and anti-affinity,
	// as in a pod spec. Required node affinity is combined with the zones
	// of a cluster's placement (both must hold). Changing it replaces the
	// nodes one at a time.
	// +optional
	Affinity *corev1.Affinity `json:"affinity,omitempty"`

	// PriorityClassName of the pods, so a cache is not evicted before batch
	// work. Changing it replaces the nodes one at a time.
	// +optional
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:XValidation:rule="self.matches('^[a-z0-9]([-a-z0-9]*[a-z0-9])?([.][a-z0-9]([-a-z0-9]*[a-z0-9])?)*$')",message="spec.pod.priorityClassName must be a DNS subdomain name: lower-case letters, digits, '-' and '.'"
	PriorityClassName string `json:"priorityClassName,omitempty"`

	// ImagePullSecrets in the cluster's namespace, used to pull the Valkey
	// and exporter images from a private registry. Changing them replaces
	// the nodes one at a time.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=16
	ImagePullSecrets []PullSecretRef `json:"imagePullSecrets,omitzero"`

	// Labels added to the pods, for cost allocation or policy engines. The
	// operator's own labels cannot be set. Applied to running pods in place.
	// +optional
	// +kubebuilder:validation:MaxProperties=64
	// +kubebuilder:validation:XValidation:rule="self.all(k, k.matches('^([a-z0-9]([-a-z0-9]*[a-z0-9])?([.][a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$') && k.split('/')[k.split('/').size() - 1].size() <= 63 && (k.split('/').size() == 1 || k.split('/')[0].size() <= 253))",message="spec.pod.labels: keys must be valid label keys ([prefix/]name, name at most 63 characters)"
	// +kubebuilder:validation:XValidation:rule="self.all(k, !(k in ['app.kubernetes.io/name', 'app.kubernetes.io/instance', 'app.kubernetes.io/managed-by']) && !k.startsWith('valkey.gomomento.com/'))",message="spec.pod.labels: app.kubernetes.io/name, app.kubernetes.io/instance, app.kubernetes.io/managed-by and keys under valkey.gomomento.com/ are the operator's"
	Labels map[string]LabelValue `json:"labels,omitempty"`

	// Annotations added to the pods; a cluster's podAnnotations override
	// them key by key. Applied to running pods in place.
	// +optional
	// +kubebuilder:validation:MaxProperties=64
	// +kubebuilder:validation:XValidation:rule="self.all(k, !k.startsWith('valkey.gomomento.com/'))",message="spec.pod.annotations: keys with the prefix valkey.gomomento.com/ are reserved for the operator"
	// +kubebuilder:validation:XValidation:rule="self.all(k, k.matches('^([a-z0-9]([-a-z0-9]*[a-z0-9])?([.][a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$'))",message="spec.pod.annotations: keys must be valid annotation keys ([prefix/]name)"
	Annotations map[string]string `json:"annotations,omitempty"`

	// TopologySpreadConstraints added to the operator's own (each shard's
	// members over hosts and zones). A constraint with the topologyKey and
	// whenUnsatisfiable of one of the operator's cannot be added beside it
	// (a pod carries one per key and mode): it is reported in the
	// cluster's PlacementApplied condition and the operator's is kept. A
	// constraint without a labelSelector counts the cluster's own pods.
	// Changing them replaces the nodes one at a time.
	// +optional
	// +listType=map
	// +listMapKey=topologyKey
	// +listMapKey=whenUnsatisfiable
	// +kubebuilder:validation:MaxItems=16
	// +kubebuilder:validation:XValidation:rule="self.all(c, c.maxSkew >= 1)",message="spec.pod.topologySpreadConstraints: maxSkew must be at least 1"
	// +kubebuilder:validation:XValidation:rule="self.all(c, c.topologyKey != '')",message="spec.pod.topologySpreadConstraints: topologyKey must be set"
	// +kubebuilder:validation:XValidation:rule="self.all(c, c.whenUnsatisfiable in ['DoNotSchedule', 'ScheduleAnyway'])",message="spec.pod.topologySpreadConstraints: whenUnsatisfiable must be DoNotSchedule or ScheduleAnyway"
	TopologySpreadConstraints []corev1.TopologySpreadConstraint `json:"topologySpreadConstraints,omitzero"`

	// NodeSelector every pod of the config's clusters carries. A cluster's
	// placement.nodeSelector may add keys (narrowing) but not give one of
	// these another value: the config's value is kept and the cluster
	// reports the contradiction. Changing it replaces the nodes.
	// +optional
	// +kubebuilder:validation:MaxProperties=32
	NodeSelector map[string]string `json:"nodeSelector,omitempty"`
}

// NodePod is the snapshot of a config's pod settings a node is created
// with. A change of the scheduling fields means a replacement node; labels
// and annotations are read when the pod is created, and later edits reach
// the running pods in place from the cluster, not through this snapshot.
type NodePod struct {
	// +optional
	Labels map[string]string `json:"labels,omitempty"`
	// +optional
	Annotations map[string]string `json:"annotations,omitempty"`
	// +optional
	// +listType=atomic
	Tolerations []corev1.Toleration `json:"tolerations,omitempty"`
	// +optional
	Affinity *corev1.Affinity `json:"affinity,omitempty"`
	// +optional
	PriorityClassName string `json:"priorityClassName,omitempty"`
	// +optional
	// +listType=atomic
	ImagePullSecrets []corev1.LocalObjectReference `json:"imagePullSecrets,omitempty"`
	// +optional
	// +listType=atomic
	TopologySpreadConstraints []corev1.TopologySpreadConstraint `json:"topologySpreadConstraints,omitempty"`
}

// LabelValue is a Kubernetes label value: at most 63 characters,
// alphanumeric at both ends, '-', '_' and '.' between, or empty.
// +kubebuilder:validation:MaxLength=63
// +kubebuilder:validation:Pattern=`^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$`
type LabelValue string

// LabelMap returns labels as plain strings, as object metadata holds them.
func LabelMap(labels map[string]LabelValue) map[string]string {
	if labels == nil {
		return nil
	}
	out := make(map[string]string, len(labels))
	for k, v := range labels {
		out[k] = string(v)
	}
	return out
}

// PullSecretRef names a Secret of the cluster's namespace holding registry
// credentials (type kubernetes.io/dockerconfigjson), as a pod's
// imagePullSecrets do.
type PullSecretRef struct {
	// Name of the Secret.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?([.][a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`
	Name string `json:"name"`
}
