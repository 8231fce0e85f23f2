// SPDX-License-Identifier: Apache-2.0

package pipewire_test

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/liken-sh/operators/internal/audio/modes"
	"github.com/liken-sh/operators/internal/pipewire"
	"github.com/liken-sh/operators/test/bluezsim"
	"github.com/liken-sh/operators/test/pwtest"
)

const speakerAddr = "A0:AB:51:33:B7:12"

// waitSpeaker dumps the graph until ok accepts the speaker's node and
// device, and returns them; it fails the test after the context ends.
func waitSpeaker(t *testing.T, ctx context.Context, d *pwtest.Daemons, what string, ok func(pipewire.Node, pipewire.Device) bool) (pipewire.Node, pipewire.Device) {
	t.Helper()
	var last string
	for {
		g, err := d.Remote().Dump(ctx)
		if err == nil {
			n, dev, found := g.SpeakerNode(speakerAddr)
			if found && ok(n, dev) {
				return n, dev
			}
			last = "no node"
			if found {
				last = n.Name + " codec " + n.Props[pipewire.PropBlueZCodec] + " codecs " + strings.Join(dev.CodecNames(), " ")
			}
		} else {
			last = err.Error()
		}
		select {
		case <-ctx.Done():
			t.Fatalf("%s: not within the bound (last: %s)\n%s", what, last, d.Logs())
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// The declare-written Bluetooth fragment, real WirePlumber 0.5 and real
// PipeWire 1.4 against the simulated bluetoothd: WirePlumber registers
// its A2DP source endpoints, and when a paired speaker connects the
// simulator configures a stream through one of them, PipeWire makes a
// bluez_output node for it with the codec the transport carries, the
// device offers the codecs the speaker has, a stream played to the node
// arrives at the speaker's end of the transport socket, a codec written
// to the device is switched through the speaker's stream endpoint (the
// node is rebuilt), and the node goes when the speaker disconnects.
func TestLiveSpeakerNode(t *testing.T) {
	sim := bluezsim.New(t, bluezsim.Options{})
	if _, err := sim.AddAdapter("hci0", "00:1A:7D:DA:71:13"); err != nil {
		t.Fatal(err)
	}
	d := pwtest.New(t, pwtest.Options{MediaBus: sim.Address(),
		Outputs: []pipewire.Output{pwtest.NullOutput(0, 0, "liken.audio.card0-pcm0")}})
	ctx := ctxFor(t, 3*time.Minute)
	eps, err := sim.WaitEndpoints(ctx, "hci0", bluezsim.A2DPSourceUUID, 60*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	var paths []string
	for _, e := range eps {
		paths = append(paths, string(e.Path))
	}
	t.Logf("WirePlumber registered %d endpoints: %s", len(eps), strings.Join(paths, " "))
	for _, want := range []string{"/MediaEndpoint/A2DPSource/sbc", "/MediaEndpoint/A2DPSource/aptx", "/MediaEndpoint/A2DPSource/ldac"} {
		if !slices.Contains(paths, want) {
			t.Errorf("no endpoint %s registered", want)
		}
	}

	if _, err := sim.AddSpeaker("hci0", speakerAddr, bluezsim.Speaker{Name: "Living Room",
		Codecs: []bluezsim.Codec{bluezsim.SBC, bluezsim.AptX, bluezsim.LDAC}, AbsoluteVolume: true, Volume: 64}); err != nil {
		t.Fatal(err)
	}
	connected := time.Now()
	if err := sim.Connect("hci0", speakerAddr); err != nil {
		t.Fatal(err)
	}
	tr, err := sim.WaitTransport(ctx, "hci0", speakerAddr, 30*time.Second, nil)
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := tr.Configuration()
	if err != nil {
		t.Fatalf("WirePlumber chose a configuration the parser refuses: %v", err)
	}
	t.Logf("stream configured through %s: %+v", tr.Endpoint, cfg)

	node, dev := waitSpeaker(t, ctx, d, "bluez_output node", func(n pipewire.Node, _ pipewire.Device) bool {
		return n.Props[pipewire.PropBlueZCodec] != ""
	})
	if !strings.HasPrefix(node.Name, "bluez_output."+strings.ReplaceAll(speakerAddr, ":", "_")) {
		t.Errorf("node name %q, want bluez_output.<address>...", node.Name)
	}
	if node.MediaClass != pipewire.MediaClassSink {
		t.Errorf("node media.class %q, want %q", node.MediaClass, pipewire.MediaClassSink)
	}
	if got, want := node.Props[pipewire.PropBlueZCodec], string(cfg.Codec); got != want {
		t.Errorf("node codec %q, the transport's is %q", got, want)
	}
	codecs := dev.CodecNames()
	t.Logf("node %s (id %d) codec %s, seen %v after the link came up; device offers %v", node.Name, node.ID,
		node.Props[pipewire.PropBlueZCodec], time.Since(connected).Round(time.Millisecond), codecs)
	for _, want := range []string{"sbc", "aptx", "ldac"} {
		if !slices.Contains(codecs, want) {
			t.Errorf("device codecs %v lack %s", codecs, want)
		}
	}
	if slices.Contains(codecs, "aptx_hd") {
		t.Errorf("device codecs %v offer aptX HD, which the speaker has not", codecs)
	}

	// A stream played to the node reaches the speaker's socket.
	player, err := d.StartPlaying(ctx, node.Name, pwtest.Tone(440, 0.5, 48000, 2, time.Second), 48000, 2)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := sim.WaitTransport(ctx, "hci0", speakerAddr, 30*time.Second, func(tr bluezsim.Transport) bool {
		return tr.State == "active" && tr.Bytes > 10000
	}); err != nil {
		t.Fatal(err)
	}
	if err := player.Stop(); err != nil {
		t.Logf("player: %v", err)
	}

	// A codec switch, as the operator makes one: the device's codec
	// param, then BlueZ reconfigures through the speaker's endpoint.
	target := -1
	for _, c := range dev.Codecs {
		if c.Name != node.Props[pipewire.PropBlueZCodec] && (c.Name == "aptx" || c.Name == "ldac" || c.Name == "sbc") {
			target = c.ID
			break
		}
	}
	if target < 0 {
		t.Fatalf("no other codec to switch to in %v", codecs)
	}
	want := dev.CodecName(target)
	if err := d.Remote().SetCodec(ctx, dev.ID, target); err != nil {
		t.Fatal(err)
	}
	switched, _ := waitSpeaker(t, ctx, d, "codec switch to "+want, func(n pipewire.Node, _ pipewire.Device) bool {
		return n.Props[pipewire.PropBlueZCodec] == want
	})
	t.Logf("switched to %s: node %s id %d", want, switched.Name, switched.ID)
	tr2, err := sim.WaitTransport(ctx, "hci0", speakerAddr, 30*time.Second, func(t bluezsim.Transport) bool { return t.Path != tr.Path })
	if err != nil {
		t.Fatal(err)
	}
	if c, err := tr2.Configuration(); err != nil || string(c.Codec) != want {
		t.Errorf("transport after the switch: %+v, %v; want %s", c, err, want)
	}

	// Disconnected: the node goes.
	if err := sim.Disconnect("hci0", speakerAddr, bluezsim.ReasonRemote); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		g, err := d.Remote().Dump(ctx)
		if err == nil {
			if _, _, found := g.SpeakerNode(speakerAddr); !found {
				break
			}
		}
		if time.Now().After(deadline) {
			t.Fatal("the speaker's node is still there 30 s after it disconnected")
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// endpointsProbe runs the endpoints-registered probe against the bus and
// returns its status and what it said.
func endpointsProbe(t *testing.T, address string) (int, string) {
	t.Helper()
	var out strings.Builder
	code := modes.EndpointsRegistered(context.Background(), nil, modes.Env{
		Environ: []string{modes.EnvSystemBus + "=" + address}, Stdout: &out, Stderr: &out})
	return code, strings.TrimSpace(out.String())
}

// The endpoints-registered probe against real WirePlumber: it passes once
// WirePlumber's endpoints are registered, fails after the bus restarts
// (a new dbus-daemon and bluetoothd, which hold no endpoint), and passes
// again once WirePlumber alone is restarted, as the liveness probe makes
// the kubelet do; the speaker then comes back as a node when it
// reconnects.
func TestLiveEndpointsProbeAcrossBusRestart(t *testing.T) {
	sim := bluezsim.New(t, bluezsim.Options{})
	if _, err := sim.AddAdapter("hci0", "00:1A:7D:DA:71:13"); err != nil {
		t.Fatal(err)
	}
	if _, err := sim.AddSpeaker("hci0", speakerAddr, bluezsim.Speaker{Name: "Living Room"}); err != nil {
		t.Fatal(err)
	}
	d := pwtest.New(t, pwtest.Options{MediaBus: sim.Address(),
		Outputs: []pipewire.Output{pwtest.NullOutput(0, 0, "liken.audio.card0-pcm0")}})
	ctx := ctxFor(t, 3*time.Minute)
	if _, err := sim.WaitEndpoints(ctx, "hci0", bluezsim.A2DPSourceUUID, 60*time.Second); err != nil {
		t.Fatal(err)
	}
	code, said := endpointsProbe(t, sim.Address())
	if code != 0 {
		t.Fatalf("with WirePlumber's endpoints registered the probe fails: %s", said)
	}
	t.Logf("registered: %s", said)

	if err := sim.RestartBus(ctx); err != nil {
		t.Fatal(err)
	}
	// WirePlumber does not register again by itself on the new bus
	// within a few seconds: the probe must see the loss.
	time.Sleep(3 * time.Second)
	code, said = endpointsProbe(t, sim.Address())
	if code != 1 {
		t.Fatalf("after the bus restart the probe passes (%s): the loss is not seen", said)
	}
	t.Logf("after the bus restart: %s", said)
	if d.WirePlumber().Exited() {
		t.Log("WirePlumber exited when its bus went")
	}

	d.StopWirePlumber()
	if err := d.StartWirePlumber(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := sim.WaitEndpoints(ctx, "hci0", bluezsim.A2DPSourceUUID, 60*time.Second); err != nil {
		t.Fatal(err)
	}
	if code, said = endpointsProbe(t, sim.Address()); code != 0 {
		t.Fatalf("after WirePlumber's restart the probe fails: %s", said)
	}
	if err := sim.Connect("hci0", speakerAddr); err != nil {
		t.Fatal(err)
	}
	n, _ := waitSpeaker(t, ctx, d, "the speaker's node after the restart", func(n pipewire.Node, _ pipewire.Device) bool {
		return n.Props[pipewire.PropBlueZCodec] == "sbc"
	})
	t.Logf("recovered: %s; speaker node %s", said, n.Name)
}
