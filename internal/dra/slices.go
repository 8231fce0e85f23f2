// SPDX-License-Identifier: Apache-2.0

package dra

import (
	"context"
	"fmt"
	"sync"
	"time"

	"k8s.io/dynamic-resource-allocation/kubeletplugin"
	"k8s.io/dynamic-resource-allocation/resourceslice"
	"k8s.io/utils/ptr"
)

// RepublishDelay is how long the slice controller waits after it sees a
// ResourceSlice of this driver change (or go) before it writes the pool
// again. The kubelet deletes every ResourceSlice of its node when it
// starts (pkg/kubelet/cm/dra/plugin, DRAPluginManager.wipeResourceSlices)
// and leaves republishing to the drivers; with the controller's default
// (resourceslice.DefaultSyncDelay, 30 s) a node that restarted its
// kubelet offered none of its devices to the scheduler for half a
// minute, and every pod claiming one waited that long to schedule. One
// node's pool is small, and the informer the controller compares against
// has seen the deletion well within this delay.
const RepublishDelay = time.Second

// sliceController is the ResourceSlice controller of one driver: the one
// kubeletplugin.Helper.PublishResources starts, with the same owner (the
// Node, its UID looked up by the controller) and error handling, but
// started here because the helper offers no way to set its sync delay.
type sliceController struct {
	d *Driver

	mu   sync.Mutex
	ctrl *resourceslice.Controller
}

// publish hands the pool description to the controller, starting it on
// the first call; it is the publisher's PublishFunc.
func (s *sliceController) publish(_ context.Context, resources resourceslice.DriverResources) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ctrl != nil {
		s.ctrl.Update(&resources)
		return nil
	}
	d := s.d
	ctrl, err := resourceslice.StartController(d.ctx, resourceslice.Options{
		DriverName: d.opts.DriverName,
		KubeClient: d.opts.KubeClient,
		Owner:      &resourceslice.Owner{APIVersion: "v1", Kind: "Node", Name: d.opts.NodeName},
		Resources:  resources.DeepCopy(),
		SyncDelay:  ptr.To(RepublishDelay),
		// Publishing errors (a field the API server dropped, an invalid
		// spec) are not mended by restarting the driver: every one is
		// recoverable, as the helper treats them.
		ErrorHandler: func(ctx context.Context, err error, msg string) {
			d.HandleError(ctx, fmt.Errorf("%w: %w", kubeletplugin.ErrRecoverable, err), msg)
		},
	})
	if err != nil {
		return fmt.Errorf("start the ResourceSlice controller: %w", err)
	}
	s.ctrl = ctrl
	return nil
}

// stop stops the controller if it was started. The slices stay.
func (s *sliceController) stop() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ctrl != nil {
		s.ctrl.Stop()
	}
}
