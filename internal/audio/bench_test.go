// SPDX-License-Identifier: Apache-2.0

package audio

import (
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/liken-sh/operators/internal/alsa"
	"github.com/liken-sh/operators/internal/pipewire"
	"github.com/liken-sh/operators/test/fakesys"
)

// hdmiPCMs are the PCM devices snd-hda-codec-hdmi creates on a codec with
// eight converters: 3, then 7 upwards (hda_codec.c skips 4..6, kept for
// other codecs' PCMs).
var hdmiPCMs = []int{3, 7, 8, 9, 10, 11, 12, 13}

// hdmiCard is an HDA card with only HDMI/DP outputs, as the control
// interface shows one: per PCM a playback stream "HDMI <n>", the
// "HDMI/DP,pcm=<d> Jack" switch, the ELD element (count 0 without a
// monitor) and the playback channel map. elds maps a PCM device to the
// monitor's block.
func hdmiCard(card int, id, driver, name string, elds map[int][]byte) *alsa.Dump {
	d := &alsa.Dump{Card: card, Source: "built for BenchmarkAudioPass16Outputs",
		Info: alsa.DumpCardInfo{ID: id, Driver: driver, Name: name, LongName: name + " at the benchmark's PCI function"}}
	numid := uint32(1)
	add := func(c alsa.DumpControl) {
		c.NumID = numid
		numid++
		d.Controls = append(d.Controls, c)
	}
	for i, dev := range hdmiPCMs {
		d.PCMs = append(d.PCMs, alsa.DumpPCM{Device: dev, Stream: "playback", ID: fmt.Sprintf("HDMI %d", i),
			Name: fmt.Sprintf("HDMI %d", i), Subdevices: 1, SubdevicesAvail: 1})
		block := elds[dev]
		jack := int64(0)
		if len(block) > 0 {
			jack = 1
		}
		add(alsa.DumpControl{Iface: "CARD", Name: fmt.Sprintf("HDMI/DP,pcm=%d Jack", dev), Type: "BOOLEAN", Access: "read", Count: 1, Values: []int64{jack}})
		add(alsa.DumpControl{Iface: "PCM", Device: uint32(dev), Name: "ELD", Type: "BYTES", Access: "read volatile",
			Count: len(block), Bytes: hex.EncodeToString(block)})
		add(alsa.DumpControl{Iface: "PCM", Device: uint32(dev), Name: "Playback Channel Map", Type: "INTEGER", Access: "read write",
			Count: 8, Max: 36, Values: make([]int64, 8)})
	}
	return d
}

// twoHDMICards is the sysfs of a desktop with the chipset's HDA function
// (card 0) and a discrete GPU's HDMI audio function (card 1), each card's
// device the PCI function itself, as snd_hda_intel binds them.
const twoHDMICards = `
link devices/pci0000:00/0000:00:1f.3/subsystem /bus/pci
link devices/pci0000:00/0000:00:1f.3/driver /bus/pci/drivers/snd_hda_intel
file devices/pci0000:00/0000:00:1f.3/sound/card0/id PCH
link devices/pci0000:00/0000:00:1f.3/sound/card0/device /devices/pci0000:00/0000:00:1f.3
link class/sound/card0 /devices/pci0000:00/0000:00:1f.3/sound/card0
link devices/pci0000:00/0000:00:01.0/subsystem /bus/pci
link devices/pci0000:00/0000:00:01.0/0000:01:00.1/subsystem /bus/pci
link devices/pci0000:00/0000:00:01.0/0000:01:00.1/driver /bus/pci/drivers/snd_hda_intel
file devices/pci0000:00/0000:00:01.0/0000:01:00.1/sound/card1/id NVidia
link devices/pci0000:00/0000:00:01.0/0000:01:00.1/sound/card1/device /devices/pci0000:00/0000:00:01.0/0000:01:00.1
link class/sound/card1 /devices/pci0000:00/0000:00:01.0/0000:01:00.1/sound/card1
`

