// SPDX-License-Identifier: Apache-2.0

package alsatest

import (
	"bytes"
	"encoding/hex"
	"flag"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/liken-sh/operators/internal/alsa"
)

var update = flag.Bool("update", false, "rewrite testdata/xps9700 from the alsa-info fixture")

const (
	xpsAlsaInfo = "../../../testdata/fixtures/alsa/alsa-utils-100-xps9700-sofsoundwire-usb-dpmst-alsa-info-excerpt.txt"
	tglAmixer   = "../../../testdata/fixtures/alsa/sof-1826-tgl-amixer-contents-hdmi-jacks-excerpt.txt"
	xpsDumps    = "../testdata/xps9700"
	// The U28E590's ELD on device 7 of the XPS 17's card 0, as alsactl
	// stored it (the same bytes as eld/testdata/samsung-u28e590-dp-eld-ctl.bin).
	u28e590ELD = "100007006714000100000000000000004c2d4d0c553238453539300907070000"
)

func importXPS(t testing.TB) AlsaInfo {
	t.Helper()
	text, err := os.ReadFile(xpsAlsaInfo)
	if err != nil {
		t.Fatal(err)
	}
	info, err := ImportAlsaInfo(text)
	if err != nil {
		t.Fatal(err)
	}
	return info
}

func control(t testing.TB, d *alsa.Dump, iface string, device uint32, name string) alsa.DumpControl {
	t.Helper()
	for _, c := range d.Controls {
		if c.Iface == iface && c.Device == device && c.Name == name && c.Index == 0 {
			return c
		}
	}
	t.Fatalf("card %d has no %s device %d %q", d.Card, iface, device, name)
	return alsa.DumpControl{}
}

