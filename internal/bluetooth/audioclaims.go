// SPDX-License-Identifier: Apache-2.0

package bluetooth

import (
	"context"
	"slices"
	"strings"

	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"

	"github.com/liken-sh/operators/internal/pairing"
)

// audioClaims follows the ResourceClaims that hold devices of the audio
// driver (pairing.AudioDriver) in the pool of this node, which the audio
// driver names after the node (dra.Options.NodeName). The audio driver
// names a speaker's device by its address in key form
// (bdaddr.Address.Key, "a0-ab-51-33-b7-12"), the same as this driver's
// Peripheral, so an allocation result names the speaker itself: no
// ResourceSlice is read, and a speaker switched off (still published,
// tainted) or one the slice has not caught up with is found all the same.
//
// A claim has no field the API server selects on besides its name and
// namespace, so the informer lists and watches every claim; its cache
// keeps of each only the name, namespace, UID, deletion time and the
// allocation results on that pool (trimAudioClaim), a few hundred bytes.
type audioClaims struct {
	pool     string
	informer cache.SharedIndexInformer
	factory  informers.SharedInformerFactory
}

// watchAudioClaims starts following the claims holding devices of the
// audio driver's pool and calls changed whenever the devices one holds
// change (allocated, deallocated, deleted, being deleted). Stop it with
// stop after ctx ends.
func watchAudioClaims(ctx context.Context, kube kubernetes.Interface, pool string, changed func()) (*audioClaims, error) {
	f := informers.NewSharedInformerFactoryWithOptions(kube, 0)
	inf := f.Resource().V1().ResourceClaims().Informer()
	a := &audioClaims{pool: pool, informer: inf, factory: f}
	if err := inf.SetTransform(func(obj any) (any, error) {
		if c, ok := obj.(*resourceapi.ResourceClaim); ok {
			return trimAudioClaim(c, pool), nil
		}
		return obj, nil
	}); err != nil {
		return nil, err
	}
	if _, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: func(obj any) {
			if c, ok := obj.(*resourceapi.ResourceClaim); ok && c.Status.Allocation != nil {
				changed()
			}
		},
		// A relist delivers every claim again as an update: only one
		// whose held devices or deletion changed is news.
		UpdateFunc: func(oldObj, newObj any) {
			prev, ok1 := oldObj.(*resourceapi.ResourceClaim)
			next, ok2 := newObj.(*resourceapi.ResourceClaim)
			if !ok1 || !ok2 || !equality.Semantic.DeepEqual(prev.Status, next.Status) ||
				(prev.DeletionTimestamp == nil) != (next.DeletionTimestamp == nil) {
				changed()
			}
		},
		DeleteFunc: func(obj any) {
			if t, ok := obj.(cache.DeletedFinalStateUnknown); ok {
				obj = t.Obj
			}
			if c, ok := obj.(*resourceapi.ResourceClaim); !ok || c.Status.Allocation != nil {
				changed()
			}
		},
	}); err != nil {
		return nil, err
	}
	f.Start(ctx.Done())
	return a, nil
}

// stop waits for the informer's goroutines, once the ctx given to
// watchAudioClaims has ended.
func (a *audioClaims) stop() { a.factory.Shutdown() }

// held maps each device name of the pool to the claims that hold it,
// sorted by namespace and name; claims being deleted hold nothing. It is
// empty until the first list has arrived.
func (a *audioClaims) held() map[string][]claimHolder {
	if !a.informer.HasSynced() {
		return nil
	}
	out := map[string][]claimHolder{}
	for _, obj := range a.informer.GetStore().List() {
		c, ok := obj.(*resourceapi.ResourceClaim)
		if !ok || c.DeletionTimestamp != nil || c.Status.Allocation == nil {
			continue
		}
		h := claimHolder{Namespace: c.Namespace, Name: c.Name, UID: c.UID}
		for _, r := range c.Status.Allocation.Devices.Results {
			if !slices.Contains(out[r.Device], h) {
				out[r.Device] = append(out[r.Device], h)
			}
		}
	}
	for _, hs := range out {
		slices.SortFunc(hs, func(x, y claimHolder) int {
			return strings.Compare(x.Namespace+"/"+x.Name, y.Namespace+"/"+y.Name)
		})
	}
	return out
}

// trimAudioClaim is c as the cache keeps it: its identity, its deletion
// time, and the results of its allocation that hold a device of the audio
// driver in pool, without admin access (which gives a monitor access to
// a device another claim holds; it plays nothing). A claim with none has
// no allocation in the cache.
func trimAudioClaim(c *resourceapi.ResourceClaim, pool string) *resourceapi.ResourceClaim {
	out := &resourceapi.ResourceClaim{ObjectMeta: metav1.ObjectMeta{
		Name: c.Name, Namespace: c.Namespace, UID: c.UID, ResourceVersion: c.ResourceVersion, DeletionTimestamp: c.DeletionTimestamp,
	}}
	if c.Status.Allocation == nil {
		return out
	}
	var kept []resourceapi.DeviceRequestAllocationResult
	for _, r := range c.Status.Allocation.Devices.Results {
		if r.Driver != pairing.AudioDriver || r.Pool != pool || (r.AdminAccess != nil && *r.AdminAccess) {
			continue
		}
		kept = append(kept, resourceapi.DeviceRequestAllocationResult{Request: r.Request, Driver: r.Driver, Pool: r.Pool, Device: r.Device})
	}
	if len(kept) > 0 {
		out.Status.Allocation = &resourceapi.AllocationResult{Devices: resourceapi.DeviceAllocationResult{Results: kept}}
	}
	return out
}
