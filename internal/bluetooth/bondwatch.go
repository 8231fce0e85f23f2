// SPDX-License-Identifier: Apache-2.0

package bluetooth

import (
	"bytes"
	"context"
	"crypto/sha256"
	"maps"

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
// again at once rather than at the next change of the bonds, and changed
// whenever the data of one changes, with the Secret as the cache keeps
// it, so that one edited by hand is compared with BlueZ's bond at once.
// The cache keeps each Secret's metadata and, for each data key, the
// SHA-256 of its value (secretDigests): the keys themselves are never
// held in memory. The watch is one open request; a node at rest makes no
// other.
func watchBondSecrets(ctx context.Context, kube kubernetes.Interface, namespace string, deleted func(name string), changed func(s *corev1.Secret)) {
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
			return &corev1.Secret{
				ObjectMeta: metav1.ObjectMeta{Name: s.Name, Namespace: s.Namespace, UID: s.UID, ResourceVersion: s.ResourceVersion, Labels: s.Labels},
				Data:       secretDigests(s.Data),
			}, nil
		}
		return obj, nil
	})
	_, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		// A relist delivers every Secret again as an update: only one
		// whose data changed is news.
		UpdateFunc: func(oldObj, newObj any) {
			prev, ok1 := oldObj.(*corev1.Secret)
			next, ok2 := newObj.(*corev1.Secret)
			if ok1 && ok2 && !maps.EqualFunc(prev.Data, next.Data, bytes.Equal) {
				changed(next)
			}
		},
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

// secretDigests maps each data key to the SHA-256 of its value (32 bytes),
// the shape in which the watch's cache holds a bond Secret's data.
func secretDigests(data map[string][]byte) map[string][]byte {
	if len(data) == 0 {
		return nil
	}
	out := make(map[string][]byte, len(data))
	for k, v := range data {
		sum := sha256.Sum256(v)
		out[k] = sum[:]
	}
	return out
}