// TestImportAlsaInfoXPS reads the Dell XPS 17 report to its right parse
// (fixtures README): three cards; HDMI PCMs 5, 6, 7 with jacks pcm=5/6/7;
// two ELD controls of count 0 and the U28E590's DP block on device 7; HDMI
// channel maps all 0; the Razer's read-only map 3 4; the dock's 0 0; the
// mute sentinel as dbmin; numbering gaps kept; the Razer's PCM busy.
func TestImportAlsaInfoXPS(t *testing.T) {
	info := importXPS(t)
	if len(info.Cards) != 3 {
		t.Fatalf("%d cards", len(info.Cards))
	}
	sof, razer, dock := info.Cards[0], info.Cards[1], info.Cards[2]
	if sof.Info != (alsa.DumpCardInfo{ID: "sofsoundwire", Driver: "sof-soundwire", Name: "sof-soundwire",
		LongName: "Intel Soundwire SOF", MixerName: "Intel Kabylake HDMI",
		Components: "HDA:8086280b,80860101,00100000 cfg-spk:4 cfg-amp:2 hs:rt711 spk:rt1308 mic:rt715"}) {
		t.Errorf("card 0 info %+v", sof.Info)
	}
	if razer.Info.Driver != "USB-Audio" || razer.Info.Name != "Razer Kraken X USB" || razer.Info.Components != "USB1532:0526" ||
		razer.Info.LongName != "Razer Razer Kraken X USB at usb-0000:3d:00.0-1.1, full speed" {
		t.Errorf("card 1 info %+v", razer.Info)
	}
	if dock.Info.ID != "Dock" || dock.Info.Name != "WD19 Dock" || dock.Info.LongName != "Dell-WD15-Dock" || dock.Info.Components != "USB0bda:402e" {
		t.Errorf("card 2 info %+v", dock.Info)
	}

	var pcms []string
	for _, p := range sof.PCMs {
		pcms = append(pcms, p.Stream[:1]+string(rune('0'+p.Device))+" "+p.ID+" ["+p.Name+"]")
	}
	want := []string{"p0 Jack Out (*) []", "p2 Speaker (*) []", "p5 HDMI 1 (*) []", "p6 HDMI 2 (*) []",
		"p7 HDMI 3 (*) []", "c1 Jack In (*) []", "c4 Microphone (*) []"}
	if !slices.Equal(pcms, want) {
		t.Errorf("card 0 PCMs %q", pcms)
	}
	if p := razer.PCMs[0]; p.ID != "USB Audio" || p.Name != "USB Audio" || p.Subdevices != 1 || p.SubdevicesAvail != 0 {
		t.Errorf("card 1 PCM %+v (Subdevices: 0/1, busy)", p)
	}
	if p := dock.PCMs[1]; p.Device != 1 || p.Name != "USB Audio #1" {
		t.Errorf("card 2 second PCM %+v", p)
	}

	for dev := uint32(5); dev <= 7; dev++ {
		eld := control(t, sof, "PCM", dev, "ELD")
		jack := control(t, sof, "CARD", 0, "HDMI/DP,pcm="+string(rune('0'+dev))+" Jack")
		chmap := control(t, sof, "PCM", dev, "Playback Channel Map")
		if eld.Type != "BYTES" || eld.Access != "read volatile" {
			t.Errorf("ELD %d: %+v", dev, eld)
		}
		if dev < 7 && (eld.Count != 0 || eld.Bytes != "" || jack.Values[0] != 0) {
			t.Errorf("device %d: ELD count %d %q, jack %v; want no monitor", dev, eld.Count, eld.Bytes, jack.Values)
		}
		if dev == 7 && (eld.Count != 32 || eld.Bytes != u28e590ELD || jack.Values[0] != 1) {
			t.Errorf("device 7: ELD count %d %q, jack %v; want the U28E590", eld.Count, eld.Bytes, jack.Values)
		}
		if !slices.Equal(chmap.Values, make([]int64, 8)) || chmap.Max != 36 || chmap.Access != "read write" {
			t.Errorf("device %d channel map %+v", dev, chmap)
		}
	}
	if m := control(t, razer, "PCM", 0, "Playback Channel Map"); !slices.Equal(m.Values, []int64{3, 4}) || m.Access != "read" {
		t.Errorf("Razer channel map %+v", m)
	}
	if m := control(t, dock, "PCM", 0, "Playback Channel Map"); !slices.Equal(m.Values, []int64{0, 0}) {
		t.Errorf("dock channel map %+v", m)
	}
	pga := control(t, sof, "MIXER", 0, "PGA1.0 1 Master Playback Volume")
	if pga.DBMin == nil || *pga.DBMin != alsa.DBMute || pga.DBMax == nil || *pga.DBMax != 0 || !slices.Equal(pga.Values, []int64{32, 32}) {
		t.Errorf("PGA volume %+v", pga)
	}
	con := control(t, sof, "MIXER", 0, "IEC958 Playback Con Mask")
	if b, _ := hex.DecodeString(con.Bytes); len(b) != alsa.IEC958Size || b[0] != 0x0f || b[1] != 0xff {
		t.Errorf("IEC958 mask %d bytes", len(b))
	}
	var numids []uint32
	for _, c := range sof.Controls {
		numids = append(numids, c.NumID)
	}
	if numids[0] != 27 || slices.Contains(numids, 53) || slices.Contains(numids, 54) || numids[len(numids)-1] != 55 {
		t.Errorf("card 0 numids %v: want 27.. with 53 and 54 absent", numids)
	}

	// The /dev/snd listing of the report is what the dumps' nodes are.
	root := t.TempDir()
	if err := alsa.WriteDevSnd(root, info.Cards...); err != nil {
		t.Fatal(err)
	}
	// The nodes WriteDevSnd makes: PCM and control nodes (devsnd.go's names).
	node := regexp.MustCompile(`^(pcmC[0-9]{1,3}D[0-9]{1,3}[pc]|controlC[0-9]{1,3})$`)
	var listed, written []string
	for _, n := range info.DevSnd {
		if node.MatchString(n) {
			listed = append(listed, n)
		}
	}
	entries, _ := os.ReadDir(root)
	for _, e := range entries {
		written = append(written, e.Name())
	}
	slices.Sort(listed)
	if !slices.Equal(listed, written) {
		t.Errorf("/dev/snd in the report %v, from the dumps %v", listed, written)
	}
}

