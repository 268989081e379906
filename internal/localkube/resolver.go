package localkube

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
)

// The resolver answers like cluster DNS does for headless Services, from the
// runtime's caches of Services and Pods:
//
//	{service}.{namespace}.svc.{domain}              -> the Service's endpoints
//	{hostname}.{subdomain}.{namespace}.svc.{domain} -> one endpoint pod
//
// A pod is an endpoint of a headless Service when the Service selects it, it
// has an address, it is not being deleted or finished, and it is Ready (or
// the Service publishes not-ready addresses). A per-pod name needs the pod's
// spec.subdomain to name such a Service, as in a cluster.

// LookupHost resolves a cluster name to pod addresses. IP literals are
// returned as they are; other names go to the system resolver.
func (r *Runtime) LookupHost(name string) ([]string, error) {
	return r.LookupHostContext(context.Background(), name)
}

// LookupHostContext is LookupHost with a context for the system resolver.
func (r *Runtime) LookupHostContext(ctx context.Context, name string) ([]string, error) {
	if ip := net.ParseIP(name); ip != nil {
		return []string{name}, nil
	}
	n := strings.TrimSuffix(strings.ToLower(name), ".")
	suffix := ".svc." + r.opts.ClusterDomain
	if !strings.HasSuffix(n, suffix) {
		return net.DefaultResolver.LookupHost(ctx, name)
	}
	parts := strings.Split(strings.TrimSuffix(n, suffix), ".")
	var addrs []string
	switch len(parts) {
	case 2:
		svc, err := r.services.Services(parts[1]).Get(parts[0])
		if err == nil {
			for _, p := range r.endpoints(svc) {
				addrs = append(addrs, p.Status.PodIP)
			}
		}
	case 3:
		svc, err := r.services.Services(parts[2]).Get(parts[1])
		if err == nil {
			for _, p := range r.endpoints(svc) {
				if p.Spec.Hostname == parts[0] && p.Spec.Subdomain == parts[1] {
					addrs = append(addrs, p.Status.PodIP)
				}
			}
		}
	}
	if len(addrs) == 0 {
		return nil, &net.DNSError{Err: "no such host", Name: name, IsNotFound: true}
	}
	sort.Strings(addrs)
	return addrs, nil
}

// endpoints lists the pods a headless Service's names resolve to.
func (r *Runtime) endpoints(svc *corev1.Service) []*corev1.Pod {
	if svc.Spec.ClusterIP != corev1.ClusterIPNone || len(svc.Spec.Selector) == 0 {
		return nil
	}
	pods, err := r.pods.Pods(svc.Namespace).List(labels.SelectorFromSet(svc.Spec.Selector))
	if err != nil {
		return nil
	}
	var out []*corev1.Pod
	for _, p := range pods {
		if p.Status.PodIP == "" || p.DeletionTimestamp != nil ||
			p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
			continue
		}
		if !svc.Spec.PublishNotReadyAddresses && !podReady(p) {
			continue
		}
		out = append(out, p)
	}
	return out
}

func podReady(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// Names returns every name the resolver serves with its addresses.
func (r *Runtime) Names() map[string][]string {
	names := map[string][]string{}
	svcs, err := r.services.List(labels.Everything())
	if err != nil {
		return names
	}
	for _, svc := range svcs {
		base := svc.Name + "." + svc.Namespace + ".svc." + r.opts.ClusterDomain
		for _, p := range r.endpoints(svc) {
			names[base] = append(names[base], p.Status.PodIP)
			if p.Spec.Hostname != "" && p.Spec.Subdomain == svc.Name {
				n := p.Spec.Hostname + "." + base
				names[n] = append(names[n], p.Status.PodIP)
			}
		}
	}
	for _, a := range names {
		sort.Strings(a)
	}
	return names
}

// DialContext dials addr, resolving cluster names with LookupHost, trying
// each address in turn. It fits net/http.Transport.DialContext,
// valkey-go's dialer and anything else that takes a dial function.
func (r *Runtime) DialContext(ctx context.Context, network, addr string) (net.Conn, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, err
	}
	addrs, err := r.LookupHostContext(ctx, host)
	if err != nil {
		return nil, err
	}
	var d net.Dialer
	var errs []error
	for _, a := range addrs {
		conn, err := d.DialContext(ctx, network, net.JoinHostPort(a, port))
		if err == nil {
			return conn, nil
		}
		errs = append(errs, err)
	}
	return nil, fmt.Errorf("dialing %s: %w", addr, errors.Join(errs...))
}
