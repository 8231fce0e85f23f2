// SPDX-License-Identifier: Apache-2.0

package audio

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	resourceapi "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"

	"github.com/liken-sh/operators/internal/audio/gate"
	"github.com/liken-sh/operators/internal/audio/speakers"
	"github.com/liken-sh/operators/internal/dra"
	"github.com/liken-sh/operators/internal/pipewire"
	"github.com/liken-sh/operators/test/bluezsim"
	"github.com/liken-sh/operators/test/e2e/kubelet"
)

const (
	speakerAddress = "A0:AB:51:33:B7:12"
	speakerDevice  = "a0-ab-51-33-b7-12"
	speakerNode    = "bluez_output.A0_AB_51_33_B7_12.1"
)

// liveGraph is a pw-dump stand-in for monitor mode: it prints every
// batch the test appends to its file, as `pw-dump -m` prints the graph
// and then each change. The first batch holds a node for every declared
// output and the speaker's bluez5 device.
//
// It plays the claim gate's part too: every speaker node appended is
// recorded as the speaker's (gate.Trusted.Speakers) before the graph
// shows it, and dropped from the record when it is removed.
type liveGraph struct {
	path    string
	dir     string
	mu      sync.Mutex
	trusted gate.Trusted
}

func newLiveGraph(t testing.TB, outputs []pipewire.Output) (*liveGraph, pipewire.Remote) {
	t.Helper()
	dir := t.TempDir()
	objs := []map[string]any{{"id": 0, "type": pipewire.TypeCore, "info": map[string]any{"cookie": 4242}}}
	trusted := gate.Trusted{Cookie: 4242, Nodes: map[string]uint64{}, IDs: map[string]uint32{}}
	for i, o := range outputs {
		objs = append(objs, map[string]any{"id": 40 + i, "type": pipewire.TypeNode, "info": map[string]any{
			"state": "suspended",
			"props": map[string]any{"node.name": o.Name, "media.class": "Audio/Sink", "liken.audio.card": o.Card,
				"liken.audio.pcm": o.Device, "liken.audio.output": o.Output, "object.serial": 50 + i},
		}})
		trusted.Nodes[o.Name], trusted.IDs[o.Name] = uint64(50+i), uint32(40+i)
	}
	objs = append(objs, speakerDeviceObject(-1))
	trusted.Speakers = map[string]uint32{}
	lg := &liveGraph{path: filepath.Join(dir, "batches.json"), dir: dir, trusted: trusted}
	lg.append(t, objs...)
	script := fmt.Sprintf("#!/bin/sh\nexec tail -n +1 -f %q\n", lg.path)
	tool := filepath.Join(dir, "pw-dump")
	if err := os.WriteFile(tool, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return lg, pipewire.Remote{RuntimeDir: dir, PWDump: tool}
}

func (lg *liveGraph) append(t testing.TB, objs ...map[string]any) {
	data, err := json.Marshal(objs)
	if err != nil {
		t.Fatal(err)
	}
	lg.mu.Lock()
	defer lg.mu.Unlock()
	for _, o := range objs {
		info, _ := o["info"].(map[string]any)
		if info == nil {
			for name, id := range lg.trusted.Speakers {
				if fmt.Sprint(id) == fmt.Sprint(o["id"]) {
					delete(lg.trusted.Speakers, name)
				}
			}
			continue
		}
		props, _ := info["props"].(map[string]any)
		if name, _ := props["node.name"].(string); o["type"] == pipewire.TypeNode && strings.HasPrefix(name, SpeakerNodePrefix) {
			lg.trusted.Speakers[name] = uint32(o["id"].(int))
		}
		if serial, ok := props["object.serial"].(int); ok {
			lg.trusted.Serial = max(lg.trusted.Serial, uint64(serial))
		}
	}
	record, err := json.Marshal(lg.trusted)
	if err != nil {
		t.Fatal(err)
	}
	// Renamed into place, as the gate writes it, so a pass never reads
	// half a record.
	tmp := filepath.Join(lg.dir, ".record")
	if err := os.WriteFile(tmp, record, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, filepath.Join(lg.dir, gate.TrustedFile)); err != nil {
		t.Fatal(err)
	}
	f, err := os.OpenFile(lg.path, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.Write(append(data, '\n')); err != nil {
		t.Fatal(err)
	}
}

// speakerDeviceObject is the speaker's bluez5 device offering SBC,
// SBC-XQ and aptX, running codec (-1: none yet).
func speakerDeviceObject(codec int) map[string]any {
	params := map[string]any{
		"PropInfo": []any{map[string]any{"id": "bluetoothAudioCodec", "type": map[string]any{"default": 1, "alt1": 1, "alt2": 2, "alt3": 5},
			"labels": []any{1, "SBC", 2, "SBC-XQ", 5, "aptX"}}},
		"Route": []any{map[string]any{"index": 0, "device": 1, "direction": "Output", "props": map[string]any{"mute": false, "channelVolumes": []float64{1, 1}}}},
	}
	if codec >= 0 {
		params["Props"] = []any{map[string]any{"bluetoothAudioCodec": codec}}
	}
	return map[string]any{"id": 90, "type": pipewire.TypeDevice, "info": map[string]any{
		"props":  map[string]any{"device.api": "bluez5", "api.bluez5.address": speakerAddress, "object.serial": 900},
		"params": params,
	}}
}

// speakerNodeObject is the speaker's A2DP sink node with id running codec.
func speakerNodeObject(id int, codec string) map[string]any {
	return map[string]any{"id": id, "type": pipewire.TypeNode, "info": map[string]any{"state": "suspended", "props": map[string]any{
		"node.name": speakerNode, "media.class": "Audio/Sink", "device.id": 90, "device.api": "bluez5",
		"api.bluez5.address": speakerAddress, "api.bluez5.codec": codec, "object.serial": 1000 + id}}}
}

func removed(id int) map[string]any { return map[string]any{"id": id, "info": nil} }

func speakerSim(t testing.TB, connected bool) *bluezsim.Sim {
	t.Helper()
	sim := bluezsim.New(t, bluezsim.Options{})
	if _, err := sim.AddAdapter("hci0", "00:1A:7D:DA:71:13"); err != nil {
		t.Fatal(err)
	}
	if _, err := sim.AddDevice("hci0", speakerAddress, bluezsim.Device{Name: "Living Room", UUIDs: []string{speakers.AudioSinkUUID}}); err != nil {
		t.Fatal(err)
	}
	if err := sim.Pair("hci0", speakerAddress); err != nil {
		t.Fatal(err)
	}
	if connected {
		if err := sim.Connect("hci0", speakerAddress); err != nil {
			t.Fatal(err)
		}
	}
	return sim
}

func attr(d resourceapi.Device, name string) string {
	a, ok := d.Attributes[resourceapi.QualifiedName(name)]
	switch {
	case !ok:
		return "<absent>"
	case a.StringValue != nil:
		return *a.StringValue
	case a.BoolValue != nil:
		return fmt.Sprint(*a.BoolValue)
	case a.IntValue != nil:
		return fmt.Sprint(*a.IntValue)
	}
	return "?"
}

func speakerIs(connected bool, node bool, taints ...string) func(published) bool {
	return func(p published) bool {
		d, ok := p[speakerDevice]
		if !ok || attr(d, "connected") != fmt.Sprint(connected) || (attr(d, "nodeName") == speakerNode) != node || len(d.Taints) != len(taints) {
			return false
		}
		for _, k := range taints {
			if !tainted(d, k) {
				return false
			}
		}
		return true
	}
}

// TestSpeakerPublishedTaintedAndRecovered: a paired speaker is published
// beside the card outputs from the moment it is paired, tainted until it
// is connected and PipeWire has its node, tainted again when it is
// switched off, kept while bluetoothd restarts, and untainted once it
// reconnects; no card output changes meanwhile.
func TestSpeakerPublishedTaintedAndRecovered(t *testing.T) {
	hw, pwDir, outputs := declaredOutputs(t)
	sim := speakerSim(t, false)
	lg, remote := newLiveGraph(t, outputs)
	var codecs []string
	var mu sync.Mutex
	r := runOperator(t, hw, remote, pwDir, time.Minute, func(c *Config) {
		c.BusAddress = sim.Address()
		c.SetCodec = func(_ context.Context, dev uint32, codec int) error {
			mu.Lock()
			defer mu.Unlock()
			codecs = append(codecs, fmt.Sprint(dev, "=", codec))
			return nil
		}
	})
	first := r.wait(t, "the speaker paired, switched off", speakerIs(false, false, TaintDisconnected, TaintNoSink))
	d := first[speakerDevice]
	for name, want := range map[string]string{"sink": speakerDevice, "connectionType": "bluetooth", "address": speakerAddress,
		"name": "Living Room", "codecs": "sbc sbc_xq aptx", "codec": "<absent>"} {
		if got := attr(d, name); got != want {
			t.Errorf("attribute %s = %q, want %q", name, got, want)
		}
	}
	if len(first) != len(outputs)+1 {
		t.Errorf("%d devices, want the %d outputs and the speaker", len(first), len(outputs))
	}

	if err := sim.Connect("hci0", speakerAddress); err != nil {
		t.Fatal(err)
	}
	r.wait(t, "connected, no node yet", speakerIs(true, false, TaintNoSink))
	lg.append(t, speakerDeviceObject(1), speakerNodeObject(91, "sbc"))
	live := r.wait(t, "connected with its node", speakerIs(true, true))
	if got := attr(live[speakerDevice], "codec"); got != "sbc" {
		t.Errorf("codec %q, want sbc", got)
	}

	// Switched off: the link drops, then WirePlumber removes the node.
	if err := sim.Disconnect("hci0", speakerAddress, bluezsim.ReasonRemote); err != nil {
		t.Fatal(err)
	}
	r.wait(t, "switched off, node still there", speakerIs(false, true, TaintDisconnected))
	lg.append(t, removed(91))
	r.wait(t, "switched off", speakerIs(false, false, TaintDisconnected, TaintNoSink))

	// bluetoothd restarts: the speaker stays, and comes back untainted
	// once it reconnects.
	before := r.wait(t, "before the restart", speakerIs(false, false, TaintDisconnected, TaintNoSink))
	if err := sim.StopBlueZ(); err != nil {
		t.Fatal(err)
	}
	r.waitLog(t, "The media bus or bluetoothd went away")
	if err := sim.StartBlueZ(context.Background()); err != nil {
		t.Fatal(err)
	}
	r.waitLog(t, "Following BlueZ's speakers on the media bus")
	if err := sim.Connect("hci0", speakerAddress); err != nil {
		t.Fatal(err)
	}
	lg.append(t, speakerNodeObject(92, "sbc"))
	r.wait(t, "reconnected after the restart", speakerIs(true, true))
	othersAsBefore(t, before, r.since(func(p published) bool { return true }), speakerDevice)

	// Unpaired: it leaves the slice.
	if err := sim.RemoveDevice("hci0", speakerAddress); err != nil {
		t.Fatal(err)
	}
	r.wait(t, "unpaired", func(p published) bool { _, ok := p[speakerDevice]; return !ok && len(p) == len(outputs) })
	mu.Lock()
	defer mu.Unlock()
	if len(codecs) != 0 {
		t.Errorf("codecs written with no claim and no spec: %v", codecs)
	}
}

// declaredOutputs declares the XPS 17's outputs without starting PipeWire.
func declaredOutputs(t *testing.T) (Hardware, string, []pipewire.Output) {
	t.Helper()
	hw := xpsHardware(t)
	dir := t.TempDir()
	res, err := Declare(DeclareConfig{Hardware: hw, Node: study, PipeWireDir: filepath.Join(dir, "pw"),
		WirePlumberDir: filepath.Join(dir, "wp"), ALSAPath: "null", Rate: 48000})
	if err != nil {
		t.Fatal(err)
	}
	outputs, err := pipewire.ReadDeclaration(res.Declaration)
	if err != nil {
		t.Fatal(err)
	}
	return hw, filepath.Join(dir, "pw"), outputs
}

// fakeCodecs answers prepare's questions about one speaker.
type fakeCodecs struct {
	switched []string
}

func (f *fakeCodecs) Offered(dev string) ([]string, string, bool) {
	if dev != speakerDevice {
		return nil, "", false
	}
	return []string{"sbc", "sbc_xq", "aptx"}, "sbc", true
}

func (f *fakeCodecs) Switch(_ context.Context, dev, codec string) error {
	f.switched = append(f.switched, dev+"="+codec)
	return nil
}

// Passthrough answers for one HDMI output whose receiver takes AC-3 and
// DTS ("hdmi"), and one with a monitor of PCM alone ("tv").
func (f *fakeCodecs) Passthrough(dev string) ([]string, bool) {
	switch dev {
	case "hdmi":
		return []string{"ac3", "dts"}, true
	case "tv":
		return nil, true
	}
	return nil, false
}

func (f *fakeCodecs) SetPassthrough(_ context.Context, dev string, codecs []string) error {
	f.switched = append(f.switched, dev+"="+strings.Join(codecs, ","))
	return nil
}

func TestPrepareCodec(t *testing.T) {
	lookup := func(dev string) (string, bool, bool) { return "", false, dev == speakerDevice || dev == "wired" }
	codecs := &fakeCodecs{}
	prep := PrepareWithCodecs(lookup, codecs, nil, t.TempDir(), 10*time.Millisecond)
	req := func(dev, codec string) dra.DeviceRequest[Params] {
		return dra.DeviceRequest[Params]{Claim: &resourceapi.ResourceClaim{}, Result: resourceapi.DeviceRequestAllocationResult{Device: dev},
			Params: Params{Codec: codec}}
	}
	for name, tc := range map[string]struct {
		dev, codec string
		want       []string
	}{
		"wired":       {"wired", "sbc", []string{"output wired is neither a Bluetooth speaker nor an HDMI/DP output", `"sbc"`}},
		"two":         {speakerDevice, "sbc aptx", []string{"runs one codec at a time", `"sbc aptx"`}},
		"not offered": {speakerDevice, "ldac", []string{`does not offer codec "ldac"`, "it offers sbc, sbc_xq, aptx"}},
		"switched":    {speakerDevice, "aptx", []string{"has no PipeWire sink right now"}},
		"current":     {speakerDevice, "sbc", []string{"has no PipeWire sink right now"}},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := prep(t.Context(), req(tc.dev, tc.codec))
			if err == nil || !containsAll(err.Error(), tc.want...) {
				t.Fatalf("prepare: %v, want %q", err, tc.want)
			}
		})
	}
	if len(codecs.switched) != 1 || codecs.switched[0] != speakerDevice+"=aptx" {
		t.Errorf("switched %v, want only aptx", codecs.switched)
	}
}

