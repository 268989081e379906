package controller

// Condition types on ValkeyCluster status: the one place that names them.
const (
	// CondReady is True when the cluster is Active and serving every slot.
	CondReady = "Ready"
	// CondProgressing is True while bootstrap, a roll, a scale or recovery is under way.
	CondProgressing = "Progressing"
	// CondDegraded is True when a shard lacks a healthy primary or replicas.
	CondDegraded = "Degraded"
	// CondTLSValid reports the TLS Secret validation (TLS clusters only).
	CondTLSValid = "TLSValid"
	// CondCertificateExpiringSoon is True within 30 days of the leaf's notAfter.
	CondCertificateExpiringSoon = "CertificateExpiringSoon"
	// CondReferencesResolved reports the config chain, image and roles.
	CondReferencesResolved = "ReferencesResolved"
	// CondDefaultUserOpen warns that the default user is open (no ACL bindings).
	CondDefaultUserOpen = "DefaultUserOpen"
	// CondCertificatesServed reports whether every node serves the Secret's certificate.
	CondCertificatesServed = "CertificatesServed"
	// CondACLApplied reports whether every node loaded the rendered ACL file.
	CondACLApplied = "ACLApplied"
)

// Reasons used with the conditions above and as Event reasons.
const (
	ReasonFormed             = "ClusterFormed"
	ReasonBootstrapping      = "Bootstrapping"
	ReasonInvalid            = "Invalid"
	ReasonConverged          = "Converged"
	ReasonWaiting            = "Waiting"
	ReasonHealthy            = "Healthy"
	ReasonValid              = "Valid"
	ReasonResolved           = "Resolved"
	ReasonUnresolved         = "Unresolved"
	ReasonNotExpiring        = "NotExpiring"
	ReasonNoBindings         = "NoBindings"
	ReasonBindingsPresent    = "BindingsPresent"
	ReasonUnreachable        = "NodeUnreachable"
	ReasonActionFailed       = "ActionFailed"
	ReasonRotationComplete   = "RotationComplete"
	ReasonRotationInProgress = "RotationInProgress"
	ReasonReloadFailed       = "ReloadFailed"
)

// Reasons of the CertificatesServed condition beyond those above.
const (
	// ReasonServingCurrent: every node serves the Secret's certificate.
	ReasonServingCurrent = "ServingCurrent"
)

// Reasons of the ACLApplied condition beyond those above.
const (
	// ReasonACLCurrent: every node's ACL LIST matches the rendered file.
	ReasonACLCurrent = "ACLCurrent"
	// ReasonACLRejected: a node's ACL LOAD failed; it keeps its previous rules.
	ReasonACLRejected = "ACLRejected"
	// ReasonACLPending: a node loaded its mounted file, which is not the
	// rendered one yet.
	ReasonACLPending = "ACLPending"
	// ReasonACLLoadUnsafe: a replica runs other rules than the rendered file
	// and a Valkey release that crashes on ACL LOAD, so it is not reloaded.
	ReasonACLLoadUnsafe = "ACLLoadUnsafe"
)