// sixteenOutputs lays out a node with two HDMI-only cards of eight PCMs
// each (16 playback outputs; three monitors attached, with the recorded
// Samsung, Dell and ATI-synthesised ELDs) and returns its hardware and a
// graph in which PipeWire holds a node for every output, beside the
// nodes a headless PipeWire always has.
func sixteenOutputs(tb testing.TB) (Hardware, *pipewire.Graph) {
	tb.Helper()
	root := tb.TempDir()
	eld := func(name string) []byte {
		b, err := os.ReadFile(filepath.Join("../../testdata/fixtures/eld", name))
		if err != nil {
			tb.Fatal(err)
		}
		return b
	}
	dumps := []*alsa.Dump{
		hdmiCard(0, "PCH", "HDA-Intel", "HDA Intel PCH", map[int][]byte{
			3: eld("samsung-u28e590-dp-eld-ctl.bin"), 7: eld("alsa-ucm-conf-248-dell-g2422hs-eld-ctl.bin")}),
		hdmiCard(1, "NVidia", "HDA-Intel", "HDA NVidia", map[int][]byte{
			3: eld("forum-2016-ati-capeverde-synth-eld-ctl.bin")}),
	}
	cards := filepath.Join(root, "cards")
	if err := os.MkdirAll(cards, 0o755); err != nil {
		tb.Fatal(err)
	}
	for _, d := range dumps {
		if err := alsa.WriteDump(cards, d); err != nil {
			tb.Fatal(err)
		}
	}
	if err := alsa.WriteDevSnd(filepath.Join(root, "snd"), dumps...); err != nil {
		tb.Fatal(err)
	}
	if err := fakesys.BuildTree([]byte(twoHDMICards), filepath.Join(root, "sys")); err != nil {
		tb.Fatal(err)
	}
	hw := Hardware{DevSnd: filepath.Join(root, "snd"), Sysfs: filepath.Join(root, "sys"), Opener: alsa.NewDumpDir(cards)}

	first, err := Reconcile("desk", hw, nil)
	if err != nil {
		tb.Fatal(err)
	}
	g := &pipewire.Graph{Nodes: []pipewire.Node{
		{ID: 28, Name: "Dummy-Driver", Props: map[string]string{"node.name": "Dummy-Driver"}},
		{ID: 29, Name: "Freewheel-Driver", Props: map[string]string{"node.name": "Freewheel-Driver"}},
	}}
	for i, e := range first.Endpoints {
		g.Nodes = append(g.Nodes, pipewire.Node{ID: uint32(40 + i), Name: e.NodeName, MediaClass: "Audio/Sink",
			State: pipewire.NodeStateSuspended, Props: map[string]string{"node.name": e.NodeName, "media.class": "Audio/Sink"},
			Declared: &pipewire.Declared{Card: e.PCM.Card(), PCM: e.PCM.Device(), PCMID: e.PCM.Info.ID, Output: e.Name}})
	}
	return hw, g
}

// The benchmark's node is what it claims to be: 16 outputs, all with a
// sink, three with a monitor, and no problem.
func TestSixteenOutputs(t *testing.T) {
	hw, g := sixteenOutputs(t)
	p, err := Reconcile("desk", hw, g)
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Problems) != 0 || len(p.Devices) != 16 {
		t.Fatalf("%d devices, problems %v", len(p.Devices), p.Problems)
	}
	monitors := 0
	for _, d := range p.Devices {
		if _, ok := d.Attributes["nodeName"]; !ok {
			t.Errorf("%s has no sink", d.Name)
		}
		if _, ok := d.Attributes["monitorName"]; ok {
			monitors++
		}
		if _, ok := d.Attributes["lpcmChannels"]; ok && len(d.Taints) > 0 {
			t.Errorf("%s has a monitor and taints %v", d.Name, d.Taints)
		}
	}
	// The ATI block is nameless: two monitors have a name.
	if monitors != 2 {
		t.Errorf("%d outputs with a monitorName, want 2", monitors)
	}
	if p.Devices[15].Name != "desk-pci-0000-01-00-1-hdmi-7" {
		t.Errorf("last device %s", p.Devices[15].Name)
	}
}

// BenchmarkAudioPass16Outputs times one reconcile pass over 16 outputs
// (two recorded HDA cards of eight HDMI PCMs each): /dev/snd scanned, both
// control interfaces read through the recorded backend (card info, element
// list, PCM info, ELD, channel map and jacks), both cards placed from
// sysfs, the endpoints named and their devices formed against the graph.
// The slice write is not part of it: the DRA core debounces and compares.
func BenchmarkAudioPass16Outputs(b *testing.B) {
	hw, g := sixteenOutputs(b)
	b.ReportAllocs()
	for b.Loop() {
		p, err := Reconcile("desk", hw, g)
		if err != nil || len(p.Devices) != 16 {
			b.Fatalf("%d devices: %v", len(p.Devices), err)
		}
	}
}
