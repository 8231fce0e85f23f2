// SPDX-License-Identifier: Apache-2.0

package bluetooth

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	"github.com/liken-sh/operators/internal/bonds"
)

// watchBondSecrets watches the bond Secrets in namespace (those labelled
// bonds.AdapterLabel) and calls deleted whenever one is deleted, so that a
// bond Secret removed by hand while BlueZ still holds the bond is written
// again at once rather than at the next change of the bonds. The cache
// keeps each Secret's metadata alone: its keys are never held in memory.
// The watch is one open request; a node at rest makes no other.
func watchBondSecrets(ctx context.Context, kube kubernetes.Interface, namespace string, deleted func(name string)) {
	// The typed client rather than its RESTClient, so that any
	// kubernetes.Interface serves (a fake clientset has no RESTClient).
	secrets := kube.CoreV1().Secrets(namespace)
	lw := &cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			o.LabelSelector = bonds.AdapterLabel
			return secrets.List(ctx, o)
		},
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			o.LabelSelector = bonds.AdapterLabel
			return secrets.Watch(ctx, o)
		},
	}
	inf := cache.NewSharedIndexInformer(lw, &corev1.Secret{}, 0, cache.Indexers{})
	_ = inf.SetTransform(func(obj any) (any, error) {
		if s, ok := obj.(*corev1.Secret); ok {
			return &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: s.Name, Namespace: s.Namespace, ResourceVersion: s.ResourceVersion, Labels: s.Labels}}, nil
		}
		return obj, nil
	})
	_, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		DeleteFunc: func(obj any) {
			if t, ok := obj.(cache.DeletedFinalStateUnknown); ok {
				obj = t.Obj
			}
			if m, err := meta.Accessor(obj); err == nil {
				deleted(m.GetName())
			}
		},
	})
	if err != nil {
		klog.FromContext(ctx).Error(err, "Watching bond Secrets")
		return
	}
	go inf.Run(ctx.Done())
}
