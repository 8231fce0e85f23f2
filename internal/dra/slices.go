// SPDX-License-Identifier: Apache-2.0

package dra

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"k8s.io/dynamic-resource-allocation/kubeletplugin"
	"k8s.io/dynamic-resource-allocation/resourceslice"
	"k8s.io/klog/v2"
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

	mu      sync.Mutex
	ctrl    *resourceslice.Controller
	missing map[string]bool // feature gates noticed off at the API server
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
			var dropped *resourceslice.DroppedFieldsError
			if errors.As(err, &dropped) {
				s.notice(ctx, dropped.DisabledFeatures())
				return
			}
			d.HandleError(ctx, fmt.Errorf("%w: %w", kubeletplugin.ErrRecoverable, err), msg)
		},
	})
	if err != nil {
		return fmt.Errorf("start the ResourceSlice controller: %w", err)
	}
	s.ctrl = ctrl
	return nil
}

// featureEffects says what a driver's device loses when the API server
// runs without a feature gate and drops the fields it guards.
var featureEffects = map[string]string{
	"DRAConsumableCapacity": "devices published as shareable are allocated to one claim at a time, as if exclusive",
	"DRADeviceTaints":       "device taints are not published: the scheduler may place claims on unfit devices",
}

// notice logs, once per feature gate, that the API server dropped the
// fields that gate guards from the published slice (the controller read
// the slice back and compared it: resourceslice.DroppedFieldsError), and
// sets liken_dra_api_features_missing for it. The controller then
// publishes what the server keeps, so every later write would say the
// same again.
func (s *sliceController) notice(ctx context.Context, features []string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.missing == nil {
		s.missing = map[string]bool{}
	}
	for _, f := range features {
		if s.missing[f] {
			continue
		}
		s.missing[f] = true
		s.d.metrics.droppedFeatures.WithLabelValues(f).Set(1)
		effect := featureEffects[f]
		if effect == "" {
			effect = "the fields it guards are not published"
		}
		klog.FromContext(ctx).Info("The API server dropped fields of this driver's ResourceSlice: it runs without a feature gate",
			"featureGate", f, "effect", effect, "turnOn", "--feature-gates="+f+"=true on kube-apiserver, kube-scheduler and kube-controller-manager")
	}
}

// stop stops the controller if it was started. The slices stay.
func (s *sliceController) stop() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ctrl != nil {
		s.ctrl.Stop()
	}
}
