// SPDX-License-Identifier: Apache-2.0

package audio

import (
	"testing"
)

// TestPipeWireDownEvictsNoConsumer: while PipeWire does not answer (killed,
// or restarted in place for a new layout) every output is published with
// no sink, so nothing new is scheduled onto it, but an output that has its
// monitor is not tainted disconnected: that taint is NoExecute, and the
// eviction would end consumers whose streams the next PipeWire takes back.
// An HDMI output with no monitor stays disconnected, PipeWire or not, and
// a running PipeWire that lacks an output's node still evicts.
func TestPipeWireDownEvictsNoConsumer(t *testing.T) {
	eps, _ := Endpoints("kitchen", xpsCards(t))
	down := map[string]bool{}
	for _, d := range Devices(eps, nil) {
		down[d.Name] = hasTaint(d, TaintDisconnected)
		if !hasTaint(d, TaintNoSink) {
			t.Errorf("%s: PipeWire down, but not tainted %s: %v", d.Name, TaintNoSink, d.Taints)
		}
	}
	if !down["kitchen-pci-0000-00-1f-3-hdmi-1"] {
		t.Error("the HDMI output with no monitor is not disconnected while PipeWire is down")
	}
	for _, name := range []string{"kitchen-pci-0000-00-1f-3-hdmi-3", "kitchen-pci-0000-00-1f-3-jack-out", "kitchen-pci-0000-00-1f-3-speaker"} {
		if got, ok := down[name]; !ok || got {
			t.Errorf("%s while PipeWire is down: published %v, tainted %s %v; want published, not disconnected", name, ok, TaintDisconnected, got)
		}
	}
	for _, d := range Devices(eps, map[string]bool{}) {
		if d.Name == "kitchen-pci-0000-00-1f-3-jack-out" && !hasTaint(d, TaintDisconnected) {
			t.Errorf("a running PipeWire without the jack's node: %v, want %s", d.Taints, TaintDisconnected)
		}
	}
}
