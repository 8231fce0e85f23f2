// SPDX-License-Identifier: Apache-2.0

package mixer

import (
	"errors"
	"maps"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/liken-sh/operators/internal/alsa"
	"github.com/liken-sh/operators/internal/alsa/alsatest"
	"github.com/liken-sh/operators/test/fakesys"
	"golang.org/x/sys/unix"
)

const tglAmixer = "../../testdata/fixtures/alsa/sof-1826-tgl-amixer-contents-hdmi-jacks-excerpt.txt"

// xps opens card of the recorded Dell XPS 17 9700 as the operator does,
// through fakesys's DumpDir.
func xps(t *testing.T, card int) alsa.Control {
	t.Helper()
	cards, err := fakesys.XPS17("../..", t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	c, err := cards.Cards.Open(card)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func read(t *testing.T, c alsa.Control) *Mixer {
	t.Helper()
	m, err := Read(c)
	if err != nil {
		t.Fatal(err)
	}
	if m.Err != nil {
		t.Fatalf("Read: %v", m.Err)
	}
	return m
}

// readHDA reads the hdaLike card, whose one odd TLV is its only problem.
func readHDA(t *testing.T, c alsa.Control) *Mixer {
	t.Helper()
	m, err := Read(c)
	if err != nil {
		t.Fatal(err)
	}
	if m.Err == nil || strings.Count(m.Err.Error(), "mixer control") != 1 || !strings.Contains(m.Err.Error(), "Odd TLV Volume") {
		t.Fatalf("Read: %v, want the Odd TLV Volume's TLV alone", m.Err)
	}
	return m
}

func names(list []Control) []string {
	var out []string
	for _, c := range list {
		out = append(out, nameIndex(c.ID))
	}
	return out
}

func keys(list []Control) []string {
	var out []string
	for _, c := range list {
		out = append(out, c.Key)
	}
	return out
}

// TestReadXPS: the recorded XPS's three cards list their settable mixer
// controls; jacks, ELDs, channel maps and IEC958 status bytes are left
// out.
func TestReadXPS(t *testing.T) {
	for card, want := range map[int][]string{
		0: {"Headphone Switch", "Headset Mic Switch", "Speaker Switch", "IEC958 Playback Switch",
			"IEC958 Playback Switch,1", "IEC958 Playback Switch,2", "PGA1.0 1 Master Playback Volume"},
		1: {"Mic Capture Volume", "Auto Gain Control", "PCM Playback Switch", "PCM Playback Volume"},
		2: {"Mic Capture Switch", "Mic Capture Volume", "Loudness", "Extension Unit Switch", "Headphone Playback Switch",
			"Headphone Playback Volume", "Line Playback Switch", "Line Playback Volume"},
	} {
		m := read(t, xps(t, card))
		if got := names(m.Controls); !slices.Equal(got, want) {
			t.Errorf("card %d controls %q, want %q", card, got, want)
		}
	}

	m := read(t, xps(t, 0))
	pga := m.Controls[6]
	if pga.Kind() != "integer" || pga.Type != alsa.TypeInteger || pga.Min != 0 || pga.Max != 32 || pga.Channels != 2 ||
		!slices.Equal(pga.Value, []int64{32, 32}) || pga.Format() != "32" || pga.Decibels != nil || pga.MinDecibels() != "" {
		t.Errorf("PGA master: %+v", pga)
	}
	spk := m.Controls[2]
	if spk.Kind() != "boolean" || spk.Channels != 1 || spk.Format() != "on" || spk.Access&alsa.AccessWrite == 0 {
		t.Errorf("Speaker Switch: %+v, formats as %q", spk, spk.Format())
	}
}

// TestHDMISlotsXPS: the SOF card serves its HDMI codec's PCMs as devices
// 5, 6, 7 with ids "HDMI 1 (*)" to "HDMI 3 (*)", and their IEC958
// switches have indexes 0, 1, 2: the slot comes from element order, not
// from the id. The slots are exactly the PCMs alsa.ReadCard finds an ELD
// element for.
func TestHDMISlotsXPS(t *testing.T) {
	c := xps(t, 0)
	m := read(t, c)
	want := map[int]int{5: 0, 6: 1, 7: 2}
	if !maps.Equal(m.HDMISlots, want) {
		t.Errorf("HDMI slots %v, want %v", m.HDMISlots, want)
	}
	card, err := alsa.ReadCard(c)
	if err != nil {
		t.Fatal(err)
	}
	var withELD []int
	for _, p := range card.PCMs {
		if p.HasELD {
			withELD = append(withELD, p.Device())
			if want := []string{5: "HDMI 1 (*)", 6: "HDMI 2 (*)", 7: "HDMI 3 (*)"}[p.Device()]; p.Info.ID != want {
				t.Errorf("PCM %d id %q, want %q", p.Device(), p.Info.ID, want)
			}
		}
	}
	if got := slices.Sorted(maps.Keys(m.HDMISlots)); !slices.Equal(got, withELD) {
		t.Errorf("slots for PCMs %v, ELD elements for %v", got, withELD)
	}
	// The USB cards have no HDMI.
	if s := read(t, xps(t, 1)).HDMISlots; len(s) != 0 {
		t.Errorf("Razer: HDMI slots %v", s)
	}
	// An ELD with no switch before it since the last ELD has slot -1 and
	// no controls; a switch after the last ELD belongs to nothing.
	ids := []alsa.ElemID{
		{NumID: 9, Iface: alsa.IfacePCM, Device: 3, Name: "ELD"},
		{NumID: 8, Iface: alsa.IfaceMixer, Name: IEC958SwitchName, Index: 4},
		{NumID: 10, Iface: alsa.IfacePCM, Device: 7, Name: "ELD"},
		{NumID: 11, Iface: alsa.IfaceMixer, Name: IEC958SwitchName, Index: 5},
	}
	slots := HDMISlots(ids)
	if !maps.Equal(slots, map[int]int{3: 4, 7: -1}) {
		t.Errorf("HDMISlots(%v) = %v, want map[3:4 7:-1] (sorted by numid)", ids, slots)
	}
	bare := &Mixer{HDMISlots: slots, Controls: []Control{
		{ID: alsa.ElemID{Iface: alsa.IfaceMixer, Name: "Master Playback Volume"}},
		{ID: alsa.ElemID{Iface: alsa.IfaceMixer, Name: IEC958SwitchName, Index: 4}},
		{ID: alsa.ElemID{Iface: alsa.IfaceMixer, Name: IEC958SwitchName, Index: 5}},
	}}
	if got := bare.Sink(7); len(got) != 0 {
		t.Errorf("HDMI PCM without a switch: controls %q, want none", keys(got))
	}
	if got := keys(bare.Sink(3)); !slices.Equal(got, []string{IEC958SwitchName}) {
		t.Errorf("HDMI PCM 3: controls %q", got)
	}
	if got := keys(bare.Sink(0)); !slices.Equal(got, []string{"Master Playback Volume", IEC958SwitchName}) {
		t.Errorf("analog PCM 0: controls %q, want the master and the slotless switch", got)
	}
}

// TestAttachXPS: the attach rule on the recorded cards: an HDMI slot gets
// its IEC958 switch and nothing else, the analog and USB sinks the
// playback and undirected controls, the sources the capture and
// microphone controls.
func TestAttachXPS(t *testing.T) {
	m0 := read(t, xps(t, 0))
	analog := []string{"Headphone Switch", "Speaker Switch", "PGA1.0 1 Master Playback Volume"}
	for _, dev := range []int{0, 2} { // Jack Out, Speaker
		if got := keys(m0.Sink(dev)); !slices.Equal(got, analog) {
			t.Errorf("card 0 sink %d: %q, want %q", dev, got, analog)
		}
	}
	for dev, slot := range map[int]uint32{5: 0, 6: 1, 7: 2} {
		got := m0.Sink(dev)
		if len(got) != 1 || got[0].Key != IEC958SwitchName || got[0].ID.Name != IEC958SwitchName || got[0].ID.Index != slot {
			t.Errorf("card 0 HDMI sink %d: %+v, want the IEC958 switch of index %d alone", dev, got, slot)
		}
	}
	if got := keys(m0.Source()); !slices.Equal(got, []string{"Headset Mic Switch"}) {
		t.Errorf("card 0 sources: %q", got)
	}

	m1 := read(t, xps(t, 1))
	if got := keys(m1.Sink(0)); !slices.Equal(got, []string{"PCM Playback Switch", "PCM Playback Volume"}) {
		t.Errorf("Razer sink: %q", got)
	}
	if got := keys(m1.Source()); !slices.Equal(got, []string{"Mic Capture Volume", "Auto Gain Control"}) {
		t.Errorf("Razer source: %q", got)
	}
	m2 := read(t, xps(t, 2))
	dockSink := []string{"Loudness", "Extension Unit Switch", "Headphone Playback Switch", "Headphone Playback Volume",
		"Line Playback Switch", "Line Playback Volume"}
	for _, dev := range []int{0, 1} {
		if got := keys(m2.Sink(dev)); !slices.Equal(got, dockSink) {
			t.Errorf("dock sink %d: %q, want %q", dev, got, dockSink)
		}
	}
	if got := keys(m2.Source()); !slices.Equal(got, []string{"Mic Capture Switch", "Mic Capture Volume"}) {
		t.Errorf("dock source: %q", got)
	}
}

func TestSideOf(t *testing.T) {
	slots := map[int]int{3: 0, 7: 1}
	for name, want := range map[string]Side{
		"Master Playback Volume": SideSink, "Auto-Mute Mode": SideSink, "Speaker Switch": SideSink,
		"Mic Playback Volume": SideSink, "Bass Boost": SideSink, "Loopback Mixing": SideSink,
		"Capture Volume": SideSource, "Input Source": SideSource, "Mic Boost Volume": SideSource,
		"Internal Mic Boost Volume": SideSource, "Line Boost Volume": SideSource, "Headset Mic Switch": SideSource,
		"Auto Gain Control": SideSource, "Digital Microphone Switch": SideSource,
	} {
		if got := SideOf(alsa.ElemID{Iface: alsa.IfaceMixer, Name: name}, slots); got != want {
			t.Errorf("SideOf(%q) = %s, want %s", name, got, want)
		}
	}
	for index, want := range map[uint32]Side{0: SideHDMI, 1: SideHDMI, 16: SideSink} {
		if got := SideOf(alsa.ElemID{Iface: alsa.IfaceMixer, Name: IEC958SwitchName, Index: index}, slots); got != want {
			t.Errorf("IEC958 switch index %d: %s, want %s (an S/PDIF output's switch, with no slot, is a playback control)", index, got, want)
		}
	}
}

// TestReadTGLDecibels: the recorded TGL card's dB ranges, as amixer
// printed them (dBscale-min and step, over the control's range).
func TestReadTGLDecibels(t *testing.T) {
	text, err := os.ReadFile(tglAmixer)
	if err != nil {
		t.Fatal(err)
	}
	cs, err := alsatest.ImportAmixerContents(text)
	if err != nil {
		t.Fatal(err)
	}
	r, err := alsa.NewRecorded(&alsa.Dump{Card: 0, Info: alsa.DumpCardInfo{ID: "sofhdadsp", Driver: "sof-hda-dsp", Name: "sof-hda-dsp"}, Controls: cs})
	if err != nil {
		t.Fatal(err)
	}
	c := r.Open()
	defer c.Close()
	m := read(t, c)
	if got := names(m.Controls); !slices.Equal(got, []string{"Master Playback Volume", "Master Playback Switch", "Capture Volume", "Capture Switch", "Mic Boost Volume"}) {
		t.Errorf("controls %q", got)
	}
	for _, tc := range []struct {
		name, amixer, min, max string
	}{
		{"Master Playback Volume", "dBscale-min=-65.25dB,step=0.75dB,mute=0", "-65.25", "0"}, // -65.25 + 87 × 0.75
		{"Mic Boost Volume", "dBscale-min=0.00dB,step=10.00dB,mute=0", "0", "30"},            // 3 × 10
		{"Capture Volume", "dBscale-min=-17.25dB,step=0.75dB,mute=0", "-17.25", "30"},        // -17.25 + 63 × 0.75
	} {
		if !strings.Contains(string(text), tc.amixer) {
			t.Fatalf("fixture has no %q", tc.amixer)
		}
		i := slices.IndexFunc(m.Controls, func(c Control) bool { return c.ID.Name == tc.name })
		if i < 0 {
			t.Errorf("no %s", tc.name)
			continue
		}
		c := m.Controls[i]
		if c.MinDecibels() != tc.min || c.MaxDecibels() != tc.max || c.Decibels.MuteAtMin {
			t.Errorf("%s: dB %q..%q (%+v), want %s..%s from amixer's %s", tc.name, c.MinDecibels(), c.MaxDecibels(), c.Decibels, tc.min, tc.max, tc.amixer)
		}
	}
	if got := keys(m.Source()); !slices.Equal(got, []string{"Capture Volume", "Capture Switch", "Mic Boost Volume"}) {
		t.Errorf("TGL sources %q", got)
	}
	if got := keys(m.Sink(0)); !slices.Equal(got, []string{"Master Playback Volume", "Master Playback Switch"}) {
		t.Errorf("TGL sink %q", got)
	}
}

// hdaLike is a card with what the recorded cards lack: enumerated
// controls, a second ADC's controls of the same names, an INTEGER64 with
// steps, jack-named and write-only mixer elements, a TLV of no dB type.
func hdaLike(t *testing.T) *alsa.Recorded {
	t.Helper()
	scale := func(min int32, step uint32) []uint32 { return []uint32{1, 8, uint32(min), step} }
	r, err := alsa.NewRecorded(&alsa.Dump{Card: 1, Info: alsa.DumpCardInfo{ID: "PCH", Driver: "HDA-Intel", Name: "HDA Intel PCH"}, Controls: []alsa.DumpControl{
		{NumID: 1, Iface: "MIXER", Name: "Master Playback Volume", Type: "INTEGER", Access: "read write tlv_read", Count: 2, Max: 87, Values: []int64{60, 60}, TLV: scale(-6525, 75)},
		{NumID: 2, Iface: "MIXER", Name: "Capture Volume", Type: "INTEGER", Access: "read write tlv_read", Count: 2, Max: 63, Values: []int64{40, 40}, TLV: scale(-1725, 75)},
		{NumID: 3, Iface: "MIXER", Name: "Capture Volume", Index: 1, Type: "INTEGER", Access: "read write", Count: 2, Max: 63, Values: []int64{1, 2}},
		{NumID: 4, Iface: "MIXER", Name: "Input Source", Type: "ENUMERATED", Access: "read write", Count: 1, Items: []string{"Internal Mic", "Headset Mic", "Mic, Rear"}, Values: []int64{0}},
		{NumID: 5, Iface: "MIXER", Name: "Auto-Mute Mode", Type: "ENUMERATED", Access: "read write", Count: 1, Items: []string{"Disabled", "Enabled"}, Values: []int64{1}},
		{NumID: 6, Iface: "MIXER", Name: "Beep Playback Volume", Type: "INTEGER64", Access: "read write", Count: 1, Min: -10, Max: 10, Step: 2, Values: []int64{0}},
		{NumID: 7, Iface: "MIXER", Name: "Line Out Jack", Type: "BOOLEAN", Access: "read", Count: 1, Values: []int64{1}},
		{NumID: 8, Iface: "MIXER", Name: "Secret Knob", Type: "INTEGER", Access: "write", Count: 1, Max: 3, Values: []int64{0}},
		{NumID: 9, Iface: "MIXER", Name: "Odd TLV Volume", Type: "INTEGER", Access: "read write tlv_read", Count: 1, Max: 3, Values: []int64{1}, TLV: []uint32{0x101, 4, 3}},
		{NumID: 10, Iface: "MIXER", Name: "Front Switch", Type: "BOOLEAN", Access: "read write", Count: 2, Values: []int64{1, 0}},
		{NumID: 11, Iface: "CARD", Name: "Headphone Jack", Type: "BOOLEAN", Access: "read", Count: 1, Values: []int64{0}},
	}})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func TestReadHDALike(t *testing.T) {
	c := hdaLike(t).Open()
	defer c.Close()
	m, err := Read(c)
	if err != nil {
		t.Fatal(err)
	}
	if got := names(m.Controls); !slices.Equal(got, []string{"Master Playback Volume", "Capture Volume", "Capture Volume,1",
		"Input Source", "Auto-Mute Mode", "Beep Playback Volume", "Odd TLV Volume", "Front Switch"}) {
		t.Errorf("controls %q (no jack, no write-only element)", got)
	}
	// A TLV of no dB type keeps the control, without a dB range, and is
	// reported.
	if m.Err == nil || !strings.Contains(m.Err.Error(), "Odd TLV Volume: dB range from TLV: TLV type 257 is not a dB type") {
		t.Errorf("Err = %v", m.Err)
	}
	if got := keys(m.Source()); !slices.Equal(got, []string{"Capture Volume", "Capture Volume,1", "Input Source"}) {
		t.Errorf("sources %q", got)
	}
	sink := m.Sink(0)
	if got := keys(sink); !slices.Equal(got, []string{"Master Playback Volume", "Auto-Mute Mode", "Beep Playback Volume", "Odd TLV Volume", "Front Switch"}) {
		t.Errorf("sink %q", got)
	}
	for key, want := range map[string]string{"Master Playback Volume": "60", "Auto-Mute Mode": "Enabled", "Beep Playback Volume": "0", "Front Switch": "on,off"} {
		if c, ok := Find(sink, key); !ok || c.Format() != want {
			t.Errorf("%s formats as %q, want %q", key, c.Format(), want)
		}
	}
	if c, _ := Find(m.Source(), "Capture Volume,1"); c.Format() != "1,2" || c.Kind() != "integer" {
		t.Errorf("Capture Volume,1 formats as %q", c.Format())
	}
	if c, _ := Find(sink, "Master Playback Volume"); c.MinDecibels() != "-65.25" || c.MaxDecibels() != "0" {
		t.Errorf("Master dB %q..%q", c.MinDecibels(), c.MaxDecibels())
	}
	if c, _ := Find(sink, "Auto-Mute Mode"); c.Kind() != "enumerated" || !slices.Equal(c.Items, []string{"Disabled", "Enabled"}) {
		t.Errorf("Auto-Mute Mode: %+v", c)
	}
	if _, ok := Find(sink, "Capture Volume"); ok {
		t.Error("the sink has a capture control")
	}
}

// failing fails ElemInfo or Read of one element, or Elements.
type failing struct {
	alsa.Control
	numid    uint32
	info     bool
	elements bool
}

func (f failing) Elements() ([]alsa.ElemID, error) {
	if f.elements {
		return nil, errors.New("ELEM_LIST: input/output error")
	}
	return f.Control.Elements()
}

func (f failing) ElemInfo(id alsa.ElemID) (alsa.ElemInfo, error) {
	if f.info && id.NumID == f.numid {
		return alsa.ElemInfo{}, unix.EIO
	}
	return f.Control.ElemInfo(id)
}

func (f failing) Read(id alsa.ElemID) (alsa.Value, error) {
	if !f.info && id.NumID == f.numid {
		return alsa.Value{}, unix.EIO
	}
	return f.Control.Read(id)
}

// TestReadSkipsOneBadElement: an element whose info or value does not
// read is left out and named; the others are read. Only a failed listing
// fails Read.
func TestReadSkipsOneBadElement(t *testing.T) {
	c := xps(t, 2)
	for _, info := range []bool{true, false} {
		m, err := Read(failing{Control: c, numid: 5, info: info})
		if err != nil {
			t.Fatal(err)
		}
		if !errors.Is(m.Err, unix.EIO) || !strings.Contains(m.Err.Error(), "mixer control Mic Capture Volume") {
			t.Errorf("Err = %v, want the Mic Capture Volume's EIO", m.Err)
		}
		if got := names(m.Controls); len(got) != 7 || slices.Contains(got, "Mic Capture Volume") {
			t.Errorf("controls %q, want the 7 others", got)
		}
	}
	if m, err := Read(failing{Control: c, elements: true}); err == nil || m != nil {
		t.Errorf("Read with a failing element list = %v, %v", m, err)
	}
}
