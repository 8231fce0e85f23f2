// SPDX-License-Identifier: Apache-2.0

package pipewire_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/liken-sh/operators/internal/pipewire"
	"github.com/liken-sh/operators/test/bluezsim"
	"github.com/liken-sh/operators/test/pwtest"
)

// These tests run the real PipeWire 1.4 and WirePlumber 0.5 (pwtest),
// configured with this package's generated files.

func ctxFor(t *testing.T, d time.Duration) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

// The declared nodes exist in pw-dump as Audio/Sink and Audio/Source with
// every private property, and text with quotes, braces, backslashes,
// control characters and non-ASCII survives PipeWire's SPA-JSON parser
// unchanged.
func TestLiveDeclaredNodes(t *testing.T) {
	hard := "say \"hi\" {x} [y] = : , # not a comment \\ back\tslash\nnew line caf\u00e9 \u2028 \U0001F600 <&>"
	sinkA := pwtest.NullOutput(0, 3, "liken.audio.card0-pcm3")
	sinkA.PCMID = "HDMI 0"
	sinkA.Description = hard
	sinkA.Output = "kitchen-pci-0000-00-1f-3-hdmi-0"
	sinkA.Extra = map[string]string{"test.text": hard}
	sinkB := pwtest.NullOutput(1, 0, "liken.audio.card1-pcm0")
	sinkB.PCMID = "USB Audio"
	sinkB.Channels, sinkB.Positions = 6, []string{"FL", "FR", "RL", "RR", "FC", "LFE"}
	source := pwtest.NullOutput(1, 0, "liken.audio.card1-pcm0c")
	source.Direction = pipewire.Capture
	source.Output = ""
	outputs := []pipewire.Output{sinkA, sinkB, source}
	d := pwtest.New(t, pwtest.Options{Outputs: outputs})

	g, err := d.Remote().Dump(ctxFor(t, time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range outputs {
		n, ok := g.NodeByName(o.Name)
		if !ok {
			t.Errorf("node %s not in the graph", o.Name)
			continue
		}
		if n.MediaClass != o.Direction.MediaClass() {
			t.Errorf("%s: media.class %q, want %q", o.Name, n.MediaClass, o.Direction.MediaClass())
		}
		want := &pipewire.Declared{Card: o.Card, PCM: o.Device, PCMID: o.PCMID, Output: o.Output}
		if n.Declared == nil || *n.Declared != *want {
			t.Errorf("%s: declared %+v, want %+v", o.Name, n.Declared, want)
		}
		if got := n.Props[pipewire.PropFactoryName]; got != o.Direction.Factory() {
			t.Errorf("%s: factory.name %q, want %q", o.Name, got, o.Direction.Factory())
		}
		if got := n.Props[pipewire.PropALSAPath]; got != "null" {
			t.Errorf("%s: api.alsa.path %q", o.Name, got)
		}
		if got := n.Props[pipewire.PropPosition]; got != strings.Join(o.Positions, ",") {
			t.Errorf("%s: audio.position %q, want %q", o.Name, got, strings.Join(o.Positions, ","))
		}
		if n.State != pipewire.NodeStateSuspended {
			t.Errorf("%s: state %q, want suspended (nothing plays)", o.Name, n.State)
		}
		if n.Volume == nil || n.Volume.Volume == nil || *n.Volume.Volume != 1 || len(n.Volume.ChannelVolumes) != o.Channels {
			t.Errorf("%s: volume %+v, want unity with %d channel volumes", o.Name, n.Volume, o.Channels)
		}
	}
	n, _ := g.NodeByName(sinkA.Name)
	if n.Description != hard || n.Props["test.text"] != hard {
		t.Errorf("text changed through PipeWire:\n got %q\n and %q\nwant %q", n.Description, n.Props["test.text"], hard)
	}
	// The declaration reads back as written.
	back, err := pipewire.ReadDeclaration(d.DeclarationPath())
	if err != nil {
		t.Fatal(err)
	}
	if len(back) != 3 || back[0].Name != sinkA.Name || back[0].Description != hard || back[2].Direction != pipewire.Capture {
		t.Errorf("declaration read back as %+v", back)
	}
}

// WirePlumber loaded the generated volume fragment: its sm-settings
// metadata holds unity where its own default is 0.4 (0.064 cubic, as it
// prints it), and the pipewire-0 socket grants clients unrestricted
// access (the baked access fragment).
func TestLiveFragmentsLoaded(t *testing.T) {
	d := pwtest.New(t, pwtest.Options{Outputs: []pipewire.Output{pwtest.NullOutput(0, 0, "liken.audio.card0-pcm0")}})
	ctx := ctxFor(t, time.Minute)
	settings, err := d.Metadata(ctx, "sm-settings")
	if err != nil {
		t.Fatal(err)
	}
	var vol float64
	if err := json.Unmarshal(settings["device.routes.default-sink-volume"], &vol); err != nil || vol != 1.0 {
		t.Errorf("device.routes.default-sink-volume = %s (%v), want 1.0", settings["device.routes.default-sink-volume"], err)
	}
	schema, err := d.Metadata(ctx, "schema-sm-settings")
	if err != nil {
		t.Fatal(err)
	}
	var def struct{ Default float64 }
	if err := json.Unmarshal(schema["device.routes.default-sink-volume"], &def); err != nil || def.Default == 1.0 {
		t.Errorf("schema default %s: the test cannot tell the fragment from the default", schema["device.routes.default-sink-volume"])
	}

	// A client on pipewire-0, as a consumer's is.
	rec, err := d.RecordMonitor(ctx, "liken.audio.card0-pcm0", 48000, 2)
	if err != nil {
		t.Fatal(err)
	}
	defer rec.Stop()
	var access any
	for access == nil && ctx.Err() == nil {
		objs, err := d.RawDump(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for _, o := range objs {
			p := o.InfoProps()
			if o.Type == "PipeWire:Interface:Client" && fmt.Sprint(p["application.process.id"]) == fmt.Sprint(rec.Pid()) {
				if p["pipewire.sec.socket"] != "pipewire-0" {
					t.Fatalf("pw-record connected through %v", p["pipewire.sec.socket"])
				}
				access = p["pipewire.access"]
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	if access != "unrestricted" {
		t.Errorf("pipewire-0 client access %v, want unrestricted", access)
	}
	// The profile left out the udev-based monitors: no ALSA device was
	// made from the machine's cards, only the declared node.
	g, err := d.Remote().Dump(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range g.Nodes {
		if strings.HasPrefix(n.Name, "alsa_") {
			t.Errorf("node %s from an ALSA monitor", n.Name)
		}
	}
	if log, _ := os.ReadFile(d.WirePlumber().LogPath); strings.Contains(string(log), "monitor.alsa") {
		t.Errorf("WirePlumber log mentions the ALSA monitor:\n%s", log)
	}
}

// A tone played with PIPEWIRE_NODE naming one declared sink reaches that
// sink and no other: the monitors of both sinks are recorded while it
// plays, and a Goertzel filter finds the 1 kHz tone at its amplitude on
// one and nothing on the other.
func TestLiveToneReachesOnlyItsSink(t *testing.T) {
	const rate, channels, freq, amp = 48000, 2, 1000.0, 0.5
	a := pwtest.NullOutput(0, 3, "liken.audio.card0-pcm3")
	b := pwtest.NullOutput(0, 7, "liken.audio.card0-pcm7")
	d := pwtest.New(t, pwtest.Options{Outputs: []pipewire.Output{a, b}})
	ctx := ctxFor(t, 60*time.Second)

	g, err := d.Remote().Dump(ctx)
	if err != nil {
		t.Fatal(err)
	}
	na, okA := g.NodeByName(a.Name)
	nb, okB := g.NodeByName(b.Name)
	if !okA || !okB {
		t.Fatalf("declared sinks missing: %v %v", okA, okB)
	}
	recA, err := d.RecordMonitor(ctx, a.Name, rate, channels)
	if err != nil {
		t.Fatal(err)
	}
	recB, err := d.RecordMonitor(ctx, b.Name, rate, channels)
	if err != nil {
		t.Fatal(err)
	}
	// Both recorders must be linked to their sink's monitor before the
	// tone starts.
	for {
		g, err := d.Remote().Dump(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if linkedFrom(g, na.ID) && linkedFrom(g, nb.ID) {
			break
		}
		if ctx.Err() != nil {
			t.Fatal("recorders never linked to the sink monitors")
		}
		time.Sleep(50 * time.Millisecond)
	}
	start := time.Now()
	if err := d.Play(ctx, a.Name, pwtest.Tone(freq, amp, rate, channels, 1500*time.Millisecond), rate, channels); err != nil {
		t.Fatal(err)
	}
	t.Logf("pw-play took %v for 1.5 s of tone", time.Since(start).Round(time.Millisecond))
	time.Sleep(200 * time.Millisecond)
	pcmA, errA := recA.Stop()
	pcmB, errB := recB.Stop()
	if errA != nil || errB != nil {
		t.Fatalf("recording: %v; %v", errA, errB)
	}
	const window = rate / 10 // 100 ms: a whole number of periods at 1 and 1.5 kHz
	for ch := 0; ch < channels; ch++ {
		xa, xb := pwtest.Samples(pcmA, channels, ch), pwtest.Samples(pcmB, channels, ch)
		if len(xa) < rate || len(xb) < rate {
			t.Fatalf("channel %d: recorded %d and %d samples, want at least a second", ch, len(xa), len(xb))
		}
		toneA := pwtest.PeakTone(xa, rate, freq, window)
		offA := pwtest.PeakTone(xa, rate, 1500, window)
		toneB := pwtest.PeakTone(xb, rate, freq, window)
		t.Logf("channel %d: 1 kHz on %s %.4f (1.5 kHz %.5f), on %s %.5f", ch, a.Name, toneA, offA, b.Name, toneB)
		if toneA < amp*0.9 || toneA > amp*1.1 {
			t.Errorf("channel %d: tone on the target sink at %.4f, want %.2f±10%%", ch, toneA, amp)
		}
		if offA > 0.01 {
			t.Errorf("channel %d: %.4f at 1.5 kHz on the target sink: not a clean tone", ch, offA)
		}
		if toneB > 0.001 {
			t.Errorf("channel %d: the other sink carried the tone at %.4f", ch, toneB)
		}
	}
}

// linkedFrom reports whether some link leaves node id (a sink's monitor
// ports are its only output ports).
func linkedFrom(g *pipewire.Graph, id uint32) bool {
	for _, l := range g.LinksOf(id) {
		if l.OutputNode == id {
			return true
		}
	}
	return false
}

// The monitor follows the graph: a node created with pw-cli appears in a
// snapshot with its properties, disappears when destroyed, and the
// monitor reports its child's end when PipeWire goes away.
func TestLiveMonitorFollowsGraph(t *testing.T) {
	d := pwtest.New(t, pwtest.Options{Outputs: []pipewire.Output{pwtest.NullOutput(0, 0, "liken.audio.card0-pcm0")}})
	ctx := ctxFor(t, 60*time.Second)
	m, err := d.Remote().Monitor(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Stop()
	first := waitGraph(t, m, func(g *pipewire.Graph) bool { _, ok := g.NodeByName("liken.audio.card0-pcm0"); return ok })
	if first.Objects < 10 {
		t.Errorf("first snapshot has %d objects, want the whole graph", first.Objects)
	}

	props := `{ factory.name = api.alsa.pcm.sink api.alsa.path = "null" node.name = "test.extra" media.class = "Audio/Sink" ` +
		`object.linger = true audio.rate = 48000 audio.channels = 2 liken.audio.card = 5 liken.audio.pcm = 2 liken.audio.output = "extra-out" }`
	if out, err := d.Command(ctx, "pw-cli", "create-node", "adapter", props).CombinedOutput(); err != nil {
		t.Fatalf("pw-cli create-node: %v: %s", err, out)
	}
	g := waitGraph(t, m, func(g *pipewire.Graph) bool { _, ok := g.NodeByName("test.extra"); return ok })
	n, _ := g.NodeByName("test.extra")
	if n.Declared == nil || *n.Declared != (pipewire.Declared{Card: 5, PCM: 2, Output: "extra-out"}) || n.MediaClass != pipewire.MediaClassSink {
		t.Errorf("created node read as %+v (declared %+v)", n, n.Declared)
	}
	if out, err := d.Command(ctx, "pw-cli", "destroy", fmt.Sprint(n.ID)).CombinedOutput(); err != nil {
		t.Fatalf("pw-cli destroy: %v: %s", err, out)
	}
	g = waitGraph(t, m, func(g *pipewire.Graph) bool { _, ok := g.NodeByName("test.extra"); return !ok })
	if _, ok := g.Node(n.ID); ok {
		if nn, _ := g.Node(n.ID); nn.Name == "test.extra" {
			t.Errorf("node id %d still there", n.ID)
		}
	}
	if _, ok := g.NodeByName("liken.audio.card0-pcm0"); !ok {
		t.Error("the declared node went with the created one")
	}

	// PipeWire goes away: the child ends and the monitor says so.
	d.StopPipeWire()
	select {
	case <-m.Done():
	case <-ctx.Done():
		t.Fatal("monitor did not end when PipeWire stopped")
	}
	if err := m.Err(); !errors.Is(err, pipewire.ErrMonitorEnded) {
		t.Errorf("Err() = %v, want ErrMonitorEnded", err)
	} else {
		t.Logf("monitor ended: %v", err)
	}
	for range m.Snapshots() { // closed after Done
	}

	// PipeWire starts again with another declaration; a new monitor sees
	// the new set, and the declaration on disk says the same.
	next := []pipewire.Output{pwtest.NullOutput(0, 0, "liken.audio.card0-pcm0"), pwtest.NullOutput(2, 1, "liken.audio.card2-pcm1")}
	if err := d.Declare(next); err != nil {
		t.Fatal(err)
	}
	if err := d.Restart(ctx); err != nil {
		t.Fatal(err)
	}
	m2, err := d.Remote().Monitor(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer m2.Stop()
	g = waitGraph(t, m2, func(g *pipewire.Graph) bool { _, ok := g.DeclaredNode(pipewire.PCM{Card: 2, Device: 1}); return ok })
	if _, ok := g.DeclaredNode(pipewire.PCM{Card: 0, Device: 0}); !ok {
		t.Error("card 0 PCM 0 missing after the restart")
	}
	declared, err := pipewire.ReadDeclaration(d.DeclarationPath())
	if err != nil || len(declared) != 2 || declared[1].PCM() != (pipewire.PCM{Card: 2, Device: 1}) {
		t.Errorf("declaration read back as %+v, %v", declared, err)
	}
}

// waitGraph reads snapshots until ok holds for one, failing the test
// after 30 s or if the monitor ends.
func waitGraph(t *testing.T, m *pipewire.Monitor, ok func(*pipewire.Graph) bool) *pipewire.Graph {
	t.Helper()
	if g := m.Latest(); g != nil && ok(g) {
		return g
	}
	timeout := time.After(30 * time.Second)
	for {
		select {
		case g, open := <-m.Snapshots():
			if !open {
				t.Fatalf("monitor ended: %v", m.Err())
			}
			if ok(g) {
				return g
			}
		case <-timeout:
			t.Fatalf("no matching snapshot in 30 s (%d batches)", m.Batches())
		}
	}
}

// Dump fails with pw-dump's reason when no PipeWire answers.
func TestLiveDumpWithoutPipeWire(t *testing.T) {
	if _, err := exec.LookPath("pw-dump"); err != nil {
		t.Fatal(err)
	}
	r := pipewire.Remote{RuntimeDir: t.TempDir()}
	_, err := r.Dump(ctxFor(t, time.Minute))
	if err == nil || !strings.Contains(err.Error(), "Host is down") {
		t.Errorf("Dump with no PipeWire: %v, want pw-dump's \"Host is down\"", err)
	}
}

// In the pod every client of PipeWire is in another PID namespace, where
// the kernel gives PipeWire a peer pid of 0. With the baked access
// fragment such clients are served and WirePlumber links their streams;
// without it PipeWire's legacy check takes them for sandboxed clients and
// pw-dump waits forever (the reference's startup-probe deadlock).
func TestLiveClientsInOtherPIDNamespace(t *testing.T) {
	sink := pwtest.NullOutput(0, 0, "liken.audio.card0-pcm0")
	d := pwtest.New(t, pwtest.Options{PIDNamespace: true, Outputs: []pipewire.Output{sink}})
	ctx := ctxFor(t, 90*time.Second)
	g, err := d.Remote().Dump(ctx)
	if err != nil {
		t.Fatal(err)
	}
	n, ok := g.NodeByName(sink.Name)
	if !ok {
		t.Fatal("declared sink missing")
	}
	rec, err := d.RecordMonitor(ctx, sink.Name, 48000, 2)
	if err != nil {
		t.Fatal(err)
	}
	defer rec.Stop()
	for !linkedFrom(g, n.ID) {
		if ctx.Err() != nil {
			t.Fatal("WirePlumber never linked the recorder")
		}
		time.Sleep(50 * time.Millisecond)
		if g, err = d.Remote().Dump(ctx); err != nil {
			t.Fatal(err)
		}
	}
	objs, err := d.RawDump(ctx)
	if err != nil {
		t.Fatal(err)
	}
	clients := 0
	for _, o := range objs {
		if p := o.InfoProps(); o.Type == "PipeWire:Interface:Client" && p["application.name"] != "pipewire" {
			clients++
			if fmt.Sprint(p["pipewire.sec.pid"]) != "0" {
				t.Errorf("client %v has pid %v: not in another PID namespace", p["application.name"], p["pipewire.sec.pid"])
			}
		}
	}
	if clients < 2 {
		t.Errorf("%d clients, want WirePlumber, pw-record and pw-dump", clients)
	}

	// The same PipeWire without the access fragment does not answer. The
	// claim gate, a client too, would wait for it for ever: left out.
	ctl, err := pwtest.Start(ctx, pwtest.Options{PIDNamespace: true, NoWirePlumber: true, NoGate: true,
		LeaveOut: []string{"pipewire/pipewire.conf.d/50-pipewire-access.conf"}})
	if err != nil {
		t.Fatal(err)
	}
	defer ctl.Stop()
	short, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	if _, err := ctl.Remote().Dump(short); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("without the access fragment pw-dump gave %v, want no answer", err)
	}
}

// A2DP's service class UUIDs (Bluetooth Assigned Numbers): the role an
// endpoint registered with BlueZ plays.
const (
	uuidA2DPSource = "0000110a-0000-1000-8000-00805f9b34fb"
	uuidA2DPSink   = "0000110b-0000-1000-8000-00805f9b34fb"
)

// With a media bus delivered, the Bluetooth fragment turns WirePlumber's
// BlueZ monitor on as an A2DP source only: on a simulated bluetoothd with
// one adapter, every media endpoint it registers is an A2DP source
// endpoint, there is at least one, no headset profile is registered, and
// nothing is stored. Then the same checks are shown to catch the
// reference's old mistake: a fragment that adds the a2dp_sink role and
// the native headset backend registers A2DP sink endpoints and the HFP
// audio-gateway profile.
func TestLiveBluetoothFragment(t *testing.T) {
	sim := bluezsim.New(t, bluezsim.Options{})
	if _, err := sim.AddAdapter("hci0", "00:1A:7D:DA:71:13"); err != nil {
		t.Fatal(err)
	}
	d := pwtest.New(t, pwtest.Options{MediaBus: sim.Address(),
		Outputs: []pipewire.Output{pwtest.NullOutput(0, 0, "liken.audio.card0-pcm0")}})
	ctx := ctxFor(t, 60*time.Second)
	uuids := waitEndpoints(t, ctx, sim, uuidA2DPSource)
	t.Logf("endpoints registered: %d (%v)", len(uuids), slices.Compact(slices.Sorted(slices.Values(uuids))))
	for _, u := range uuids {
		if u != uuidA2DPSource {
			t.Errorf("endpoint with UUID %s, want only A2DP source %s", u, uuidA2DPSource)
		}
	}
	if calls := registerProfileCalls(t, sim); len(calls) > 0 {
		t.Errorf("headset profiles registered:\n%s", strings.Join(calls, "\n"))
	}
	settings, err := d.Metadata(ctx, "sm-settings")
	if err != nil {
		t.Fatal(err)
	}
	for _, key := range []string{"bluetooth.use-persistent-storage", "bluetooth.autoswitch-to-headset-profile"} {
		if string(settings[key]) != "false" {
			t.Errorf("%s = %s, want false", key, settings[key])
		}
	}

	// The control: the wrong roles are visible to the same checks.
	d.StopWirePlumber()
	wrong := []byte(`monitor.bluez.properties = { bluez5.roles = [ a2dp_sink a2dp_source hfp_ag ] bluez5.hfphsp-backend = "native" }` + "\n")
	if err := os.WriteFile(filepath.Join(d.WirePlumberConfD, "62-test-wrong-roles.conf"), wrong, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := d.StartWirePlumber(ctx); err != nil {
		t.Fatal(err)
	}
	waitEndpoints(t, ctx, sim, uuidA2DPSink)
	if len(registerProfileCalls(t, sim)) == 0 {
		t.Error("the native headset backend registered no profile: the check above cannot fail")
	}
}

// waitEndpoints polls the simulator until an endpoint with UUID want is
// registered, and returns every registered endpoint's UUID, lowercase.
func waitEndpoints(t *testing.T, ctx context.Context, sim *bluezsim.Sim, want string) []string {
	t.Helper()
	for {
		reg, err := sim.Registrations()
		if err != nil {
			t.Fatal(err)
		}
		var uuids []string
		for _, e := range reg.Endpoints {
			uuids = append(uuids, strings.ToLower(e.UUID))
		}
		if slices.Contains(uuids, want) {
			return uuids
		}
		select {
		case <-ctx.Done():
			t.Fatalf("no endpoint %s registered (have %v)", want, uuids)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// registerProfileCalls returns the ProfileManager1.RegisterProfile calls
// in the simulator's call log: the headset backends register HFP/HSP
// this way.
func registerProfileCalls(t *testing.T, sim *bluezsim.Sim) []string {
	t.Helper()
	log, err := os.ReadFile(sim.LogPath())
	if err != nil {
		t.Fatal(err)
	}
	var calls []string
	for _, line := range strings.Split(string(log), "\n") {
		if strings.Contains(line, "RegisterProfile") {
			calls = append(calls, line)
		}
	}
	return calls
}
