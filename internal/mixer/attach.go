// SPDX-License-Identifier: Apache-2.0

package mixer

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	"github.com/liken-sh/operators/internal/alsa"
)

// IEC958SwitchName is the HDMI/DP codec's per-output switch (and an
// S/PDIF output's): BOOLEAN on the MIXER interface, one per output, told
// apart by index. It is the one control an HDMI/DP endpoint gets.
const IEC958SwitchName = "IEC958 Playback Switch"

// HDMISlots maps each HDMI/DP PCM device of a card (one with an ELD
// element) to its slot: the index of the IEC958 elements the HDA HDMI
// codec made for it. ids is the card's element list (alsa.Control.Elements).
//
// The PCM's id does not say it: snd-hda-intel names PCM "HDMI 0" the
// owner of index 0, but a SOF card serves the same codec as PCMs "HDMI 1",
// "HDMI 2", "HDMI 3" (devices 5, 6, 7 on the recorded Dell XPS 17 9700)
// with indexes 0, 1, 2. What does say it is creation order: the codec's
// driver (generic_hdmi_build_controls in sound/pci/hda/patch_hdmi.c)
// adds, for each of its PCMs in turn, the PCM's jack, its IEC958 elements
// (the switch last) and then its ELD element, and the kernel numbers
// elements in the order they are added. So a PCM's slot is the index of
// the IEC958 Playback Switch that comes last before its ELD element in
// numid order. An ELD element with no switch before it since the previous
// ELD (an HDMI codec that makes none, such as ASoC's hdmi-codec) maps to
// -1: an HDMI/DP output with no control of its own.
func HDMISlots(ids []alsa.ElemID) map[int]int {
	sorted := slices.Clone(ids)
	slices.SortStableFunc(sorted, func(a, b alsa.ElemID) int { return cmp.Compare(a.NumID, b.NumID) })
	slots := map[int]int{}
	last := -1
	for _, id := range sorted {
		switch {
		case id.Iface == alsa.IfaceMixer && id.Name == IEC958SwitchName:
			last = int(id.Index)
		case id.IsELD():
			slots[int(id.Device)] = last
			last = -1
		}
	}
	return slots
}

// Side is where the attach rule sends a control.
type Side int

// Sides.
const (
	// SideSink: the card's analog and USB sinks.
	SideSink Side = iota
	// SideSource: the card's sources.
	SideSource
	// SideHDMI: the HDMI/DP sink of one slot (the control's index).
	SideHDMI
)

// String returns "sink", "source" or "hdmi".
func (s Side) String() string {
	switch s {
	case SideSink:
		return "sink"
	case SideSource:
		return "source"
	case SideHDMI:
		return "hdmi"
	}
	return fmt.Sprintf("side%d", int(s))
}

// SideOf applies the attach rule to one control of a card whose HDMI/DP
// slots are slots (HDMISlots):
//
//  1. The IEC958 Playback Switch whose index is an HDMI/DP slot goes to
//     that slot's sink, and to nothing else.
//  2. A name with "Playback" goes to the sinks (this is also where an
//     S/PDIF output's IEC958 switch, with no slot, goes).
//  3. A name with "Capture", "Input Source", "Boost" (the input amps
//     HDA's parser names "Mic Boost Volume", "Line Boost Volume"; but not
//     "Bass Boost", a USB output's tone control), "Auto Gain Control"
//     (USB audio's AGC, a microphone's: the recorded Razer Kraken X has
//     it beside "Mic Capture Volume"), or the word "Mic" or "Microphone"
//     ("Headset Mic Switch" on the recorded SOF card) goes to the sources.
//  4. Any other name, one with no direction such as "Auto-Mute Mode" or
//     "Speaker Switch", goes to the sinks.
//
// The microphone names are part of the rule because without them the recorded SOF
// card's "Headset Mic Switch" and the Razer's "Auto Gain Control" would
// land on speakers and headphones.
func SideOf(id alsa.ElemID, slots map[int]int) Side {
	if id.Name == IEC958SwitchName {
		for _, s := range slots {
			if s == int(id.Index) {
				return SideHDMI
			}
		}
	}
	if strings.Contains(id.Name, "Playback") {
		return SideSink
	}
	for _, s := range []string{"Capture", "Input Source", "Auto Gain Control"} {
		if strings.Contains(id.Name, s) {
			return SideSource
		}
	}
	if strings.Contains(id.Name, "Boost") && !strings.Contains(id.Name, "Bass Boost") {
		return SideSource
	}
	for _, w := range strings.Fields(id.Name) {
		if strings.EqualFold(w, "Mic") || strings.EqualFold(w, "Microphone") {
			return SideSource
		}
	}
	return SideSink
}

// Sink returns the controls of the card's playback PCM device, with Key
// set: the IEC958 switch of its slot for an HDMI/DP PCM (one in
// HDMISlots; none when its slot is -1), otherwise (an analog or USB output) every control SideOf
// sends to the sinks. Every sink of a card that is not HDMI/DP gets the
// same controls; two that set one control: the last write wins.
func (m *Mixer) Sink(device int) []Control {
	slot, hdmi := m.HDMISlots[device]
	var out []Control
	for _, c := range m.Controls {
		side := SideOf(c.ID, m.HDMISlots)
		if hdmi && side == SideHDMI && int(c.ID.Index) == slot || !hdmi && side == SideSink {
			out = append(out, c)
		}
	}
	return keyed(out)
}

// Source returns the controls of the card's capture PCMs, with Key set:
// every control SideOf sends to the sources. A card with several capture
// PCMs gives each the same controls (on HDA, one capture PCM serves every
// input jack and "Input Source" picks the jack).
func (m *Mixer) Source() []Control {
	var out []Control
	for _, c := range m.Controls {
		if SideOf(c.ID, m.HDMISlots) == SideSource {
			out = append(out, c)
		}
	}
	return keyed(out)
}

// keyed sets each control's Key, unique within list: the name; for a
// name that repeats (HDA's second ADC has "Capture Volume" index 1), the
// ones with an index other than 0 are "name,index"; should that still
// repeat (elements told apart by device), "name,index,device=D,subdevice=S".
func keyed(list []Control) []Control {
	count := map[string]int{}
	for _, c := range list {
		count[c.ID.Name]++
	}
	taken := map[string]bool{}
	for i := range list {
		id := list[i].ID
		key := id.Name
		if count[id.Name] > 1 && id.Index != 0 {
			key = nameIndex(id)
		}
		if taken[key] {
			key = fmt.Sprintf("%s,%d,device=%d,subdevice=%d", id.Name, id.Index, id.Device, id.Subdevice)
		}
		taken[key] = true
		list[i].Key = key
	}
	return list
}

// Find returns the control of list whose Key is key.
func Find(list []Control, key string) (Control, bool) {
	for _, c := range list {
		if c.Key == key {
			return c, true
		}
	}
	return Control{}, false
}
