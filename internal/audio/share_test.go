// SPDX-License-Identifier: Apache-2.0

package audio

import (
	"testing"
	"time"

	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/liken-sh/operators/internal/audio/gate"
	"github.com/liken-sh/operators/internal/audio/speakers"
	"github.com/liken-sh/operators/internal/bdaddr"
	"github.com/liken-sh/operators/internal/dra"
)

// Every output and input, and every speaker, is published shareable,
// with MaxStreams streams of which a claim gets DefaultStreams unless it
// asks for a whole number up to all of them.
func TestDevicesAreShareable(t *testing.T) {
	eps, _ := Endpoints("kitchen", xpsCards(t))
	devices := append(Devices(eps, map[string]bool{}), SpeakerDevices(SpeakerEndpoints([]speakers.Speaker{
		{Address: bdaddr.MustParse("A0:AB:51:33:B7:12"), Alias: "Kitchen", Connected: true}}, nil))...)
	sources := 0
	for _, d := range devices {
		if _, ok := d.Attributes["source"]; ok {
			sources++
		}
		c, ok := d.Capacity[CapacityStreams]
		p := c.RequestPolicy
		if !d.AllowMultipleAllocations || !ok || c.Value.Value() != MaxStreams || p == nil || p.Default.Value() != DefaultStreams ||
			p.ValidRange == nil || p.ValidRange.Min.Value() != 1 || p.ValidRange.Max.Value() != MaxStreams || p.ValidRange.Step.Value() != 1 {
			t.Errorf("%s: multiple allocations %v, capacity %+v", d.Name, d.AllowMultipleAllocations, d.Capacity)
		}
	}
	if sources == 0 {
		t.Error("no input among the recorded cards' devices")
	}
}

// The claim file carries the streams the claim's allocation consumed,
// summed over its devices of this driver (a device held twice counts
// twice), and all of a device's for a result with no consumed capacity
// (a cluster without consumable capacity allocates the device alone).
func TestPrepareWritesTheClaimsShare(t *testing.T) {
	lookup := func(dev string) (string, bool, bool) { return "liken.audio." + dev, true, true }
	run := t.TempDir()
	share := func(dev string, n string) resourceapi.DeviceRequestAllocationResult {
		r := resourceapi.DeviceRequestAllocationResult{Driver: DriverName, Device: dev}
		if n != "" {
			r.ConsumedCapacity = map[resourceapi.QualifiedName]resource.Quantity{CapacityStreams: resource.MustParse(n)}
		}
		return r
	}
	for _, c := range []struct {
		uid     string
		results []resourceapi.DeviceRequestAllocationResult
		want    int
	}{
		{"5a1b7c2e-0000-4000-8000-000000000001", []resourceapi.DeviceRequestAllocationResult{share("a", "4")}, 4},
		{"5a1b7c2e-0000-4000-8000-000000000002", []resourceapi.DeviceRequestAllocationResult{
			share("a", "4"), share("a", "2"), {Driver: "bluetooth.liken.sh", Device: "pad"}}, 6},
		{"5a1b7c2e-0000-4000-8000-000000000003", []resourceapi.DeviceRequestAllocationResult{share("a", "")}, MaxStreams},
	} {
		claim := &resourceapi.ResourceClaim{ObjectMeta: metav1.ObjectMeta{UID: types.UID(c.uid)}}
		claim.Status.Allocation = &resourceapi.AllocationResult{Devices: resourceapi.DeviceAllocationResult{Results: c.results}}
		prep := Prepare(lookup, run, time.Millisecond) // no gate: fails past the claim file
		_, _ = prep(t.Context(), dra.DeviceRequest[Params]{Claim: claim, Result: c.results[0]})
		claims, errs := gate.Claims(run)
		if got := claims[c.uid]; len(errs) != 0 || got.Streams != c.want || got.Nodes[0] != "liken.audio.a" {
			t.Errorf("claim %s: file %+v (%v), want %d streams", c.uid, got, errs, c.want)
		}
	}
}
