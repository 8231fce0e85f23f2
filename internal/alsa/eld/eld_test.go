// SPDX-License-Identifier: Apache-2.0

package eld

import (
	"bytes"
	"encoding/hex"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// derived is what the operator publishes from a block.
type derived struct {
	pnp, product, name, conn, speakers, depths, monitorID string
	version, channels, maxRate                            int
}

func derive(e *ELD) derived {
	return derived{
		pnp: e.PNPID(), product: e.Product(), name: e.MonitorName, conn: e.Connection.String(),
		speakers: e.Speakers(), depths: e.LPCMBitDepths(), monitorID: e.MonitorID(),
		version: e.Version, channels: e.LPCMChannels(), maxRate: e.LPCMMaxRateHz(),
	}
}

// fixtures holds the ELD blocks recorded on real machines.
const fixtures = "../../../testdata/fixtures/eld"

func readFixture(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(fixtures, name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestControlFixtures: every recorded control value parses to the right
// parse of the fixtures' README, and its .hex twin holds the same bytes.
func TestControlFixtures(t *testing.T) {
	for _, tc := range []struct {
		file string
		want derived
		eld  ELD // fields not covered by derived
	}{
		{
			file: "alsa-ucm-conf-248-dell-g2422hs-eld-ctl",
			want: derived{pnp: "DEL", product: "a1e5", name: "DELL G2422HS", conn: "hdmi", speakers: "FL/FR",
				depths: "16 20 24", monitorID: "del-a1e5-dell-g2422hs", version: 2, channels: 2, maxRate: 48000},
			eld: ELD{Version: 2, BaselineLen: 32, CEAEDIDVersion: 3, MonitorName: "DELL G2422HS", SpeakerAllocation: 1,
				ManufacturerCode: 0xac10, ProductCode: 0xa1e5,
				SADs: []SAD{{Coding: CodingLPCM, Channels: 2, RateMask: 0x07, DepthMask: 0x07}}},
		},
		{
			// DisplayPort (MST), 2 bytes of padding inside the baseline.
			file: "samsung-u28e590-dp-eld-ctl",
			want: derived{pnp: "SAM", product: "0c4d", name: "U28E590", conn: "displayport", speakers: "FL/FR",
				depths: "16 20 24", monitorID: "sam-0c4d-u28e590", version: 2, channels: 2, maxRate: 48000},
			eld: ELD{Version: 2, BaselineLen: 28, CEAEDIDVersion: 3, MonitorName: "U28E590", Connection: ConnDisplayPort,
				SpeakerAllocation: 1, ManufacturerCode: 0x2d4c, ProductCode: 0x0c4d,
				SADs: []SAD{{Coding: CodingLPCM, Channels: 2, RateMask: 0x07, DepthMask: 0x07}}},
		},
		{
			// Synthesised by the driver: nameless, manufacturer 0, so no
			// pairing identity; still a valid stereo LPCM sink.
			file: "forum-2016-ati-capeverde-synth-eld-ctl",
			want: derived{pnp: "", product: "0000", name: "", conn: "hdmi", speakers: "FL/FR",
				depths: "16 20 24", monitorID: "", version: 2, channels: 2, maxRate: 48000},
			eld: ELD{Version: 2, BaselineLen: 20, SpeakerAllocation: 1,
				SADs: []SAD{{Coding: CodingLPCM, Channels: 2, RateMask: 0x07, DepthMask: 0x07}}},
		},
	} {
		t.Run(tc.file, func(t *testing.T) {
			bin := readFixture(t, tc.file+".bin")
			hexed, err := hex.DecodeString(strings.TrimSpace(string(readFixture(t, tc.file+".hex"))))
			if err != nil || !bytes.Equal(hexed, bin) {
				t.Fatalf(".hex and .bin differ (%v)", err)
			}
			e, err := Parse(bin)
			if err != nil {
				t.Fatal(err)
			}
			if got := derive(e); got != tc.want {
				t.Errorf("derived\n got %+v\nwant %+v", got, tc.want)
			}
			if diff := cmp.Diff(*e, tc.eld); diff != "" {
				t.Errorf("ELD (-*e +tc.eld):\n%s", diff)
			}
		})
	}
}

// TestProcFixtures: the kernel's text form of three real codecs.
func TestProcFixtures(t *testing.T) {
	lpcm2 := SAD{Coding: CodingLPCM, Channels: 2, RateMask: 0x7f, DepthMask: 0x07}
	for _, tc := range []struct {
		file             string
		present, valid   bool
		want             derived
		sads             []SAD
		allocation       uint8
		manufacturerCode uint16
	}{
		{
			// Receiver with eight descriptors; the last is MLP at 48, 96
			// and 192 kHz only. Columns aligned with spaces.
			file: "forum-intel-h97-onkyo-txnr828-eld0.0.txt", present: true, valid: true,
			want: derived{pnp: "ONK", product: "0d81", name: "TX-NR828", conn: "hdmi",
				speakers: "FL/FR LFE FC RL/RR RLC/RRC", depths: "16 20 24", monitorID: "onk-0d81-tx-nr828",
				version: 2, channels: 8, maxRate: 192000},
			sads: []SAD{
				lpcm2,
				{Coding: CodingLPCM, Channels: 8, RateMask: 0x7f, DepthMask: 0x07},
				{Coding: CodingAC3, Channels: 8, RateMask: 0x07, MaxBitrate: 640000},
				{Coding: CodingDTS, Channels: 8, RateMask: 0x06, MaxBitrate: 1536000},
				{Coding: CodingDSD, Channels: 6, RateMask: 0x02},
				{Coding: CodingEAC3, Channels: 8, RateMask: 0x06},
				{Coding: CodingDTSHD, Channels: 8, RateMask: 0x7e},
				{Coding: CodingMLP, Channels: 8, RateMask: 0x54},
			},
			allocation: 0x4f, manufacturerCode: 0xcb3d,
		},
		{
			// speakers [0xffff]: the kernel's stand-in for an allocation of
			// 0. Read back as 0, so nothing is advertised; 2ch LPCM only.
			file: "forum-intel-lgtv-speakers0xffff-eld3.0.txt", present: true, valid: true,
			want: derived{pnp: "GSM", product: "0001", name: "LG TV", conn: "hdmi", speakers: "",
				depths: "16 20 24", monitorID: "gsm-0001-lg-tv", version: 2, channels: 2, maxRate: 192000},
			sads: []SAD{
				{Coding: CodingDTS, Channels: 6, RateMask: 0x06, MaxBitrate: 1536000},
				{Coding: CodingAC3, Channels: 6, RateMask: 0x07, MaxBitrate: 640000},
				{Coding: CodingLPCM, Channels: 2, RateMask: 0x57, DepthMask: 0x07},
			},
			allocation: 0, manufacturerCode: 0x6d1e,
		},
		{
			// The short form: two keys and nothing else.
			file: "alsa-devel-fiji-tb-no-monitor-eld0.0.txt", present: false, valid: false,
		},
	} {
		t.Run(tc.file, func(t *testing.T) {
			p, err := ParseProc(readFixture(t, tc.file))
			if err != nil {
				t.Fatal(err)
			}
			if p.MonitorPresent != tc.present || p.ELDValid != tc.valid {
				t.Fatalf("present %v valid %v, want %v %v", p.MonitorPresent, p.ELDValid, tc.present, tc.valid)
			}
			if !tc.valid {
				if p.ELD != nil {
					t.Fatalf("ELD %+v for an invalid block", p.ELD)
				}
				return
			}
			e := p.ELD
			if got := derive(e); got != tc.want {
				t.Errorf("derived\n got %+v\nwant %+v", got, tc.want)
			}
			if diff := cmp.Diff(e.SADs, tc.sads); diff != "" {
				t.Errorf("SADs (-e.SADs +tc.sads):\n%s", diff)
			}
			if e.SpeakerAllocation != tc.allocation || e.ManufacturerCode != tc.manufacturerCode {
				t.Errorf("allocation %#x manufacturer %#x", e.SpeakerAllocation, e.ManufacturerCode)
			}
			if !e.AI || e.HDCP || e.CEAEDIDVersion != 3 || e.PortID != 0 {
				t.Errorf("flags: AI %v HDCP %v CEA %d port %d", e.AI, e.HDCP, e.CEAEDIDVersion, e.PortID)
			}
		})
	}
	// The Onkyo's MLP descriptor names exactly 48, 96 and 192 kHz.
	p, _ := ParseProc(readFixture(t, "forum-intel-h97-onkyo-txnr828-eld0.0.txt"))
	// Its compressed descriptors, DSD aside (no passthrough name), in
	// ascending coding type.
	if got, want := p.ELD.Passthrough(), []string{"ac3", "dts", "eac3", "dts_hd", "truehd"}; !reflect.DeepEqual(got, want) {
		t.Errorf("Onkyo passthrough %v, want %v", got, want)
	}
	if got := p.ELD.SADs[7].RatesHz(); !reflect.DeepEqual(got, []int{48000, 96000, 192000}) {
		t.Errorf("MLP rates %v", got)
	}
}

// block builds a version-2 block: the fixed header, then the name, then the
// descriptors; tests then break one field.
func block(name string, sads ...[3]byte) []byte {
	b := make([]byte, FixedBytes, 64)
	b[0] = 2 << 3
	b[4] = byte(len(name))
	b[5] = byte(len(sads)) << 4
	b[7] = 1
	b[16], b[17] = 0x1e, 0x6d // GSM in EDID order
	b[18], b[19] = 0x09, 0x5b
	b = append(b, name...)
	for _, s := range sads {
		b = append(b, s[:]...)
	}
	b[2] = byte((len(b) - 4 + 3) / 4)
	return b
}

var stereo = [3]byte{0x09, 0x07, 0x07}

func TestParseRejects(t *testing.T) {
	good := block("LG ULTRAWIDE", stereo)
	if e, err := Parse(good); err != nil || e.MonitorID() != "gsm-5b09-lg-ultrawide" {
		t.Fatalf("the base block: %v %v", e, err)
	}
	mut := func(f func(b []byte) []byte) []byte { return f(bytes.Clone(good)) }
	for _, tc := range []struct {
		name  string
		block []byte
		err   error
		says  string
	}{
		{"empty", nil, ErrEmpty, "empty"},
		{"all zero (hdmi-codec, no monitor)", make([]byte, 128), ErrEmpty, "empty"},
		{"short header", good[:19], ErrInvalid, "19 bytes"},
		{"too long", append(bytes.Clone(good), make([]byte, MaxSize)...), ErrInvalid, "longer than 512"},
		{"version 3", mut(func(b []byte) []byte { b[0] = 3 << 3; return b }), ErrInvalid, "version 3"},
		{"version 0", mut(func(b []byte) []byte { b[0] = 0x01; return b }), ErrInvalid, "version 0"},
		{"reserved MNL", mut(func(b []byte) []byte { b[4] = 17; return b }), ErrInvalid, "length 17 is reserved"},
		{"name past end", good[:FixedBytes+5], ErrInvalid, "monitor name of 12 bytes runs past"},
		{"SAD past end", good[:len(good)-1], ErrInvalid, "descriptor 0 of 1 runs past"},
		{"second SAD missing", mut(func(b []byte) []byte { b[5] = 2 << 4; return b }), ErrInvalid, "descriptor 1 of 2"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e, err := Parse(tc.block)
			if !errors.Is(err, tc.err) || e != nil {
				t.Fatalf("Parse = %v, %v; want %v", e, err, tc.err)
			}
			if !strings.Contains(err.Error(), tc.says) {
				t.Errorf("error %q does not say %q", err, tc.says)
			}
		})
	}
}

// TestMonitorWithoutAudio: a present monitor whose ELD lists no audio
// format (or only bitstreams) is a valid ELD that takes no PCM audio, in
// both forms.
func TestMonitorWithoutAudio(t *testing.T) {
	b := block("U28E590")
	b[5] |= 1 << 2 // DisplayPort
	e, err := Parse(b)
	if err != nil {
		t.Fatalf("an ELD with no descriptor: %v", err)
	}
	if e.Audio() || e.MonitorName != "U28E590" || e.Connection != ConnDisplayPort {
		t.Errorf("%+v: want a DisplayPort monitor U28E590 that takes no audio", e)
	}
	ac3 := block("AVR", [3]byte{0x15, 0x07, 0x50}) // AC-3 only
	if e, err := Parse(ac3); err != nil || e.Audio() || len(e.SADs) != 1 {
		t.Errorf("a bitstream-only ELD: %+v %v, want valid without PCM audio", e, err)
	}
	if e, err := Parse(block("TV", stereo)); err != nil || !e.Audio() {
		t.Errorf("a stereo LPCM ELD: %+v %v, want audio", e, err)
	}

	text := bytes.Replace(readFixture(t, "forum-intel-h97-onkyo-txnr828-eld0.0.txt"), []byte("sad_count               8"), []byte("sad_count 0"), 1)
	p, err := ParseProc(text)
	if err != nil || p.ELD == nil || p.ELD.Audio() || p.ELD.MonitorName != "TX-NR828" {
		t.Errorf("a proc file with sad_count 0: %+v %v, want a valid ELD without audio", p, err)
	}
}

// TestParseProcBlocks: what `cat eld#*` prints, several files one after
// the other, is read block by block.
func TestParseProcBlocks(t *testing.T) {
	onkyo := readFixture(t, "forum-intel-h97-onkyo-txnr828-eld0.0.txt")
	lg := readFixture(t, "forum-intel-lgtv-speakers0xffff-eld3.0.txt")
	off := readFixture(t, "alsa-devel-fiji-tb-no-monitor-eld0.0.txt")
	var cat []byte
	for _, f := range [][]byte{onkyo, off, lg} {
		cat = append(append(cat, f...), '\n')
	}
	blocks, err := ParseProcBlocks(cat)
	if err != nil {
		t.Fatal(err)
	}
	if len(blocks) != 3 {
		t.Fatalf("%d blocks, want 3", len(blocks))
	}
	if blocks[0].ELD == nil || blocks[0].ELD.MonitorName != "TX-NR828" || blocks[1].ELDValid || blocks[1].MonitorPresent ||
		blocks[2].ELD == nil || blocks[2].ELD.SpeakerAllocation != 0 {
		t.Errorf("blocks read as %+v / %+v / %+v", blocks[0].ELD, blocks[1], blocks[2].ELD)
	}
	// Without the blank lines too.
	if b, err := ParseProcBlocks(append(bytes.TrimSpace(onkyo), append([]byte("\n"), lg...)...)); err != nil || len(b) != 2 {
		t.Errorf("two files with no blank line between: %d blocks, %v", len(b), err)
	}
	for name, tc := range map[string]struct {
		text []byte
		says string
	}{
		"empty":          {nil, "no monitor_present line"},
		"text before":    {append([]byte("card 0 codec 2\n"), onkyo...), "text before the first"},
		"a broken block": {append(append(bytes.Clone(onkyo), '\n'), bytes.Replace(lg, []byte("eld_valid"), []byte("eld_valid x\neld_validity"), 1)...), "block 2 (line"},
	} {
		if _, err := ParseProcBlocks(tc.text); err == nil || !strings.Contains(err.Error(), tc.says) {
			t.Errorf("%s: %v, want an error saying %q", name, err, tc.says)
		}
	}
}

func TestParseAccepts(t *testing.T) {
	// Version 31 (baseline only) is read like version 2.
	b := block("DELL U2415", [3]byte{0x0f, 0x07, 0x07})
	b[0] = 31 << 3
	b[5] |= 1 << 2 // DisplayPort
	b[16], b[17] = 0x10, 0xac
	b[18], b[19] = 0x71, 0x40
	b[7] = 0x05
	b[8] = 0x01 // port id 0x801
	b[9] = 0x08
	e, err := Parse(b)
	if err != nil {
		t.Fatal(err)
	}
	if e.Version != 31 || e.Connection != ConnDisplayPort || e.MonitorID() != "del-4071-dell-u2415" ||
		e.Speakers() != "FL/FR FC" || e.LPCMChannels() != 8 || e.PortID != 0x801 {
		t.Errorf("%+v: id %s speakers %q", e, e.MonitorID(), e.Speakers())
	}

	// A fixed-size buffer (ASoC's hdmi-codec hands out 128 bytes) with
	// zero padding past the baseline.
	padded := append(block("LG ULTRAWIDE", stereo), make([]byte, 80)...)
	if e, err := Parse(padded); err != nil || e.MonitorName != "LG ULTRAWIDE" || len(e.SADs) != 1 {
		t.Errorf("padded: %+v %v", e, err)
	}

	// EDID pads a name with a newline and spaces; a NUL ends it as the
	// kernel's copy does; a reserved connection type publishes none.
	e, err = Parse(block("BOE\n  ", stereo))
	if err != nil || e.MonitorName != "BOE" {
		t.Fatalf("%+v %v", e, err)
	}
	e, err = Parse(block("AB\x00CD", stereo))
	if err != nil || e.MonitorName != "AB" {
		t.Fatalf("%+v %v", e, err)
	}
	b = block("", stereo)
	b[5] |= 3 << 2
	if e, err := Parse(b); err != nil || e.Connection.String() != "" || e.MonitorID() != "gsm-5b09" {
		t.Errorf("reserved connection: %+v %v", e, err)
	}
}

// TestMonitorIDVectors are the pairing identities the reference documents
// and the display operator tests, so both drivers build the same bytes.
func TestMonitorIDVectors(t *testing.T) {
	for _, tc := range []struct {
		pnp     string
		product uint16
		name    string
		want    string
	}{
		{"GSM", 0x5b09, "LG ULTRAWIDE", "gsm-5b09-lg-ultrawide"},
		{"DEL", 0x4071, "DELL U2415", "del-4071-dell-u2415"},
		{"GSM", 0x7716, "LG HDR WQHD", "gsm-7716-lg-hdr-wqhd"},
		{"BOE", 0x095f, "", "boe-095f"},
		{"BOE", 0x095f, "  \t ", "boe-095f"},
		{"GSM", 0x0001, " LG   TV \n", "gsm-0001-lg-tv"},
		{"ONK", 0x0d81, "TX-NR828", "onk-0d81-tx-nr828"},
		{"", 0x1234, "NAME", ""},
	} {
		if got := MonitorID(tc.pnp, tc.product, tc.name); got != tc.want {
			t.Errorf("MonitorID(%q, %#x, %q) = %q, want %q", tc.pnp, tc.product, tc.name, got, tc.want)
		}
	}
	for code, want := range map[uint16]string{0x1e6d: "GSM", 0x10ac: "DEL", 0x4c2d: "SAM", 0x3dcb: "ONK",
		0x9e6d: "GSM", 0: "", 0x7fff: "", 0x0421: "AAA", 0x6b5a: "ZZZ"} {
		if got := DecodePNP(code); got != want {
			t.Errorf("DecodePNP(%#04x) = %q, want %q", code, got, want)
		}
	}
}

func TestSpeakerNames(t *testing.T) {
	for alloc, want := range map[uint16]string{
		0: "", 0x01: "FL/FR", 0x0b: "FL/FR LFE RL/RR", 0x4f: "FL/FR LFE FC RL/RR RLC/RRC",
		0x7f:   "FL/FR LFE FC RL/RR RC FLC/FRC RLC/RRC",
		0xffff: "FL/FR LFE FC RL/RR RC FLC/FRC RLC/RRC FLW/FRW FLH/FRH TC FCH",
	} {
		if got := SpeakerNames(alloc); got != want {
			t.Errorf("SpeakerNames(%#x) = %q, want %q", alloc, got, want)
		}
	}
}

func TestParseProcRejects(t *testing.T) {
	onkyo := string(readFixture(t, "forum-intel-h97-onkyo-txnr828-eld0.0.txt"))
	edit := func(old, new string) []byte {
		if !strings.Contains(onkyo, old) {
			t.Fatalf("fixture has no %q", old)
		}
		return []byte(strings.Replace(onkyo, old, new, 1))
	}
	for _, tc := range []struct {
		name string
		text []byte
		says string
	}{
		{"empty", nil, "monitor_present is missing"},
		{"no eld_valid", []byte("monitor_present 1\n"), "eld_valid is missing"},
		{"flag not 0/1", []byte("monitor_present yes\neld_valid 0\n"), `monitor_present "yes"`},
		{"not a key", []byte("Monitor Present 1\n"), `"Monitor" is not a key`},
		{"duplicate", []byte("monitor_present 1\nmonitor_present 0\neld_valid 0\n"), "appears twice"},
		{"missing SAD line", edit("sad7_rates              [0x1480] 48000 96000 192000\n", ""), "sad7_rates is missing"},
		{"LPCM without bits", edit("sad0_bits               [0xe0000] 16 20 24\n", ""), "sad0_bits is missing"},
		{"foreign rate", edit("[0x1480]", "[0x1481]"), "names rates no ELD carries"},
		{"foreign depth", edit("sad0_bits               [0xe0000]", "sad0_bits [0xe0001]"), "sample sizes"},
		{"channels 9", edit("sad1_channels           8", "sad1_channels 9"), "outside 1..8"},
		{"bad version", edit("[0x2] CEA-861D", "[0x3] CEA-861D"), "eld_version 3"},
		{"bad connection", edit("connection_type         HDMI", "connection_type VGA"), `connection_type "VGA"`},
		{"speaker bits", edit("[0x4f]", "[0x14f]"), "bits past the ELD's seven"},
		{"16 SADs", edit("sad_count               8", "sad_count 16"), "4-bit field"},
		{"unbracketed", edit("[0x4f] FL/FR", "0x4f FL/FR"), "does not start with a [0x...] number"},
		{"bad number", edit("manufacture_id          0xcb3d", "manufacture_id 0x1cb3d"), "16-bit number"},
		{"long name", edit("TX-NR828", "TX-NR828-and-then-some"), "longer than 16"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, err := ParseProc(tc.text)
			if !errors.Is(err, ErrInvalid) || p.ELD != nil {
				t.Fatalf("ParseProc = %+v, %v; want ErrInvalid", p, err)
			}
			if !strings.Contains(err.Error(), tc.says) {
				t.Errorf("error %q does not say %q", err, tc.says)
			}
		})
	}
	// An old kernel printed every field even for an invalid block; the
	// fields are not read.
	old := "monitor_present 1\neld_valid 0\nmonitor_name \nsad_count 0\ncodec_pin_nid 0x3\n"
	if p, err := ParseProc([]byte(old)); err != nil || !p.MonitorPresent || p.ELDValid || p.ELD != nil {
		t.Errorf("old invalid form: %+v %v", p, err)
	}
}
