// SPDX-License-Identifier: Apache-2.0

package pairing

import (
	"context"
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/tools/cache"

	btv1 "github.com/liken-sh/operators/api/bluetooth/v1alpha1"
)

// requestTimeout bounds each API call of a pass.
const requestTimeout = 10 * time.Second

// store follows the three kinds through informers and writes them.
type store struct {
	client      dynamic.Interface
	adapters    cache.SharedIndexInformer
	peripherals cache.SharedIndexInformer
	// handmade holds the Peripherals no operator made: those without
	// the adapter label every operator puts on its own.
	handmade cache.SharedIndexInformer
	requests cache.SharedIndexInformer
}

// newStore makes the informers; poke is called on every add, delete,
// generation or deletion-mark change (not on status writes), and
// onRequestSpec with the key of a request whose spec changed.
func newStore(client dynamic.Interface, adapterKey string, poke func(), onRequestSpec func(key string)) *store {
	mk := func(gvr schema.GroupVersionResource, tweak dynamicinformer.TweakListOptionsFunc) cache.SharedIndexInformer {
		inf := dynamicinformer.NewFilteredDynamicInformer(client, gvr, "", 0, cache.Indexers{}, tweak).Informer()
		_ = inf.SetTransform(func(obj any) (any, error) {
			if m, ok := obj.(metav1.Object); ok {
				m.SetManagedFields(nil)
			}
			return obj, nil
		})
		_, _ = inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
			AddFunc:    func(any) { poke() },
			DeleteFunc: func(any) { poke() },
			UpdateFunc: func(o, n any) {
				om, ok1 := o.(metav1.Object)
				nm, ok2 := n.(metav1.Object)
				if ok1 && ok2 && om.GetGeneration() == nm.GetGeneration() && om.GetUID() == nm.GetUID() &&
					(om.GetDeletionTimestamp() == nil) == (nm.GetDeletionTimestamp() == nil) {
					return
				}
				if gvr == btv1.PairingRequestsResource && onRequestSpec != nil && ok2 {
					onRequestSpec(nm.GetNamespace() + "/" + nm.GetName())
				}
				poke()
			},
		})
		return inf
	}
	return &store{
		client:   client,
		adapters: mk(btv1.AdaptersResource, nil),
		peripherals: mk(btv1.PeripheralsResource, func(o *metav1.ListOptions) {
			o.LabelSelector = btv1.AdapterLabel + "=" + adapterKey
		}),
		handmade: mk(btv1.PeripheralsResource, func(o *metav1.ListOptions) {
			o.LabelSelector = "!" + btv1.AdapterLabel
		}),
		requests: mk(btv1.PairingRequestsResource, nil),
	}
}

func (s *store) run(ctx context.Context) {
	go s.adapters.RunWithContext(ctx)
	go s.peripherals.RunWithContext(ctx)
	go s.handmade.RunWithContext(ctx)
	go s.requests.RunWithContext(ctx)
}

func (s *store) synced() bool {
	return s.adapters.HasSynced() && s.peripherals.HasSynced() && s.handmade.HasSynced() && s.requests.HasSynced()
}

// unpairing reports whether a Peripheral of this adapter is marked for
// deletion (an unpair waits on its finalizer).
func (s *store) unpairing() bool {
	for _, o := range s.peripherals.GetStore().List() {
		if m, ok := o.(metav1.Object); ok && m.GetDeletionTimestamp() != nil {
			return true
		}
	}
	return false
}

// list decodes every object of inf into T.
func list[T any](inf cache.SharedIndexInformer) ([]T, error) {
	var out []T
	for _, o := range inf.GetStore().List() {
		var v T
		if err := fromUnstructured(o, &v); err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, nil
}

func fromUnstructured(o any, into any) error {
	u, ok := o.(*unstructured.Unstructured)
	if !ok {
		return fmt.Errorf("unexpected %T in the store", o)
	}
	return runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, into)
}

// getRequest returns the stored request key (namespace/name).
func (s *store) getRequest(key string) (*btv1.PairingRequest, bool) {
	o, ok, err := s.requests.GetStore().GetByKey(key)
	if err != nil || !ok {
		return nil, false
	}
	var r btv1.PairingRequest
	if fromUnstructured(o, &r) != nil {
		return nil, false
	}
	return &r, true
}

// toUnstructured encodes obj with its apiVersion and kind set.
func toUnstructured(obj runtime.Object, kind string) (*unstructured.Unstructured, error) {
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		return nil, err
	}
	u := &unstructured.Unstructured{Object: m}
	u.SetAPIVersion(btv1.GroupVersion.String())
	u.SetKind(kind)
	return u, nil
}

func (s *store) resource(gvr schema.GroupVersionResource, ns string) dynamic.ResourceInterface {
	if ns == "" {
		return s.client.Resource(gvr)
	}
	return s.client.Resource(gvr).Namespace(ns)
}

// create creates obj and decodes the stored object back into it.
func (s *store) create(ctx context.Context, gvr schema.GroupVersionResource, kind string, obj runtime.Object, ns string) error {
	u, err := toUnstructured(obj, kind)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, requestTimeout)
	defer cancel()
	got, err := s.resource(gvr, ns).Create(ctx, u, metav1.CreateOptions{})
	if err != nil {
		return err
	}
	return runtime.DefaultUnstructuredConverter.FromUnstructured(got.Object, obj)
}

// writeStatus PUTs obj's status when it differs from old's, carrying
// obj's resourceVersion, so a status computed from a stale object is
// refused (a conflict) rather than written over a newer one; the pass
// then redoes it from what the informer holds next (pass.statusFailed).
func (s *store) writeStatus(ctx context.Context, gvr schema.GroupVersionResource, kind string, obj runtime.Object, oldStatus, newStatus any, ns string) error {
	if equality.Semantic.DeepEqual(oldStatus, newStatus) {
		return nil
	}
	u, err := toUnstructured(obj, kind)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, requestTimeout)
	defer cancel()
	_, err = s.resource(gvr, ns).UpdateStatus(ctx, u, metav1.UpdateOptions{})
	return err
}

// patchFinalizers sets the object's finalizers with a merge patch that
// carries resourceVersion, so a finalizer list written by someone else
// meanwhile is not overwritten.
func (s *store) patchFinalizers(ctx context.Context, gvr schema.GroupVersionResource, ns, name, resourceVersion string, finalizers []string) error {
	if finalizers == nil {
		finalizers = []string{}
	}
	patch, err := runtime.DefaultUnstructuredConverter.ToUnstructured(&struct {
		Metadata struct {
			ResourceVersion string   `json:"resourceVersion"`
			Finalizers      []string `json:"finalizers"`
		} `json:"metadata"`
	}{Metadata: struct {
		ResourceVersion string   `json:"resourceVersion"`
		Finalizers      []string `json:"finalizers"`
	}{resourceVersion, finalizers}})
	if err != nil {
		return err
	}
	data, err := (&unstructured.Unstructured{Object: patch}).MarshalJSON()
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, requestTimeout)
	defer cancel()
	_, err = s.resource(gvr, ns).Patch(ctx, name, types.MergePatchType, data, metav1.PatchOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	return err
}

// deleteRequest deletes a finished request, preconditioned on its UID.
func (s *store) deleteRequest(ctx context.Context, r *btv1.PairingRequest) error {
	ctx, cancel := context.WithTimeout(ctx, requestTimeout)
	defer cancel()
	uid := r.UID
	err := s.resource(btv1.PairingRequestsResource, r.Namespace).Delete(ctx, r.Name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid}})
	if apierrors.IsNotFound(err) {
		return nil
	}
	return err
}
