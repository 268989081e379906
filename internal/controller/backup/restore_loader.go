package backup

import (
	"context"
	"crypto/rand"
	"fmt"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	valkeyv1 "github.com/gomomento/valkey-operator/api/v1alpha1"
	"github.com/gomomento/valkey-operator/internal/controller/nodeconn"
	"github.com/gomomento/valkey-operator/internal/controller/watch"
	"github.com/gomomento/valkey-operator/internal/render"
	"github.com/gomomento/valkey-operator/internal/topology"
	"github.com/gomomento/valkey-operator/internal/valkey"
)

// loaderStart bounds how long a loader's pod may take to run and its
// server to answer.
const loaderStart = 3 * time.Minute

// loaderPassword is the loaders' password, made once per restore and
// kept in their Secret.
func (r *restoreReconciler) loaderPassword(ctx context.Context, vc *valkeyv1.ValkeyCluster) (string, error) {
	var s corev1.Secret
	name := render.RestoreLoaderSecretName(vc.Name)
	err := r.APIReader.Get(ctx, client.ObjectKey{Namespace: vc.Namespace, Name: name}, &s)
	if err == nil {
		if pw := string(s.Data[render.KeyLoaderPassword]); pw != "" {
			return pw, nil
		}
		return "", fmt.Errorf("secret %s has no %s", name, render.KeyLoaderPassword)
	}
	if !apierrors.IsNotFound(err) {
		return "", fmt.Errorf("reading secret %s: %w", name, err)
	}
	pw, err := render.NewPassword(rand.Reader)
	if err != nil {
		return "", err
	}
	if err := r.Create(ctx, render.Cluster{Cluster: vc}.RestoreLoaderSecret(pw)); err != nil {
		return "", fmt.Errorf("creating secret %s: %w", name, err)
	}
	return pw, nil
}

// loaderPod creates shard i's loader and waits for it to run. A loader
// this process did not create, or one that ended, is deleted first: it
// may hold part of a file from an attempt that was cut short.
func (r *restoreReconciler) loaderPod(ctx context.Context, vc *valkeyv1.ValkeyCluster, i int) (*corev1.Pod, error) {
	name := render.RestoreLoaderName(vc.Name, i)
	key := client.ObjectKey{Namespace: vc.Namespace, Name: name}
	var pod corev1.Pod
	err := r.APIReader.Get(ctx, key, &pod)
	switch {
	case err == nil && (!r.isOurs(key) || nodeconn.PodState(&pod).Phase == topology.PodGone):
		if derr := r.deleteLoader(ctx, &pod); derr != nil {
			return nil, derr
		}
		return nil, fmt.Errorf("replacing restore loader %s, left by an earlier attempt", name)
	case apierrors.IsNotFound(err):
		node, err := anyNode(ctx, r.Client, vc)
		if err != nil {
			return nil, err
		}
		p, err := render.Cluster{Cluster: vc}.RestoreLoaderPod(i, node)
		if err != nil {
			return nil, err
		}
		if err := r.Create(ctx, p); err != nil {
			return nil, fmt.Errorf("creating restore loader %s: %w", name, err)
		}
		r.setOurs(key, true)
	case err != nil:
		return nil, fmt.Errorf("reading restore loader %s: %w", name, err)
	}
	deadline := time.Now().Add(loaderStart)
	for {
		if err := r.APIReader.Get(ctx, key, &pod); err != nil {
			return nil, fmt.Errorf("reading restore loader %s: %w", name, err)
		}
		switch {
		case pod.Status.Phase == corev1.PodRunning && pod.Status.PodIP != "":
			return &pod, nil
		case pod.Status.Phase == corev1.PodFailed || pod.Status.Phase == corev1.PodSucceeded:
			return nil, fmt.Errorf("restore loader %s ended (%s): %s", name, pod.Status.Phase, pod.Status.Message)
		case time.Now().After(deadline):
			return nil, fmt.Errorf("restore loader %s is not running after %s: %s %s", name, loaderStart, pod.Status.Phase, pod.Status.Message)
		}
		if err := sleepCtx(ctx, 200*time.Millisecond); err != nil {
			return nil, err
		}
	}
}

