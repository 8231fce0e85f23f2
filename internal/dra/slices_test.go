// SPDX-License-Identifier: Apache-2.0

package dra

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/dynamic-resource-allocation/resourceslice"
)

// TestSlicesRepublishedAfterTheKubeletWipesThem deletes the driver's
// published ResourceSlices, as a kubelet does with every slice of its node
// when it starts, and expects the driver to write them again within a few
// RepublishDelays: well before the slice controller's default delay, which
// would leave the node's devices unschedulable for half a minute after
// every kubelet restart.
func TestSlicesRepublishedAfterTheKubeletWipesThem(t *testing.T) {
	f := newFixtureWith(t, func(o Options) {
		// The slices are owned by their Node.
		if _, err := o.KubeClient.CoreV1().Nodes().Create(context.Background(), &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: o.NodeName, UID: "node-uid"}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	})
	if err := f.driver.SetDevices([]Device{{Name: "speaker"}}); err != nil {
		t.Fatal(err)
	}
	slices := f.opts.KubeClient.ResourceV1().ResourceSlices()
	published := func(within time.Duration) time.Duration {
		t.Helper()
		began := time.Now()
		for {
			list, err := slices.List(f.ctx, metav1.ListOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if len(list.Items) == 1 && len(list.Items[0].Spec.Devices) == 1 && list.Items[0].Spec.Devices[0].Name == "speaker" {
				return time.Since(began)
			}
			if time.Since(began) > within {
				t.Fatalf("no slice with the device %s after the wipe (%d slices)", within, len(list.Items))
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	published(30 * time.Second)
	list, err := slices.List(f.ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range list.Items {
		if err := slices.Delete(f.ctx, s.Name, metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	// Only the controller's default delay (30 s) comes this late; a slow
	// host does not, with RepublishDelay at 1 s.
	limit := resourceslice.DefaultSyncDelay * 2 / 3
	took := published(limit)
	t.Logf("slices back %s after the wipe (RepublishDelay %s, the controller's default %s)", took.Round(10*time.Millisecond), RepublishDelay, resourceslice.DefaultSyncDelay)
}
