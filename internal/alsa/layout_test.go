// SPDX-License-Identifier: Apache-2.0

package alsa

import (
	"os"
	"slices"
	"testing"

	"github.com/liken-sh/operators/internal/alsa/eld"
)

func procELD(t *testing.T, name string) *eld.ELD {
	t.Helper()
	text, err := os.ReadFile("../../testdata/fixtures/eld/" + name)
	if err != nil {
		t.Fatal(err)
	}
	p, err := eld.ParseProc(text)
	if err != nil {
		t.Fatal(err)
	}
	return p.ELD
}

func TestLayoutFromELD(t *testing.T) {
	stereo := eld.SAD{Coding: eld.CodingLPCM, Channels: 2, RateMask: 7, DepthMask: 7}
	lpcm := func(n int) eld.SAD { return eld.SAD{Coding: eld.CodingLPCM, Channels: n, RateMask: 7, DepthMask: 7} }
	for _, tc := range []struct {
		name string
		e    *eld.ELD
		want Layout
	}{
		{"Onkyo receiver: 8ch LPCM, FL/FR LFE FC RL/RR RLC/RRC",
			procELD(t, "forum-intel-h97-onkyo-txnr828-eld0.0.txt"),
			Layout{8, []string{"FL", "FR", "RL", "RR", "FC", "LFE", "SL", "SR"}, LayoutELD}},
		{"LG TV: allocation 0 (printed 0xffff) is unknown, 2ch LPCM",
			procELD(t, "forum-intel-lgtv-speakers0xffff-eld3.0.txt"),
			Layout{2, []string{"FL", "FR"}, LayoutELD}},
		{"8ch LPCM with a 5.1 allocation", &eld.ELD{SpeakerAllocation: 0x0f, SADs: []eld.SAD{lpcm(8)}},
			Layout{6, []string{"FL", "FR", "RL", "RR", "FC", "LFE"}, LayoutELD}},
		{"6ch LPCM with a 7.1 allocation", &eld.ELD{SpeakerAllocation: 0x4f, SADs: []eld.SAD{stereo, lpcm(6)}},
			Layout{6, []string{"FL", "FR", "RL", "RR", "FC", "LFE"}, LayoutELD}},
		{"6ch LPCM without a centre", &eld.ELD{SpeakerAllocation: 0x0b, SADs: []eld.SAD{lpcm(6)}},
			Layout{2, []string{"FL", "FR"}, LayoutELD}},
		{"8ch LPCM, allocation 0", &eld.ELD{SADs: []eld.SAD{lpcm(8)}}, Layout{2, []string{"FL", "FR"}, LayoutELD}},
		{"8ch bitstream, 2ch LPCM", &eld.ELD{SpeakerAllocation: 0x4f, SADs: []eld.SAD{stereo,
			{Coding: eld.CodingAC3, Channels: 8}}}, Layout{2, []string{"FL", "FR"}, LayoutELD}},
		{"no ELD", nil, Layout{}},
	} {
		got := LayoutFromELD(tc.e)
		if got.Channels != tc.want.Channels || !slices.Equal(got.Positions, tc.want.Positions) || got.Source != tc.want.Source {
			t.Errorf("%s: %+v, want %+v", tc.name, got, tc.want)
		}
		if len(got.Positions) != got.Channels {
			t.Errorf("%s: %d positions for %d channels", tc.name, len(got.Positions), got.Channels)
		}
	}
}

func TestLayoutFromChannelMap(t *testing.T) {
	for _, tc := range []struct {
		name  string
		chmap []uint32
		want  string
	}{
		{"Razer: FL FR", []uint32{3, 4}, "FL,FR"},
		{"WD19 dock: unknown", []uint32{0, 0}, ""},
		{"HDMI before any stream: all unknown", make([]uint32, 8), ""},
		{"5.1 in ALSA order", []uint32{3, 4, 5, 6, 7, 8}, "FL,FR,RL,RR,FC,LFE"},
		{"mono", []uint32{2}, "MONO"},
		{"phase inverse flag", []uint32{3, 4 | 1<<16}, "FL,FR"},
		{"driver specific", []uint32{3, 4 | 2<<16}, ""},
		{"one unknown", []uint32{3, 0}, ""},
		{"twice FL", []uint32{3, 3}, ""},
		{"silent channels", []uint32{3, 4, 1, 1}, "FL,FR,NA,NA"},
		{"last position, BRC", []uint32{35, 36}, "BLC,BRC"},
		{"past the table", []uint32{3, 37}, ""},
		{"none", nil, ""},
	} {
		got := LayoutFromChannelMap(tc.chmap)
		if got.Position() != tc.want || (tc.want != "" && (got.Source != LayoutChannelMap || got.Channels != len(tc.chmap))) ||
			(tc.want == "" && (got.Channels != 0 || got.Source != LayoutNone)) {
			t.Errorf("%s: %+v, want %q", tc.name, got, tc.want)
		}
	}
}

