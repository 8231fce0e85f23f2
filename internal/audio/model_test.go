// SPDX-License-Identifier: Apache-2.0

package audio

import (
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	resourceapi "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"tags.cncf.io/container-device-interface/pkg/cdi"
	cdispec "tags.cncf.io/container-device-interface/specs-go"

	"github.com/liken-sh/operators/internal/alsa"
	"github.com/liken-sh/operators/internal/alsa/eld"
	"github.com/liken-sh/operators/internal/audio/gate"
	"github.com/liken-sh/operators/internal/dra"
	"github.com/liken-sh/operators/internal/pipewire"
	"github.com/liken-sh/operators/test/fakesys"
)

// xpsCards reads the recorded Dell XPS 17 (SOF soundwire with three DP-MST
// outputs, a Razer USB headset, a WD19 dock) through the recorded control
// backend and its sysfs tree, as the operator reads a real machine.
func xpsCards(t *testing.T) []CardState {
	t.Helper()
	sys := t.TempDir()
	manifest, err := os.ReadFile("../alsa/testdata/sysfs/xps9700.tree")
	if err != nil {
		t.Fatal(err)
	}
	if err := fakesys.BuildTree(manifest, sys); err != nil {
		t.Fatal(err)
	}
	dumps := alsa.NewDumpDir("../alsa/testdata/xps9700")
	var out []CardState
	for card := range 3 {
		ctl, err := dumps.Open(card)
		if err != nil {
			t.Fatal(err)
		}
		c, err := alsa.ReadCard(ctl)
		ctl.Close()
		if err != nil {
			t.Fatal(err)
		}
		id, err := alsa.ReadCardIdentity(sys, card)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, CardState{Card: c, Identity: id})
	}
	return out
}

func TestEndpointsAreNamedByHardwareIdentity(t *testing.T) {
	eps, problems := Endpoints("Kitchen", xpsCards(t))
	if len(problems) != 0 {
		t.Fatalf("problems: %v", problems)
	}
	var names []string
	for _, e := range eps {
		names = append(names, e.Name)
		if !strings.HasPrefix(e.NodeName, NodeNamePrefix) || strings.Contains(e.NodeName, "kitchen") {
			t.Errorf("%s: node.name %q", e.Name, e.NodeName)
		}
	}
	for _, want := range []string{
		"kitchen-pci-0000-00-1f-3-hdmi-1",
		"kitchen-pci-0000-00-1f-3-hdmi-3",
		"kitchen-pci-0000-00-1f-3-jack-out",
		"kitchen-usb-1532-0526-00000000-usb-audio",
	} {
		if !slices.Contains(names, want) {
			t.Errorf("no endpoint %s in %v", want, names)
		}
	}
	// Capture PCMs are endpoints too (Sources), their names ending in
	// -capture so a card's playback and capture PCMs of one id stay apart.
	for _, e := range eps {
		if e.Capture() != strings.HasSuffix(e.Name, CaptureSuffix) || e.Capture() != strings.HasSuffix(e.NodeName, CaptureSuffix) {
			t.Errorf("%s (node %s): capture=%v but its names disagree", e.Name, e.NodeName, e.Capture())
		}
	}
	for _, want := range []string{"kitchen-pci-0000-00-1f-3-microphone-capture", "kitchen-usb-1532-0526-00000000-usb-audio-capture"} {
		if !slices.Contains(names, want) {
			t.Errorf("no capture endpoint %s in %v", want, names)
		}
	}
	for _, d := range Devices(eps, nil) {
		_, sink := d.Attributes["sink"]
		_, source := d.Attributes["source"]
		if sink == source || source != strings.HasSuffix(d.Name, CaptureSuffix) {
			t.Errorf("%s: sink attribute %v, source attribute %v; want exactly one, by direction", d.Name, sink, source)
		}
	}
}