// TestGoldenDumps: testdata/xps9700 holds exactly what the importer makes
// of the fixture (go test ./internal/alsa -run GoldenDumps -args -update rewrites it), and each
// file reads back to the same dump.
func TestGoldenDumps(t *testing.T) {
	for _, d := range importXPS(t).Cards {
		data, err := d.Encode()
		if err != nil {
			t.Fatal(err)
		}
		path := alsa.DumpPath(xpsDumps, d.Card)
		if *update {
			if err := os.WriteFile(path, data, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		stored, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(stored, data) {
			t.Errorf("%s differs from the import of %s (go test ./internal/alsa -run GoldenDumps -args -update)", path, filepath.Base(xpsAlsaInfo))
		}
		back, err := alsa.DecodeDump(stored)
		if err != nil || !reflect.DeepEqual(back, d) {
			t.Errorf("%s does not read back: %v", path, err)
		}
	}
}

// TestImportAmixerTGL: the TGL excerpt's right parse: three HDMI/DP jacks
// (pcm=3 on), printed out of numid order; each dBscale line belongs to the
// control above it.
func TestImportAmixerTGL(t *testing.T) {
	text, err := os.ReadFile(tglAmixer)
	if err != nil {
		t.Fatal(err)
	}
	cs, err := ImportAmixerContents(text)
	if err != nil {
		t.Fatal(err)
	}
	var order []uint32
	for _, c := range cs {
		order = append(order, c.NumID)
	}
	if !slices.Equal(order, []uint32{8, 14, 20, 7, 6, 2, 1, 5, 4, 3}) {
		t.Errorf("numid order %v", order)
	}
	byNum := map[uint32]alsa.DumpControl{}
	for _, c := range cs {
		byNum[c.NumID] = c
	}
	for numid, want := range map[uint32]alsa.DumpControl{
		8:  {NumID: 8, Iface: "CARD", Name: "HDMI/DP,pcm=3 Jack", Type: "BOOLEAN", Access: "read", Count: 1, Values: []int64{1}},
		14: {NumID: 14, Iface: "CARD", Name: "HDMI/DP,pcm=4 Jack", Type: "BOOLEAN", Access: "read", Count: 1, Values: []int64{0}},
		2:  {NumID: 2, Iface: "MIXER", Name: "Master Playback Switch", Type: "BOOLEAN", Access: "read write", Count: 2, Values: []int64{1, 1}},
		1: {NumID: 1, Iface: "MIXER", Name: "Master Playback Volume", Type: "INTEGER", Access: "read write tlv_read", Count: 2,
			Max: 87, Values: []int64{75, 75}, TLV: []uint32{1, 8, uint32(0xffffe683), 75}}, // -6525 in two's complement
		5: {NumID: 5, Iface: "MIXER", Name: "Mic Boost Volume", Type: "INTEGER", Access: "read write tlv_read", Count: 2,
			Max: 3, Values: []int64{1, 1}, TLV: []uint32{1, 8, 0, 1000}},
		3: {NumID: 3, Iface: "MIXER", Name: "Capture Volume", Type: "INTEGER", Access: "read write tlv_read", Count: 2,
			Max: 63, Values: []int64{63, 63}, TLV: []uint32{1, 8, uint32(0xfffff943), 75}},
	} {
		if got := byNum[numid]; !reflect.DeepEqual(got, want) {
			t.Errorf("numid %d:\n got %+v\nwant %+v", numid, got, want)
		}
	}
}

func TestImportRejects(t *testing.T) {
	xps, err := os.ReadFile(xpsAlsaInfo)
	if err != nil {
		t.Fatal(err)
	}
	edit := func(old, new string) []byte {
		if !bytes.Contains(xps, []byte(old)) {
			t.Fatalf("fixture has no %q", old)
		}
		return bytes.Replace(xps, []byte(old), []byte(new), 1)
	}
	for _, tc := range []struct {
		name string
		text []byte
		says string
	}{
		{"no card list", []byte("!!Alsactl output\n!!--------------\nstate.X {\n}\n"), "no \"Soundcards recognised by ALSA\" section"},
		{"unknown state", edit("state.Dock {", "state.Other {"), `card id "Other"`},
		{"unbalanced", edit("state.Dock {\n", "state.Dock {\n{\n"), "'{' with no key"},
		{"bad type", edit("type BYTES\n\t\t\tcount 32", "type BLOB\n\t\t\tcount 32"), `unknown element type "BLOB"`},
		{"ELD count", edit("count 32\n", "count 31\n"), "32 bytes for a BYTES element that holds 31"},
		{"value count", edit("value.1 4\n", ""), "1 values for count 2"},
		{"bad range", edit("range '0 - 36'", "range 'zero to 36'"), "comment.range"},
		{"PCM of a missing card", edit("card 2: Dock [WD19 Dock], device 1:", "card 5: Dock [WD19 Dock], device 1:"), "card 5 is not in the card list"},
		{"duplicate numid", edit("control.28 {", "control.27 {"), "numid 27 is used"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ImportAlsaInfo(tc.text)
			if err == nil || !strings.Contains(err.Error(), tc.says) {
				t.Fatalf("ImportAlsaInfo: %v; want an error saying %q", err, tc.says)
			}
		})
	}
	for _, tc := range []struct {
		text, says string
	}{
		{"  ; type=BOOLEAN,access=r-------,values=1\n", "before any numid= line"},
		{"numid=1,iface=MIXER,name='X\n", "unterminated quote"},
		{"numid=1,iface=MIXER,name='X'\n  ; type=BOOLEAN,access=rx------,values=1\n", "column 2"},
		{"numid=1,iface=MIXER,name='X'\n  ; type=INTEGER,access=rw------,values=1\n  | dBminmax-min=-1.00dB,max=0.00dB\n", "dBscale only"},
		{"numid=1,iface=MIXER,name='X'\n  : values=1\n", "values before the type line"},
		{"numid=1,iface=MIXER,name='X'\n  ? what\n", "not part of amixer's contents format"},
	} {
		if _, err := ImportAmixerContents([]byte(tc.text)); err == nil || !strings.Contains(err.Error(), tc.says) {
			t.Errorf("ImportAmixerContents(%q): %v; want %q", tc.text, err, tc.says)
		}
	}
}

// TestImportAlsactlState: escapes, enumerated items by name, a TLV in the
// comment, the default iface, and octal escapes in names.
func TestImportAlsactlState(t *testing.T) {
	states, err := ImportAlsactlState(`state.PCH {
	control.1 {
		iface CARD
		name 'Input Source'
		value 'Front Mic'
		comment {
			access 'read write'
			type ENUMERATED
			count 1
			item.0 Mic
			item.1 'Front Mic'
		}
	}
	control.2 {
		name 'Master Playback Volume'
		value 74
		comment {
			access 'read write'
			type INTEGER
			count 1
			range '0 - 87 (step 1)'
			tlv '0100000008000000c0e3ffff64000000'
		}
	}
	control.3 {
		name "it\'s \101 \"test\""
		value true
		comment { access read; type BOOLEAN; count 1 }
	}
}
`)
	if err != nil {
		t.Fatal(err)
	}
	want := []alsa.DumpControl{
		{NumID: 1, Iface: "CARD", Name: "Input Source", Type: "ENUMERATED", Access: "read write", Count: 1,
			Items: []string{"Mic", "Front Mic"}, Values: []int64{1}},
		{NumID: 2, Iface: "MIXER", Name: "Master Playback Volume", Type: "INTEGER", Access: "read write tlv_read", Count: 1,
			Max: 87, Step: 1, Values: []int64{74}, TLV: []uint32{1, 8, 0xffffe3c0, 100}},
		{NumID: 3, Iface: "MIXER", Name: `it's A "test"`, Type: "BOOLEAN", Access: "read", Count: 1, Values: []int64{1}},
	}
	if diff := cmp.Diff(states["PCH"], want); diff != "" {
		t.Errorf("got (-states[\"PCH\"] +want):\n%s", diff)
	}
	d := &alsa.Dump{Info: alsa.DumpCardInfo{ID: "PCH", Driver: "HDA-Intel", Name: "HDA Intel PCH"}, Controls: states["PCH"]}
	if err := d.Validate(); err != nil {
		t.Error(err)
	}
}