// TestCodecParameterValidated: a codec of 10 KB of text is refused with
// a short error that names its length, not its text.
func TestCodecParameterValidated(t *testing.T) {
	long := strings.Repeat("x", 10240)
	err := (&Params{Codec: long}).Validate()
	if err == nil || len(err.Error()) > 200 || !strings.Contains(err.Error(), "10240 bytes") {
		t.Fatalf("10 KB codec: %v", err)
	}
	if err := (&Params{Codec: "SBC XQ"}).Validate(); err == nil || !strings.Contains(err.Error(), `"SBC XQ"`) {
		t.Fatalf("bad codec: %v", err)
	}
	if err := (&Params{Codec: "sbc_xq"}).Validate(); err != nil {
		t.Fatalf("sbc_xq: %v", err)
	}
	if err := (&Params{Position: "left"}).Validate(); err == nil || !strings.Contains(err.Error(), "front, rear") {
		t.Fatalf("position left: %v", err)
	}
	if err := (&Params{Position: "rear"}).Validate(); err != nil {
		t.Fatalf("position rear: %v", err)
	}
}

// TestSpeakerSpecFollowsItsNode: a prepared claim on a speaker gets the
// speaker's node in its CDI spec and its claim file, and when the node is
// made again under another name (a profile change), both are rewritten
// to name it.
func TestSpeakerSpecFollowsItsNode(t *testing.T) {
	hw, pwDir, outputs := declaredOutputs(t)
	sim := speakerSim(t, true)
	lg, remote := newLiveGraph(t, outputs)
	lg.append(t, speakerDeviceObject(1), speakerNodeObject(91, "sbc"))
	r := runOperator(t, hw, remote, pwDir, time.Minute, func(c *Config) { c.BusAddress = sim.Address() })
	r.wait(t, "the speaker with its node", speakerIs(true, true))

	const uid = "7c1d2e3f-0000-4000-8000-0000000000aa"
	claim := &resourceapi.ResourceClaim{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "radio", UID: uid},
		Status: resourceapi.ResourceClaimStatus{Allocation: &resourceapi.AllocationResult{Devices: resourceapi.DeviceAllocationResult{
			Results: []resourceapi.DeviceRequestAllocationResult{{Request: "out", Driver: DriverName, Pool: study, Device: speakerDevice}}}}},
	}
	if _, err := r.client.ResourceV1().ResourceClaims("default").Create(t.Context(), claim, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// The claim gate's socket stands in here; the gate's own tests serve it.
	if err := os.MkdirAll(gate.SocketDir(remote.RuntimeDir, uid), 0o755); err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("unix", gate.SocketPath(remote.RuntimeDir, uid))
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	kl := kubelet.New(r.client, r.cfg.DRA.RegistrarDir)
	defer kl.Close()
	plugin, err := kl.Discover(t.Context(), DriverName)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := plugin.Prepare(t.Context(), claim)
	if err != nil {
		t.Fatal(err)
	}
	if e := resp.Claims[uid].GetError(); e != "" {
		t.Fatalf("prepare: %s", e)
	}
	specPath := filepath.Join(r.cfg.DRA.CDIDir, DriverName+"-"+uid+".json")
	waitFile := func(what, want string) {
		t.Helper()
		deadline := time.Now().Add(30 * time.Second)
		for {
			spec, _ := os.ReadFile(specPath)
			claims, _ := gate.Claims(remote.RuntimeDir)
			if strings.Contains(string(spec), "PIPEWIRE_NODE="+want) && slices.Equal(claims[uid].Nodes, []string{want}) {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: spec %s\nclaim file %+v", what, spec, claims[uid])
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	waitFile("prepared", speakerNode)
	renamed := strings.TrimSuffix(speakerNode, ".1") + ".2"
	node := speakerNodeObject(92, "sbc")
	node["info"].(map[string]any)["props"].(map[string]any)["node.name"] = renamed
	lg.append(t, removed(91), node)
	waitFile("after the node was renamed", renamed)
}

// TestBusGoneMidPrepare: the media bus goes away while a claim's codec
// switch waits for the speaker: that claim fails saying so, and a claim
// on a card output prepared next is served.
func TestBusGoneMidPrepare(t *testing.T) {
	hw, pwDir, outputs := declaredOutputs(t)
	sim := speakerSim(t, true)
	lg, remote := newLiveGraph(t, outputs)
	lg.append(t, speakerDeviceObject(1), speakerNodeObject(91, "sbc"))
	r := runOperator(t, hw, remote, pwDir, time.Minute, func(c *Config) {
		c.BusAddress = sim.Address()
		c.SetCodec = func(context.Context, uint32, int) error { return sim.StopBlueZ() }
	})
	r.wait(t, "the speaker with its node", speakerIs(true, true))
	kl := kubelet.New(r.client, r.cfg.DRA.RegistrarDir)
	defer kl.Close()
	plugin, err := kl.Discover(t.Context(), DriverName)
	if err != nil {
		t.Fatal(err)
	}
	prepare := func(uid, device, params string) string {
		t.Helper()
		claim := &resourceapi.ResourceClaim{
			ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "c-" + uid[len(uid)-2:], UID: types.UID(uid)},
			Status: resourceapi.ResourceClaimStatus{Allocation: &resourceapi.AllocationResult{Devices: resourceapi.DeviceAllocationResult{
				Results: []resourceapi.DeviceRequestAllocationResult{{Request: "out", Driver: DriverName, Pool: study, Device: device}}}}},
		}
		if params != "" {
			claim.Status.Allocation.Devices.Config = []resourceapi.DeviceAllocationConfiguration{{Source: resourceapi.AllocationConfigSourceClaim,
				DeviceConfiguration: resourceapi.DeviceConfiguration{Opaque: &resourceapi.OpaqueDeviceConfiguration{
					Driver: DriverName, Parameters: runtime.RawExtension{Raw: []byte(params)}}}}}
		}
		if _, err := r.client.ResourceV1().ResourceClaims("default").Create(t.Context(), claim, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		if err := os.MkdirAll(gate.SocketDir(remote.RuntimeDir, uid), 0o755); err != nil {
			t.Fatal(err)
		}
		l, err := net.Listen("unix", gate.SocketPath(remote.RuntimeDir, uid))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { l.Close() })
		resp, err := plugin.Prepare(t.Context(), claim)
		if err != nil {
			t.Fatal(err)
		}
		return resp.Claims[uid].GetError()
	}
	if e := prepare("7c1d2e3f-0000-4000-8000-0000000000b1", speakerDevice, `{"codec":"aptx"}`); !strings.Contains(e, "the media bus went away while switching to codec aptx") {
		t.Fatalf("prepare with the bus gone: %q", e)
	}
	if e := prepare("7c1d2e3f-0000-4000-8000-0000000000b2", dpOutput, ""); e != "" {
		t.Fatalf("a card output's claim after the failed one: %s", e)
	}
}
