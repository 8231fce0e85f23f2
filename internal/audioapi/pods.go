// SPDX-License-Identifier: Apache-2.0

package audioapi

import (
	"context"
	"fmt"
	"net"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
)

// Where the capture container is in the audio operator's pod
// (deploy/audio/operator.yaml).
const (
	OperatorPodLabel     = "app=audio-operator"
	CaptureContainer     = "capture"
	CapturePortName      = "capture"
	DefaultCapturePort   = 9201
	nodeIndex            = "spec.nodeName"
	operatorPodsResyncer = 0
)

// Pods finds the audio operator's pod on a node from an informer on the
// pods labelled app=audio-operator in one namespace.
type Pods struct {
	informer cache.SharedIndexInformer
}

// StartPods starts the informer and waits for its first list. Errors:
// ctx ended before the list arrived.
func StartPods(ctx context.Context, client kubernetes.Interface, namespace string) (*Pods, error) {
	f := informers.NewSharedInformerFactoryWithOptions(client, operatorPodsResyncer,
		informers.WithNamespace(namespace),
		informers.WithTweakListOptions(func(o *metav1.ListOptions) { o.LabelSelector = OperatorPodLabel }))
	inf := f.Core().V1().Pods().Informer()
	if err := inf.AddIndexers(cache.Indexers{nodeIndex: func(obj any) ([]string, error) {
		p, ok := obj.(*corev1.Pod)
		if !ok || p.Spec.NodeName == "" {
			return nil, nil
		}
		return []string{p.Spec.NodeName}, nil
	}}); err != nil {
		return nil, err
	}
	f.Start(ctx.Done())
	if !cache.WaitForCacheSync(ctx.Done(), inf.HasSynced) {
		return nil, fmt.Errorf("the pod informer in %s never synced: %w", namespace, ctx.Err())
	}
	return &Pods{informer: inf}, nil
}

// Upstream is the capture container a tap goes to.
type Upstream struct {
	Pod  string // namespace/name
	Addr string // pod IP and capture port
}

// NoCapture says why no capture container on a node can take a tap.
type NoCapture struct {
	Node, Reason string
}

func (e *NoCapture) Error() string {
	return fmt.Sprintf("no capture container answers on node %s: %s", e.Node, e.Reason)
}

// On returns the capture container of the audio operator's pod on node,
// or a *NoCapture. A pod being deleted loses to one that is not; among
// pods alike the newest wins. The pod must have an IP and its capture
// container must be running and ready.
func (p *Pods) On(node string) (Upstream, error) {
	objs, _ := p.informer.GetIndexer().ByIndex(nodeIndex, node)
	var best *corev1.Pod
	for _, o := range objs {
		pod := o.(*corev1.Pod)
		if best == nil || better(pod, best) {
			best = pod
		}
	}
	if best == nil {
		return Upstream{}, &NoCapture{Node: node, Reason: "no audio operator pod (" + OperatorPodLabel + ") runs there"}
	}
	id := best.Namespace + "/" + best.Name
	if best.Status.PodIP == "" {
		return Upstream{}, &NoCapture{Node: node, Reason: "pod " + id + " has no IP yet"}
	}
	ready := false
	for _, cs := range best.Status.ContainerStatuses {
		if cs.Name == CaptureContainer {
			ready = cs.Ready && cs.State.Running != nil
		}
	}
	if !ready {
		return Upstream{}, &NoCapture{Node: node, Reason: "the capture container of pod " + id + " is not running and ready"}
	}
	port := DefaultCapturePort
	for _, c := range best.Spec.Containers {
		if c.Name != CaptureContainer {
			continue
		}
		for _, cp := range c.Ports {
			if cp.Name == CapturePortName {
				port = int(cp.ContainerPort)
			}
		}
	}
	return Upstream{Pod: id, Addr: net.JoinHostPort(best.Status.PodIP, strconv.Itoa(port))}, nil
}

// better is true when a should serve rather than b.
func better(a, b *corev1.Pod) bool {
	if (a.DeletionTimestamp == nil) != (b.DeletionTimestamp == nil) {
		return a.DeletionTimestamp == nil
	}
	return b.CreationTimestamp.Before(&a.CreationTimestamp)
}
