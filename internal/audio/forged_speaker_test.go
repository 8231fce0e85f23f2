// SPDX-License-Identifier: Apache-2.0

package audio

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/liken-sh/operators/internal/audio/gate"
	"github.com/liken-sh/operators/internal/pipewire"
	"github.com/liken-sh/operators/internal/pipewire/native"
	"github.com/liken-sh/operators/test/bluezsim"
	"github.com/liken-sh/operators/test/poll"
	"github.com/liken-sh/operators/test/pwtest"
)

// On real PipeWire and WirePlumber with the simulated bluetoothd, a
// client of PipeWire's socket makes a sink named like a speaker's
// (bluez_output.<address>.9) carrying the speaker's address, its device's
// id, device.api bluez5 and WirePlumber's client.id. The claim gate's
// record holds the speaker's real node alone (the daemon sets a
// client-node's client.id, so it is not WirePlumber's), the operator
// ignores the forgery and reports it (a log line, audio_untrusted_nodes_total
// on the speaker), and when the real node is destroyed the speaker is
// published with no node rather than with the forgery.
func TestForgedSpeakerNodeIsIgnored(t *testing.T) {
	sim := bluezsim.New(t, bluezsim.Options{})
	if _, err := sim.AddAdapter("hci0", "00:1A:7D:DA:71:13"); err != nil {
		t.Fatal(err)
	}
	hw, _, outputs := declaredOutputs(t)
	d := pwtest.New(t, pwtest.Options{Outputs: outputs, MediaBus: sim.Address()})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if _, err := sim.WaitEndpoints(ctx, "hci0", bluezsim.A2DPSourceUUID, 60*time.Second); err != nil {
		t.Fatal(err)
	}
	if _, err := sim.AddSpeaker("hci0", speakerAddress, bluezsim.Speaker{Name: "Living Room",
		Codecs: []bluezsim.Codec{bluezsim.SBC}}); err != nil {
		t.Fatal(err)
	}
	reg := prometheus.NewRegistry()
	r := runOperator(t, hw, d.Remote(), d.PipeWireConfD, time.Minute, func(c *Config) {
		c.BusAddress, c.Registerer = sim.Address(), reg
	})
	if err := sim.Connect("hci0", speakerAddress); err != nil {
		t.Fatal(err)
	}
	r.wait(t, "the speaker connected with its node", func(p published) bool {
		dev, ok := p[speakerDevice]
		return ok && len(dev.Taints) == 0 && attr(dev, "nodeName") == speakerNode
	})
	g, err := d.Remote().Dump(ctx)
	if err != nil {
		t.Fatal(err)
	}
	real, dev, ok := g.SpeakerNode(speakerAddress)
	if !ok {
		t.Fatal("no speaker node in the graph")
	}
	trust, err := gate.ReadTrusted(d.RuntimeDir)
	if err != nil {
		t.Fatal(err)
	}
	if !trust.TrustsSpeaker(g.Cookie, real.Name, real.ID) {
		t.Fatalf("the record %+v does not hold the speaker's node %s (%d)", trust, real.Name, real.ID)
	}

	c, err := native.Dial(ctx, d.SocketPath(), map[string]string{"application.name": "speaker forger"})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	go func() {
		for range c.Events() {
		}
	}()
	const forgedName = "bluez_output.A0_AB_51_33_B7_12.9"
	if _, err := c.CreateClientNode(map[string]string{"media.class": "Audio/Sink", "node.name": forgedName,
		"node.description": "Living Room", pipewire.PropBlueZAddress: speakerAddress, pipewire.PropDeviceAPI: pipewire.DeviceAPIBlueZ,
		pipewire.PropDeviceID: fmt.Sprint(dev.ID), "client.id": real.Props["client.id"], pipewire.PropBlueZProfile: "a2dp-sink",
		pipewire.PropBlueZCodec: "sbc"}); err != nil {
		t.Fatal(err)
	}
	var forged pipewire.Node
	poll.WaitFor(t, ctx, "the forged node in the graph", 30*time.Second, func() (bool, string) {
		g, err := d.Remote().Dump(ctx)
		if err != nil {
			return false, err.Error()
		}
		forged, ok = g.NodeByName(forgedName)
		return ok, ""
	})
	t.Logf("forged node %d: client.id %s (WirePlumber's %s), device.id %s", forged.ID, forged.Props["client.id"], real.Props["client.id"], forged.Props[pipewire.PropDeviceID])
	if forged.Props[pipewire.PropDeviceID] != fmt.Sprint(dev.ID) || forged.Props[pipewire.PropBlueZAddress] != speakerAddress {
		t.Fatalf("the forgery does not carry the speaker's device and address: %v", forged.Props)
	}
	r.waitLog(t, "Ignoring a node that poses as a speaker's", forgedName)
	if got := untrustedCount(t, reg, speakerDevice); got != 1 {
		t.Errorf("audio_untrusted_nodes_total{endpoint=%s} %v, want 1 (one forgery, reported once)", speakerDevice, got)
	}

	// The real node goes: the speaker has no node, and is never
	// published with the forgery's.
	if out, err := d.Command(ctx, "pw-cli", "destroy", fmt.Sprint(real.ID)).CombinedOutput(); err != nil {
		t.Fatalf("pw-cli destroy: %v: %s", err, out)
	}
	r.wait(t, "the speaker without its node", func(p published) bool {
		dev, ok := p[speakerDevice]
		return ok && attr(dev, "nodeName") != speakerNode
	})
	time.Sleep(2 * time.Second) // passes of the graph without the real node
	r.alive(t)
	for _, p := range r.since(func(p published) bool { return true }) {
		if dev := p[speakerDevice]; attr(dev, "nodeName") == forgedName || !strings.HasPrefix(attr(dev, "nodeName"), "bluez_output") && !tainted(dev, TaintNoSink) {
			t.Fatalf("the speaker was published as %v", dev)
		}
	}
}

// untrustedCount reads audio_untrusted_nodes_total{endpoint} from reg.
func untrustedCount(t *testing.T, reg *prometheus.Registry, endpoint string) float64 {
	t.Helper()
	fams, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range fams {
		if f.GetName() != "audio_untrusted_nodes_total" {
			continue
		}
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "endpoint" && l.GetValue() == endpoint {
					return m.GetCounter().GetValue()
				}
			}
		}
	}
	return 0
}