func TestChooseLayout(t *testing.T) {
	valid := ELDState{ELD: &eld.ELD{SpeakerAllocation: 1, SADs: []eld.SAD{{Coding: eld.CodingLPCM, Channels: 2}}}}
	for _, tc := range []struct {
		name string
		p    PCM
		conn string
		want LayoutSource
	}{
		{"HDMI with a monitor", PCM{HasELD: true, ELD: valid}, ConnHDMI, LayoutELD},
		{"HDMI without one", PCM{HasELD: true, ChannelMap: []uint32{3, 4}}, "", LayoutNone},
		{"USB with a map", PCM{ChannelMap: []uint32{3, 4}}, ConnUSB, LayoutChannelMap},
		{"analog with a map", PCM{ChannelMap: []uint32{3, 4}}, ConnAnalog, LayoutNone},
	} {
		if got := ChooseLayout(tc.p, tc.conn); got.Source != tc.want {
			t.Errorf("%s: %+v, want source %q", tc.name, got, tc.want)
		}
	}
}

func TestConnectionType(t *testing.T) {
	dp := ELDState{ELD: &eld.ELD{Connection: eld.ConnDisplayPort}}
	hdmi := ELDState{ELD: &eld.ELD{Connection: eld.ConnHDMI}}
	reserved := ELDState{ELD: &eld.ELD{Connection: 2}}
	hda := CardInfo{Driver: "HDA-Intel"}
	for _, tc := range []struct {
		name string
		p    PCM
		card CardInfo
		id   CardIdentity
		want string
	}{
		{"HDMI monitor", PCM{Info: PCMInfo{ID: "HDMI 0"}, HasELD: true, ELD: hdmi}, hda, CardIdentity{Bus: "pci"}, ConnHDMI},
		{"DP monitor", PCM{Info: PCMInfo{ID: "HDMI 3 (*)"}, HasELD: true, ELD: dp}, hda, CardIdentity{}, ConnDisplayPort},
		{"reserved connection type", PCM{HasELD: true, ELD: reserved}, hda, CardIdentity{}, ""},
		{"HDMI port, no monitor", PCM{Info: PCMInfo{ID: "HDMI 0"}, HasELD: true}, hda, CardIdentity{}, ""},
		{"HDMI id, no ELD element", PCM{Info: PCMInfo{ID: "HDMI 0"}}, hda, CardIdentity{}, ""},
		{"S/PDIF", PCM{Info: PCMInfo{ID: "ALC1220 Digital", Name: "ALC1220 S/PDIF"}}, hda, CardIdentity{}, ""},
		{"analog", PCM{Info: PCMInfo{ID: "ALC1220 Analog"}}, hda, CardIdentity{}, ConnAnalog},
		{"\"DPCM\" is not DP", PCM{Info: PCMInfo{ID: "DPCM front end"}}, hda, CardIdentity{}, ConnAnalog},
		{"USB by sysfs", PCM{Info: PCMInfo{ID: "USB Audio"}}, CardInfo{Driver: "other"}, CardIdentity{Bus: "usb"}, ConnUSB},
		{"USB by driver", PCM{Info: PCMInfo{ID: "USB Audio"}}, CardInfo{Driver: "USB-Audio"}, CardIdentity{}, ConnUSB},
	} {
		if got := ConnectionType(tc.p, tc.card, tc.id); got != tc.want {
			t.Errorf("%s: %q, want %q", tc.name, got, tc.want)
		}
	}
}
