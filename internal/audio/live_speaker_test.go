// SPDX-License-Identifier: Apache-2.0

package audio

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/liken-sh/operators/test/bluezsim"
	"github.com/liken-sh/operators/test/pwtest"
)

// The operator against real PipeWire and WirePlumber and the simulated
// bluetoothd: a paired speaker is published tainted while it is off,
// untainted with the bluez_output node WirePlumber makes when it
// connects (codec and codecs from the graph), and through a restart of
// the whole bus (a new dbus-daemon at the same socket path) it is kept,
// disconnected, the operator follows the new bus by the socket directory
// and, once WirePlumber alone has restarted (the liveness probe's repair)
// and the speaker reconnects, it is untainted again. No card output
// changes meanwhile.
func TestLiveSpeakerAcrossBusRestart(t *testing.T) {
	sim := bluezsim.New(t, bluezsim.Options{})
	if _, err := sim.AddAdapter("hci0", "00:1A:7D:DA:71:13"); err != nil {
		t.Fatal(err)
	}
	hw, _, outputs := declaredOutputs(t)
	d := pwtest.New(t, pwtest.Options{Outputs: outputs, MediaBus: sim.Address()})
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	if _, err := sim.WaitEndpoints(ctx, "hci0", bluezsim.A2DPSourceUUID, 60*time.Second); err != nil {
		t.Fatal(err)
	}
	if _, err := sim.AddSpeaker("hci0", speakerAddress, bluezsim.Speaker{Name: "Living Room",
		Codecs: []bluezsim.Codec{bluezsim.SBC, bluezsim.AptX}}); err != nil {
		t.Fatal(err)
	}
	r := runOperator(t, hw, d.Remote(), d.PipeWireConfD, time.Minute, func(c *Config) { c.BusAddress = sim.Address() })
	r.wait(t, "the speaker paired, off", speakerIs(false, false, TaintDisconnected, TaintNoSink))

	if err := sim.Connect("hci0", speakerAddress); err != nil {
		t.Fatal(err)
	}
	live := r.wait(t, "the speaker connected with its node", func(p published) bool {
		dev, ok := p[speakerDevice]
		return ok && len(dev.Taints) == 0 && strings.HasPrefix(attr(dev, "nodeName"), "bluez_output.A0_AB_51_33_B7_12")
	})
	dev := live[speakerDevice]
	if got := attr(dev, "codecs"); !strings.Contains(got, "sbc") || !strings.Contains(got, "aptx") {
		t.Errorf("codecs %q, want sbc and aptx", got)
	}
	if got := attr(dev, "codec"); got != "sbc" && got != "aptx" {
		t.Errorf("codec %q", got)
	}
	t.Logf("published: node %s codec %s codecs %q", attr(dev, "nodeName"), attr(dev, "codec"), attr(dev, "codecs"))

	if err := sim.RestartBus(ctx); err != nil {
		t.Fatal(err)
	}
	r.wait(t, "the speaker kept, disconnected, after the bus restart", func(p published) bool {
		dev, ok := p[speakerDevice]
		return ok && attr(dev, "connected") == "false" && tainted(dev, TaintDisconnected)
	})
	r.waitLog(t, "The media bus or bluetoothd went away")
	// WirePlumber keeps its dead connection; its liveness probe has the
	// kubelet restart it alone.
	d.StopWirePlumber()
	if err := d.StartWirePlumber(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := sim.WaitEndpoints(ctx, "hci0", bluezsim.A2DPSourceUUID, 60*time.Second); err != nil {
		t.Fatal(err)
	}
	if err := sim.Connect("hci0", speakerAddress); err != nil {
		t.Fatal(err)
	}
	r.wait(t, "the speaker back, untainted", func(p published) bool {
		dev, ok := p[speakerDevice]
		return ok && len(dev.Taints) == 0 && attr(dev, "connected") == "true"
	})
	delete(live, speakerDevice)
	othersAsBefore(t, live, r.since(func(p published) bool { return true }), speakerDevice)
	if n := strings.Count(r.logs(), "Following BlueZ's speakers on the media bus"); n < 2 {
		t.Errorf("the operator followed %d buses, want the first and the new one", n)
	}
}