func TestDevicesAttributesAndTaints(t *testing.T) {
	eps, _ := Endpoints("kitchen", xpsCards(t))
	live := map[string]bool{}
	for _, e := range eps {
		if e.Name != "kitchen-pci-0000-00-1f-3-jack-out" {
			live[e.NodeName] = true
		}
	}
	byName := map[string]dra.Device{}
	for _, d := range Devices(eps, live) {
		byName[d.Name] = d
	}
	// The DP output with the Samsung U28E590's ELD.
	dp := byName["kitchen-pci-0000-00-1f-3-hdmi-3"]
	for attr, want := range map[string]string{
		"connectionType": "displayport", "manufacturer": "SAM", "monitorName": "U28E590",
		MonitorIDAttribute: "sam-0c4d-u28e590",
	} {
		if v := dp.Attributes[resourceapi.QualifiedName(attr)].StringValue; v == nil || *v != want {
			t.Errorf("DP output %s = %v, want %q", attr, v, want)
		}
	}
	if len(dp.Taints) != 0 || dp.Problem != "" {
		t.Errorf("DP output with monitor and sink tainted %v, problem %q", dp.Taints, dp.Problem)
	}
	// An HDMI/DP output with no monitor: disconnected and no-monitor, and
	// no empty attributes.
	hdmi := byName["kitchen-pci-0000-00-1f-3-hdmi-1"]
	if !hasTaint(hdmi, TaintDisconnected) || !hasTaint(hdmi, TaintNoMonitor) || hasTaint(hdmi, TaintNoSink) {
		t.Errorf("monitorless HDMI taints %v", hdmi.Taints)
	}
	if hdmi.Problem != ProblemNoMonitor {
		t.Errorf("monitorless HDMI problem %q, want %q", hdmi.Problem, ProblemNoMonitor)
	}
	if _, ok := hdmi.Attributes["monitorName"]; ok {
		t.Error("monitorless HDMI has a monitorName")
	}
	// No PipeWire node: no-sink and disconnected, and no nodeName.
	jack := byName["kitchen-pci-0000-00-1f-3-jack-out"]
	if !hasTaint(jack, TaintNoSink) || !hasTaint(jack, TaintDisconnected) {
		t.Errorf("sinkless output taints %v", jack.Taints)
	}
	if jack.Problem != ProblemNoNode {
		t.Errorf("sinkless output problem %q, want %q", jack.Problem, ProblemNoNode)
	}
	if _, ok := jack.Attributes["nodeName"]; ok {
		t.Error("sinkless output has a nodeName")
	}
	for _, d := range byName {
		for k, v := range d.Attributes {
			if v.StringValue != nil && *v.StringValue == "" {
				t.Errorf("%s: empty attribute %s", d.Name, k)
			}
		}
	}
}

func hasTaint(d dra.Device, key string) bool {
	return slices.ContainsFunc(d.Taints, func(t dra.Taint) bool { return t.Key == key })
}

func TestDeviceNameRefusesWhatItCannotForm(t *testing.T) {
	pcm := alsa.PCMInfo{Card: 0, Device: 3, ID: "HDMI 0"}
	if _, err := DeviceName("n", alsa.CardIdentity{}, pcm); err == nil {
		t.Error("named a card with no location")
	}
	long := alsa.CardIdentity{Bus: "pci", Location: strings.Repeat("0000:00:1f.3-", 6)}
	a, err := DeviceName("n", long, pcm)
	b, _ := DeviceName("n", long, pcm)
	if err != nil || len(a) > 63 || a != b || !strings.HasPrefix(a, "n-h") {
		t.Errorf("a place too long for a name: %q, %v (want a stable hashed place)", a, err)
	}
	ec2 := "ip-172-31-20-123.eu-west-1.compute.internal"
	name, err := DeviceName(ec2, alsa.CardIdentity{Bus: "pci", Location: "0000:00:1f.3"}, pcm)
	if err != nil || name != "ip-172-31-20-123-pci-0000-00-1f-3-hdmi-0" {
		t.Errorf("a long node name: %q, %v", name, err)
	}
	eps, problems := Endpoints(ec2, xpsCards(t))
	if len(problems) != 0 || len(eps) != 12 || eps[0].NodeName != "liken.audio.pci-0000-00-1f-3-jack-out" {
		t.Errorf("endpoints of a long-named node: %d, %v, %+v", len(eps), problems, eps[0].NodeName)
	}
	if _, err := DeviceName("n", alsa.CardIdentity{Bus: "pci", Location: "0000:00:1f.3"}, alsa.PCMInfo{ID: " (*) "}); err == nil {
		t.Error("named a PCM with no id")
	}
}

