// SPDX-License-Identifier: Apache-2.0

package alsa_test

import (
	"errors"
	"fmt"
	"os"
	"slices"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/liken-sh/operators/internal/alsa"
	"github.com/liken-sh/operators/internal/alsa/alsatest"
)

// tglAmixer is amixer's contents of a Tiger Lake laptop's SOF card.
const tglAmixer = "../../testdata/fixtures/alsa/sof-1826-tgl-amixer-contents-hdmi-jacks-excerpt.txt"

// TestRecordedTLVAndEnums serves the TGL amixer excerpt: dB scales through
// TLV_READ, jacks, and an enumerated element's items through ELEM_INFO.
func TestRecordedTLVAndEnums(t *testing.T) {
	text, err := os.ReadFile(tglAmixer)
	if err != nil {
		t.Fatal(err)
	}
	controls, err := alsatest.ImportAmixerContents(text)
	if err != nil {
		t.Fatal(err)
	}
	controls = append(controls, alsa.DumpControl{NumID: 30, Iface: "MIXER", Name: "Input Source", Type: "ENUMERATED",
		Access: "read write", Count: 1, Items: []string{"Mic", "Front Mic", "Line"}, Values: []int64{2}})
	r, err := alsa.NewRecorded(&alsa.Dump{Card: 1, Info: alsa.DumpCardInfo{ID: "sofhdadsp", Driver: "sof-hda-dsp", Name: "sof-hda-dsp"}, Controls: controls})
	if err != nil {
		t.Fatal(err)
	}
	c := r.Open()
	defer c.Close()
	ids, err := c.Elements()
	if err != nil {
		t.Fatal(err)
	}
	jacks, err := alsa.ReadJacks(c, ids)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, j := range jacks {
		got = append(got, fmt.Sprintf("%s=%v@%d", j.ID.Name, j.Plugged, j.PCM))
	}
	if !slices.Equal(got, []string{"Mic Jack=true@-1", "Headphone Jack=true@-1", "HDMI/DP,pcm=3 Jack=true@3",
		"HDMI/DP,pcm=4 Jack=false@4", "HDMI/DP,pcm=5 Jack=false@5"}) {
		t.Errorf("jacks in numid order: %q", got)
	}
	tlv, err := c.TLV(alsa.ElemID{Iface: alsa.IfaceMixer, Name: "Master Playback Volume"})
	if err != nil || !slices.Equal(tlv, []uint32{1, 8, uint32(0xffffe683), 75}) || int32(tlv[2]) != -6525 {
		t.Errorf("Master TLV %v %v", tlv, err)
	}
	info, err := c.ElemInfo(alsa.ElemID{NumID: 30})
	if err != nil || !slices.Equal(info.Items, []string{"Mic", "Front Mic", "Line"}) || info.Type != alsa.TypeEnumerated {
		t.Errorf("enum info %+v %v", info, err)
	}
	if err := c.Write(alsa.ElemID{NumID: 30}, alsa.Value{Type: alsa.TypeEnumerated, Ints: []int64{3}}); !errors.Is(err, unix.EINVAL) {
		t.Errorf("item 3 of 3: %v", err)
	}
	if info, _ := c.ElemInfo(alsa.ElemID{NumID: 1}); info.Min != 0 || info.Max != 87 || info.Access != alsa.AccessRead|alsa.AccessWrite|alsa.AccessTLVRead {
		t.Errorf("volume info %+v", info)
	}
}
