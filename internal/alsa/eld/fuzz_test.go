// SPDX-License-Identifier: Apache-2.0

package eld

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

var monitorIDShape = regexp.MustCompile(`^[a-z]{3}-[0-9a-f]{4}(-\S+)?$`)

// FuzzParse: no input panics; an accepted block keeps the kernel's bounds,
// derives well-formed values, and reads back the same through the proc
// form the kernel would print for it.
func FuzzParse(f *testing.F) {
	for _, name := range []string{"alsa-ucm-conf-248-dell-g2422hs-eld-ctl.bin",
		"samsung-u28e590-dp-eld-ctl.bin", "forum-2016-ati-capeverde-synth-eld-ctl.bin"} {
		b, err := os.ReadFile(filepath.Join(fixtures, name))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add(block("LG ULTRAWIDE", stereo, [3]byte{0x15, 0x07, 0x50}, [3]byte{0x7f, 0x7f, 0xff}))
	f.Fuzz(func(t *testing.T, b []byte) {
		e, err := Parse(b)
		if err != nil {
			if e != nil {
				t.Fatalf("error %v with a result", err)
			}
			return
		}
		if len(e.MonitorName) > MaxMonitorNameLen || len(e.SADs) > 15 ||
			e.LPCMChannels() > 8 || e.SpeakerAllocation > 0x7f {
			t.Fatalf("out of bounds: %+v", e)
		}
		if id := e.MonitorID(); id != "" && !monitorIDShape.MatchString(id) {
			t.Fatalf("MonitorID %q", id)
		}
		for _, w := range strings.Fields(e.Speakers()) {
			if !strings.Contains(" FL/FR LFE FC RL/RR RC FLC/FRC RLC/RRC ", " "+w+" ") { //nolint:gocritic // the set of names is the haystack
				t.Fatalf("speaker %q", w)
			}
		}
		seen := map[string]bool{}
		for _, c := range e.Passthrough() {
			if seen[c] || !slices.Contains(PassthroughNames(), c) {
				t.Fatalf("passthrough %q in %v", c, e.Passthrough())
			}
			seen[c] = true
		}
		if strings.ContainsAny(e.MonitorName, "\x00\n\r") || strings.TrimSpace(e.MonitorName) != e.MonitorName {
			return // the proc form cannot carry such a name on one line
		}
		p, err := ParseProc(renderProc(e))
		if err != nil {
			t.Fatalf("proc form of %+v: %v\n%s", e, err, renderProc(e))
		}
		want := *e
		want.BaselineLen = 0 // not printed
		for i := range want.SADs {
			if want.SADs[i].Coding == CodingExtended {
				want.SADs[i] = p.ELD.SADs[i] // numbered differently in text
			}
		}
		if diff := cmp.Diff(*p.ELD, want); diff != "" {
			t.Fatalf("binary and proc forms differ (-*p.ELD +want):\n%s", diff)
		}
	})
}

// FuzzParseProc: no input panics, and an accepted file keeps the bounds.
func FuzzParseProc(f *testing.F) {
	for _, name := range []string{"forum-intel-h97-onkyo-txnr828-eld0.0.txt",
		"forum-intel-lgtv-speakers0xffff-eld3.0.txt", "alsa-devel-fiji-tb-no-monitor-eld0.0.txt"} {
		b, err := os.ReadFile(filepath.Join(fixtures, name))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, text []byte) {
		p, err := ParseProc(text)
		if err != nil {
			return
		}
		if (p.ELD != nil) != p.ELDValid {
			t.Fatalf("valid %v with ELD %v", p.ELDValid, p.ELD)
		}
		if e := p.ELD; e != nil {
			if len(e.SADs) > 15 || e.LPCMChannels() > 8 || e.SpeakerAllocation > 0x7f ||
				len(e.MonitorName) > MaxMonitorNameLen {
				t.Fatalf("out of bounds: %+v", e)
			}
			if id := e.MonitorID(); id != "" && !monitorIDShape.MatchString(id) {
				t.Fatalf("MonitorID %q", id)
			}
		}
	})
}

// renderProc prints e the way snd_hdmi_print_eld_info does.
func renderProc(e *ELD) []byte {
	var b bytes.Buffer
	w := func(format string, args ...any) { fmt.Fprintf(&b, format+"\n", args...) }
	conn := [4]string{"HDMI", "DisplayPort", "2-reserved", "3-reserved"}
	spk := uint16(e.SpeakerAllocation)
	if spk == 0 {
		spk = 0xffff
	}
	w("monitor_present\t\t1")
	w("eld_valid\t\t1")
	w("codec_pin_nid\t\t0x7")
	w("monitor_name\t\t%s", e.MonitorName)
	w("connection_type\t\t%s", conn[e.Connection])
	w("eld_version\t\t[0x%x] CEA-861D or below", e.Version)
	w("edid_version\t\t[0x%x] no CEA EDID Timing Extension block present", e.CEAEDIDVersion)
	w("manufacture_id\t\t0x%x", e.ManufacturerCode)
	w("product_id\t\t0x%x", e.ProductCode)
	w("port_id\t\t\t0x%x", e.PortID)
	w("support_hdcp\t\t%d", b2i(e.HDCP))
	w("support_ai\t\t%d", b2i(e.AI))
	w("audio_sync_delay\t%d", e.AudioSyncDelayMs)
	w("speakers\t\t[0x%x] %s", spk, SpeakerNames(spk))
	w("sad_count\t\t%d", len(e.SADs))
	for i, d := range e.SADs {
		coding := int(d.Coding)
		if d.Coding == CodingExtended {
			coding = 14 + max(int(d.ExtendedCoding), 1)
		}
		var rates uint32
		for bit, alsaBit := range procRateBits {
			if d.RateMask&(1<<bit) != 0 {
				rates |= 1 << alsaBit
			}
		}
		w("sad%d_coding_type\t[0x%x] %s", i, coding, d.Coding)
		w("sad%d_channels\t\t%d", i, d.Channels)
		w("sad%d_rates\t\t[0x%x] %v", i, rates, d.RatesHz())
		if d.Coding == CodingLPCM {
			var bits uint32
			for bit, hdaBit := range procDepthBits {
				if d.DepthMask&(1<<bit) != 0 {
					bits |= 1 << hdaBit
				}
			}
			w("sad%d_bits\t\t[0x%x] %v", i, bits, d.BitDepths())
		}
		if d.MaxBitrate != 0 {
			w("sad%d_max_bitrate\t%d", i, d.MaxBitrate)
		}
	}
	return b.Bytes()
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}