func TestPrepareEdits(t *testing.T) {
	lookup := func(dev string) (string, bool, bool) {
		switch dev {
		case "live":
			return "liken.audio.pci-0000-00-1f-3-hdmi-0", true, true
		case "silent":
			return "liken.audio.x", false, true
		}
		return "", false, false
	}
	run := t.TempDir()
	const uid = "5a1b7c2e-0000-4000-8000-000000000001"
	claim := &resourceapi.ResourceClaim{ObjectMeta: metav1.ObjectMeta{UID: uid}}
	req := func(dev string) dra.DeviceRequest[Params] {
		return dra.DeviceRequest[Params]{Claim: claim, Result: resourceapi.DeviceRequestAllocationResult{Device: dev, Request: "tv"}}
	}
	prep := Prepare(lookup, run, 200*time.Millisecond)
	// No gate serves the claim: prepare fails, naming the socket.
	if _, err := prep(t.Context(), req("live")); err == nil || !strings.Contains(err.Error(), "was not served") {
		t.Errorf("prepare with no claim socket: %v", err)
	}
	claims, _ := gate.Claims(run)
	if c := claims[uid]; !slices.Equal(c.Nodes, []string{"liken.audio.pci-0000-00-1f-3-hdmi-0"}) {
		t.Errorf("claim file %+v", claims)
	}
	// The gate's socket stands in here; the gate's own tests serve it.
	if err := os.MkdirAll(gate.SocketDir(run, uid), 0o755); err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("unix", gate.SocketPath(run, uid))
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	edits, err := prep(t.Context(), req("live"))
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(edits.Env, []string{"PIPEWIRE_REMOTE=/var/run/audio.liken.sh/" + uid + "/pipewire-0",
		"PIPEWIRE_NODE=liken.audio.pci-0000-00-1f-3-hdmi-0", "LIKEN_AUDIO_NODE_TV=liken.audio.pci-0000-00-1f-3-hdmi-0"}) {
		t.Errorf("env %v", edits.Env)
	}
	if m := edits.Mounts[0]; m.HostPath != gate.SocketDir(run, uid) || m.ContainerPath != RuntimeDir+"/"+uid || !slices.Contains(m.Options, "ro") {
		t.Errorf("mount %+v", m)
	}
	// The CDI library accepts what prepare makes.
	spec := &cdispec.Spec{Version: "0.6.0", Kind: DriverName + "/" + CDIClass, Devices: []cdispec.Device{{Name: "u-live", ContainerEdits: edits}}}
	path := filepath.Join(t.TempDir(), "s.json")
	c, _ := cdi.NewCache(cdi.WithSpecDirs(filepath.Dir(path)), cdi.WithAutoRefresh(false))
	if err := c.WriteSpec(spec, "s.json"); err != nil {
		t.Fatalf("CDI refuses the edits: %v", err)
	}
	for _, dev := range []string{"silent", "unknown"} {
		if _, err := prep(t.Context(), req(dev)); err == nil {
			t.Errorf("%s prepared", dev)
		}
	}
}

func TestIdenticalUSBCardsAreToldApartByPort(t *testing.T) {
	cards := xpsCards(t)
	twin := cards[1] // the Razer headset, serial 00000000
	twin.Card = cloneCard(twin.Card, 3)
	twin.Identity.Card, twin.Identity.Location = 3, "3-4"
	eps, problems := Endpoints("desk", append(cards, twin))
	if len(problems) != 0 {
		t.Fatalf("problems: %v", problems)
	}
	var usb []string
	for _, e := range eps {
		if strings.Contains(e.Name, "1532-0526") && !e.Capture() {
			usb = append(usb, e.Name)
		}
	}
	slices.Sort(usb)
	if !slices.Equal(usb, []string{"desk-usb-1532-0526-3-1-1-usb-audio", "desk-usb-1532-0526-3-4-usb-audio"}) {
		t.Fatalf("twin headsets named %v", usb)
	}
}

func cloneCard(c *alsa.Card, number int) *alsa.Card {
	out := *c
	out.Info.Card = number
	out.PCMs = slices.Clone(c.PCMs)
	for i := range out.PCMs {
		out.PCMs[i].Info.Card = number
	}
	return &out
}

// A consumer holds the PipeWire socket and can create a stream node named
// like an output's sink; only the sink this operator declared counts.
func TestOnlyDeclaredSinksAreLive(t *testing.T) {
	hw := xpsHardware(t)
	pass, err := Reconcile("desk", hw, nil)
	if err != nil {
		t.Fatal(err)
	}
	target := pass.Endpoints[0]
	g := &pipewire.Graph{Nodes: []pipewire.Node{
		{ID: 40, Name: target.NodeName, MediaClass: "Stream/Output/Audio"},
		{ID: 41, Name: pass.Endpoints[1].NodeName, MediaClass: pipewire.MediaClassSink, Declared: &pipewire.Declared{}},
	}}
	pass, err = Reconcile("desk", hw, g)
	if err != nil {
		t.Fatal(err)
	}
	if pass.Live[target.NodeName] {
		t.Error("a stream posing as a sink made the output live")
	}
	if !pass.Live[pass.Endpoints[1].NodeName] {
		t.Error("the declared sink is not live")
	}
}

func TestUntrustedMonitorTextIsNotPublished(t *testing.T) {
	e := Endpoint{Name: "desk-pci-0000-00-1f-3-hdmi-0", NodeName: "liken.audio.x",
		PCM: alsa.PCM{HasELD: true, ELD: alsa.ELDState{ELD: &eld.ELD{MonitorName: "\xff\xfe\x1b[2J\x80", ManufacturerCode: 0x2d4c, ProductCode: 0x0c4d}}}}
	d := Devices([]Endpoint{e}, map[string]bool{"liken.audio.x": true})[0]
	for _, attr := range []string{"monitorName", MonitorIDAttribute} {
		if v, ok := d.Attributes[resourceapi.QualifiedName(attr)]; ok {
			t.Errorf("%s published from unprintable bytes: %q", attr, *v.StringValue)
		}
	}
	if _, ok := d.Attributes["manufacturer"]; !ok {
		t.Error("the manufacturer, which is printable, was dropped too")
	}
}