// dialLoader connects to a running loader once its server answers.
func (r *restoreReconciler) dialLoader(ctx context.Context, conn *nodeconn.Connector, pod *corev1.Pod, password string) (*valkey.Node, error) {
	deadline := time.Now().Add(loaderStart)
	for {
		n, err := conn.DialLoader(ctx, pod.Name, pod.Status.PodIP, password)
		if err == nil {
			return n, nil
		}
		if time.Now().After(deadline) {
			return nil, err
		}
		if err := sleepCtx(ctx, 200*time.Millisecond); err != nil {
			return nil, err
		}
	}
}

// deleteLoader deletes one loader pod, that exact pod.
func (r *restoreReconciler) deleteLoader(ctx context.Context, pod *corev1.Pod) error {
	r.setOurs(client.ObjectKeyFromObject(pod), false)
	err := r.Delete(ctx, pod, client.Preconditions{UID: &pod.UID})
	if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
		return fmt.Errorf("deleting restore loader %s: %w", pod.Name, err)
	}
	return nil
}

// removeLoaders deletes every loader of the cluster and their Secret, once
// the restore has ended; one by one, each the exact pod listed.
func (r *restoreReconciler) removeLoaders(ctx context.Context, vc *valkeyv1.ValkeyCluster) error {
	var pods corev1.PodList
	if err := r.List(ctx, &pods, client.InNamespace(vc.Namespace),
		client.MatchingLabels{valkeyv1.LabelRestoreOf: vc.Name, valkeyv1.LabelManagedBy: valkeyv1.LabelManagedByValue}); err != nil {
		return fmt.Errorf("listing the restore loaders of %s: %w", vc.Name, err)
	}
	for i := range pods.Items {
		// A label says nothing: only a pod the cluster owns, named as a
		// loader and without the nodes' instance label, is one.
		if p := &pods.Items[i]; isLoader(p, vc) {
			if err := r.deleteLoader(ctx, p); err != nil {
				return err
			}
		}
	}
	s := &corev1.Secret{}
	s.Namespace, s.Name = vc.Namespace, render.RestoreLoaderSecretName(vc.Name)
	if err := r.Delete(ctx, s); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("deleting secret %s: %w", s.Name, err)
	}
	return nil
}

// isLoader: p is one of vc's restore loaders, by its name, its controller
// (the cluster itself) and the absence of the nodes' instance label.
func isLoader(p *corev1.Pod, vc *valkeyv1.ValkeyCluster) bool {
	owner := metav1.GetControllerOf(p)
	if owner == nil || owner.UID != vc.UID || p.Labels[valkeyv1.LabelInstance] != "" {
		return false
	}
	prefix := render.RestoreLoaderName(vc.Name, 0)
	prefix = prefix[:len(prefix)-1]
	n, err := strconv.Atoi(strings.TrimPrefix(p.Name, prefix))
	return strings.HasPrefix(p.Name, prefix) && err == nil && render.RestoreLoaderName(vc.Name, n) == p.Name
}

func (r *restoreReconciler) isOurs(key client.ObjectKey) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.ours[key.String()]
}

func (r *restoreReconciler) setOurs(key client.ObjectKey, ours bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if ours {
		r.ours[key.String()] = true
	} else {
		delete(r.ours, key.String())
	}
}

// anyNode is one of the cluster's ValkeyNodes: a loader runs what they run.
func anyNode(ctx context.Context, c client.Reader, vc *valkeyv1.ValkeyCluster) (*valkeyv1.ValkeyNode, error) {
	var nodes valkeyv1.ValkeyNodeList
	if err := c.List(ctx, &nodes, watch.OfCluster(vc.Namespace, vc.Name)...); err != nil {
		return nil, fmt.Errorf("listing ValkeyNodes: %w", err)
	}
	for i := range nodes.Items {
		if nodes.Items[i].Spec.ClusterName == vc.Name {
			return &nodes.Items[i], nil
		}
	}
	return nil, fmt.Errorf("cluster %s has no ValkeyNode yet", vc.Name)
}

func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
