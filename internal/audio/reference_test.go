// SPDX-License-Identifier: Apache-2.0

package audio

import (
	"testing"

	"github.com/liken-sh/operators/internal/audio/speakers"
	"github.com/liken-sh/operators/internal/bdaddr"
	"github.com/liken-sh/operators/internal/dra"
	"github.com/liken-sh/operators/internal/pipewire"
)

// TestReferenceListsEveryPublishedAttribute keeps AttributeReference and
// TaintReference (and so docs/reference/attributes.md) honest: every
// attribute and taint the recorded laptop's outputs get, with PipeWire up
// and down, is listed, and every listed attribute but portID is published
// by some output of it.
func TestReferenceListsEveryPublishedAttribute(t *testing.T) {
	eps, _ := Endpoints("kitchen", xpsCards(t))
	live := map[string]bool{}
	for _, e := range eps {
		live[e.NodeName] = true
	}
	attrs := map[dra.QualifiedName]bool{}
	for _, a := range AttributeReference {
		attrs[a.Name] = true
	}
	taints := map[string]bool{}
	for _, tr := range TaintReference {
		taints[tr.Key] = true
	}
	problems := map[string]bool{}
	for _, p := range ProblemReference {
		problems[p.Problem] = true
	}
	published := map[dra.QualifiedName]bool{}
	g, err := pipewire.ParseDump([]byte(`[
	 {"id": 90, "type": "PipeWire:Interface:Device", "info": {"props": {"device.api": "bluez5", "api.bluez5.address": "A0:AB:51:33:B7:12"},
	  "params": {"PropInfo": [{"id": "bluetoothAudioCodec", "type": {"alt1": 1}, "labels": [1, "SBC"]}]}}},
	 {"id": 91, "type": "PipeWire:Interface:Node", "info": {"props": {"node.name": "bluez_output.A0_AB_51_33_B7_12.1",
	  "media.class": "Audio/Sink", "device.id": 90, "api.bluez5.address": "A0:AB:51:33:B7:12", "api.bluez5.codec": "sbc"}}}]`))
	if err != nil {
		t.Fatal(err)
	}
	speaker := []speakers.Speaker{{Address: bdaddr.MustParse("A0:AB:51:33:B7:12"), Alias: "Kitchen", Connected: true}}
	for _, devs := range [][]dra.Device{Devices(eps, live), Devices(eps, nil), SpeakerDevices(SpeakerEndpoints(speaker, g)), SpeakerDevices(SpeakerEndpoints(speaker, nil))} {
		for _, d := range devs {
			for name := range d.Attributes {
				published[name] = true
				if !attrs[name] {
					t.Errorf("%s publishes %s, which AttributeReference does not list", d.Name, name)
				}
			}
			for _, tn := range d.Taints {
				if !taints[tn.Key] {
					t.Errorf("%s is tainted %s, which TaintReference does not list", d.Name, tn.Key)
				}
			}
			if d.Problem != "" && !problems[d.Problem] {
				t.Errorf("%s has the problem %q, which ProblemReference does not list", d.Name, d.Problem)
			}
			if d.Tainted() != (d.Problem != "") {
				t.Errorf("%s: tainted %v with problem %q: an unfit device must say why, a fit one nothing", d.Name, d.Taints, d.Problem)
			}
		}
	}
	// The recorded monitor's ELD has port id 0, and a 0 is not published.
	published["portID"] = true
	for name := range attrs {
		if !published[name] {
			t.Errorf("AttributeReference lists %s, which no output of the recorded laptop publishes", name)
		}
	}
}
