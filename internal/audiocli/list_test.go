// SPDX-License-Identifier: Apache-2.0

package audiocli

import (
	"bytes"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	resourceapi "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// A Sink or Source no operator has written a status for (created by hand
// under a name no node has), or one its node's operator marked
// NotServed, is listed NotServed, with a note on stderr saying what that
// means; a served one keeps its state, and a list with none has no note.
func TestListMarksUnserved(t *testing.T) {
	served := &unstructured.Unstructured{Object: map[string]any{"status": map[string]any{"node": "kitchen",
		"conditions": []any{map[string]any{"type": "Connected", "status": "True"}, map[string]any{"type": "Ready", "status": "True"}}}}}
	served.SetName("kitchen-pci-0000-00-1f-3-hdmi-0")
	typo := &unstructured.Unstructured{Object: map[string]any{"spec": map[string]any{"volume": int64(40)}}}
	typo.SetName("kitchn-pci-0000-00-1f-3-hdmi-0")

	marked := &unstructured.Unstructured{Object: map[string]any{"status": map[string]any{"node": "kitchen",
		"conditions": []any{map[string]any{"type": "Connected", "status": "False", "reason": "NotServed"},
			map[string]any{"type": "Ready", "status": "False", "reason": "NotServed"}}}}}
	marked.SetName("kitchen-pci-0000-00-1f-3-hdmi-9")
	if st := row("Sink", marked).state; st != stateNotServed {
		t.Errorf("state of a Sink marked NotServed %q, want %s", st, stateNotServed)
	}

	rows := []endpoint{row("Sink", served), row("Sink", typo)}
	if rows[0].state != "Ready" || rows[1].state != stateNotServed {
		t.Fatalf("states %q, %q; want Ready, NotServed", rows[0].state, rows[1].state)
	}
	var out, errOut bytes.Buffer
	if err := printEndpoints(&out, &errOut, rows); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(strings.Join(strings.Fields(out.String()), " "), "Sink kitchn-pci-0000-00-1f-3-hdmi-0 <none> <none> NotServed <none>") ||
		!strings.HasPrefix(errOut.String(), "NotServed: no audio operator has an output or input of that name.") {
		t.Errorf("list with a NotServed Sink:\n%s\nstderr: %q", out.String(), errOut.String())
	}
	out.Reset()
	errOut.Reset()
	if err := printEndpoints(&out, &errOut, rows[:1]); err != nil || errOut.Len() != 0 {
		t.Errorf("list of served Sinks only: %v, stderr %q; want no note", err, errOut.String())
	}
}

// CLAIM comes from the claims' allocations: every claim that holds an
// audio.liken.sh device (pool = node, device = the Sink's name) is
// listed, a device shared by two claims lists both, and claims not
// allocated, or of another driver, are left out.
func TestClaimsFromAllocations(t *testing.T) {
	claim := func(ns, name string, results ...resourceapi.DeviceRequestAllocationResult) resourceapi.ResourceClaim {
		c := resourceapi.ResourceClaim{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
		if results != nil {
			c.Status.Allocation = &resourceapi.AllocationResult{Devices: resourceapi.DeviceAllocationResult{Results: results}}
		}
		return c
	}
	res := func(driver, pool, device string) resourceapi.DeviceRequestAllocationResult {
		return resourceapi.DeviceRequestAllocationResult{Request: "r", Driver: driver, Pool: pool, Device: device}
	}
	const hdmi = "kitchen-pci-0000-00-1f-3-hdmi-0"
	got := allocations([]resourceapi.ResourceClaim{
		claim("music", "player", res(audioDriver, "kitchen", hdmi)),
		claim("kids", "cartoons", res(audioDriver, "kitchen", hdmi), res(audioDriver, "kitchen", "kitchen-usb-1-analog")),
		claim("music", "pending"),
		claim("games", "pad", res("bluetooth.liken.sh", "kitchen", hdmi)),
	})
	want := map[string][]string{"kitchen/" + hdmi: {"music/player", "kids/cartoons"}, "kitchen/kitchen-usb-1-analog": {"kids/cartoons"}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("allocations (-want +got):\n%s", diff)
	}
}
