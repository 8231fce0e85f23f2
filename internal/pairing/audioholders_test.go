// SPDX-License-Identifier: Apache-2.0

package pairing

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	resourceapi "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/liken-sh/operators/internal/dra"
)

// A claim allocated a speaker of the audio driver holds the Peripheral
// of the address its slice gives that device; a claim of another driver,
// one not allocated, or a device without an address holds none.
func TestAudioHolders(t *testing.T) {
	addr := "A0:AB:51:33:B7:12"
	slices := []resourceapi.ResourceSlice{{Spec: resourceapi.ResourceSliceSpec{
		Driver: AudioDriver, Pool: resourceapi.ResourcePool{Name: "kitchen"},
		Devices: []resourceapi.Device{
			{Name: "a0-ab-51-33-b7-12", Attributes: map[resourceapi.QualifiedName]resourceapi.DeviceAttribute{"address": {StringValue: &addr}}},
			{Name: "hdmi-3"},
		},
	}}}
	claim := func(name, driver, pool, device string) resourceapi.ResourceClaim {
		return resourceapi.ResourceClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "music", Name: name},
			Status: resourceapi.ResourceClaimStatus{Allocation: &resourceapi.AllocationResult{Devices: resourceapi.DeviceAllocationResult{
				Results: []resourceapi.DeviceRequestAllocationResult{{Request: "out", Driver: driver, Pool: pool, Device: device}}}}}}
	}
	claims := []resourceapi.ResourceClaim{
		{ObjectMeta: metav1.ObjectMeta{Namespace: "music", Name: "pending"}},
		claim("hdmi", AudioDriver, "kitchen", "hdmi-3"),
		claim("other", "bluetooth.liken.sh", "kitchen", "a0-ab-51-33-b7-12"),
		claim("speaker", AudioDriver, "kitchen", "a0-ab-51-33-b7-12"),
		claim("second", AudioDriver, "kitchen", "a0-ab-51-33-b7-12"),
	}
	got := AudioHolders(slices, claims)
	want := map[string]dra.ClaimRef{"a0-ab-51-33-b7-12": {Namespace: "music", Name: "speaker"}}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("AudioHolders (-want +got):\n%s", d)
	}
}
