// SPDX-License-Identifier: Apache-2.0

package audio

import (
	"testing"

	"github.com/liken-sh/operators/internal/audio/speakers"
	"github.com/liken-sh/operators/internal/bdaddr"
	"github.com/liken-sh/operators/internal/pipewire"
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
		// A monitorless HDMI output says what a person can fix.
		want := ProblemPipeWireDown
		if hasTaint(d, TaintNoMonitor) {
			want = ProblemNoMonitor
		}
		if d.Problem != want {
			t.Errorf("%s: PipeWire down, problem %q, want %q", d.Name, d.Problem, want)
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

// TestPipeWireDownEvictsNoSpeakerConsumer: the same rule for a Bluetooth
// speaker. Connected, it is only no-sink while it has no node, whether
// PipeWire answers or not; switched off, it is disconnected.
func TestPipeWireDownEvictsNoSpeakerConsumer(t *testing.T) {
	on := speakers.Speaker{Address: bdaddr.MustParse("A0:AB:51:33:B7:12"), Alias: "Kitchen", Connected: true}
	off := on
	off.Connected = false
	for _, c := range []struct {
		what         string
		sp           speakers.Speaker
		g            *pipewire.Graph
		disconnected bool
		problem      string
	}{
		{"connected, PipeWire down", on, nil, false, ProblemNoNode},
		{"switched off, PipeWire down", off, nil, true, ProblemSpeakerOff},
		{"connected, PipeWire up without its node (codec switch, WirePlumber restart)", on, &pipewire.Graph{}, false, ProblemNoNode},
	} {
		devs := SpeakerDevices(SpeakerEndpoints([]speakers.Speaker{c.sp}, c.g))
		if len(devs) != 1 {
			t.Fatalf("%s: %d devices, want 1", c.what, len(devs))
		}
		if got := hasTaint(devs[0], TaintDisconnected); got != c.disconnected || !hasTaint(devs[0], TaintNoSink) {
			t.Errorf("%s: taints %v, want %s %v and %s", c.what, devs[0].Taints, TaintDisconnected, c.disconnected, TaintNoSink)
		}
		if devs[0].Problem != c.problem {
			t.Errorf("%s: problem %q, want %q", c.what, devs[0].Problem, c.problem)
		}
	}
}
