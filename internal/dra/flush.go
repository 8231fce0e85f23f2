// SPDX-License-Identifier: Apache-2.0

package dra

import (
	"context"
	"fmt"
	"slices"
	"time"

	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
)

// Flush publishes the latest device set now, skipping the settle window,
// and waits until the API server holds it: the pool's slices carry exactly
// those devices, with those taints. An operator about to exit uses it so
// that its last word (say, every device tainted because its daemon does
// not answer) is what the scheduler sees, not whatever was published
// before. It returns ctx's error if the API server does not show the set
// in time.
func (d *Driver) Flush(ctx context.Context) error {
	want, err := d.pub.flush(ctx)
	if err != nil {
		return err
	}
	slices.SortFunc(want, byName)
	return wait.PollUntilContextCancel(ctx, 100*time.Millisecond, true, func(ctx context.Context) (bool, error) {
		list, err := d.opts.KubeClient.ResourceV1().ResourceSlices().List(ctx, metav1.ListOptions{
			FieldSelector: fmt.Sprintf("spec.driver=%s,spec.nodeName=%s", d.opts.DriverName, d.opts.NodeName),
		})
		if err != nil {
			return false, nil
		}
		var got []resourceapi.Device
		for _, s := range list.Items {
			if s.Spec.Driver == d.opts.DriverName && s.Spec.Pool.Name == d.opts.NodeName {
				got = append(got, s.Spec.Devices...)
			}
		}
		slices.SortFunc(got, byName)
		return sameDevices(want, got), nil
	})
}

func byName(a, b resourceapi.Device) int {
	switch {
	case a.Name < b.Name:
		return -1
	case a.Name > b.Name:
		return 1
	}
	return 0
}

// sameDevices compares what was published with what the API holds,
// ignoring each taint's server-set TimeAdded.
func sameDevices(want, got []resourceapi.Device) bool {
	if len(want) != len(got) {
		return false
	}
	for i := range want {
		w, g := want[i].DeepCopy(), got[i].DeepCopy()
		for j := range g.Taints {
			g.Taints[j].TimeAdded = nil
		}
		for j := range w.Taints {
			w.Taints[j].TimeAdded = nil
		}
		if !equality.Semantic.DeepEqual(w, g) {
			return false
		}
	}
	return true
}
