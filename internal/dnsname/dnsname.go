// Package dnsname is the one place that spells the DNS names a cluster's
// nodes are reached and verified by. The operator renders them into node
// configuration, the TLS validator requires them as SANs, the kubectl
// plugin dials them and test certificates carry them; if any of these
// spelled a name differently, TLS verification would fail only at run time.
// It imports nothing of the project, so every package can use it.
package dnsname

// DefaultClusterDomain is the Kubernetes cluster domain used when none is
// configured.
const DefaultClusterDomain = "cluster.local"

// Service is the name of a cluster's headless Service,
// {cluster}.{namespace}.svc.{domain}: the Service is named after the
// cluster. An empty domain is DefaultClusterDomain.
func Service(cluster, namespace, domain string) string {
	if domain == "" {
		domain = DefaultClusterDomain
	}
	return cluster + "." + namespace + ".svc." + domain
}

// Pod is the name a node announces in TLS mode and is verified against,
// {pod}.{cluster}.{namespace}.svc.{domain}: the headless Service gives each
// pod a record under its own name.
func Pod(pod, cluster, namespace, domain string) string {
	return pod + "." + Service(cluster, namespace, domain)
}

// podWildcard is the SAN that covers every Pod name of the cluster, so one
// certificate serves nodes that come and go.
func podWildcard(cluster, namespace, domain string) string {
	return "*." + Service(cluster, namespace, domain)
}

// SANs are the DNS names a cluster's certificate must carry: the Service
// name, which clients dial, and podWildcard.
func SANs(cluster, namespace, domain string) []string {
	return []string{Service(cluster, namespace, domain), podWildcard(cluster, namespace, domain)}
}
