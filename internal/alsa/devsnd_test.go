// SPDX-License-Identifier: Apache-2.0

package alsa

import (
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
)

func TestScanDevSnd(t *testing.T) {
	root := t.TempDir()
	for _, name := range []string{"controlC0", "controlC1", "pcmC1D0p", "pcmC0D7p", "pcmC0D1c", "pcmC0D0p", "pcmC0D0c",
		"pcmC10D3p", "hwC0D2", "seq", "timer", "pcmC0D0x", "controlCx", "pcmC0D0pp"} {
		if err := os.WriteFile(filepath.Join(root, name), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.MkdirAll(filepath.Join(root, "by-path", "pcmC9D9p"), 0o755); err != nil {
		t.Fatal(err)
	}
	got, err := ScanDevSnd(root)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, p := range got.PCMs {
		names = append(names, filepath.Base(p.Path))
		if p.Path != PCMPath(root, p.Card, p.Device, p.Stream) {
			t.Errorf("%+v: path", p)
		}
	}
	if !slices.Equal(names, []string{"pcmC0D0p", "pcmC0D0c", "pcmC0D1c", "pcmC0D7p", "pcmC1D0p", "pcmC10D3p"}) {
		t.Errorf("PCMs %v", names)
	}
	if !slices.Equal(got.Controls, []int{0, 1}) || !slices.Equal(got.Cards(), []int{0, 1, 10}) {
		t.Errorf("controls %v cards %v", got.Controls, got.Cards())
	}
	if pb := got.Playback(0); len(pb) != 2 || pb[0].Device != 0 || pb[1].Device != 7 {
		t.Errorf("playback of card 0: %+v", pb)
	}

	// No /dev/snd: no outputs, no error. A file in its place: an error.
	none, err := ScanDevSnd(filepath.Join(root, "absent"))
	if err != nil || len(none.PCMs) != 0 || len(none.Controls) != 0 {
		t.Errorf("absent root: %+v %v", none, err)
	}
	if _, err := ScanDevSnd(filepath.Join(root, "seq")); err == nil || !strings.Contains(err.Error(), "seq") {
		t.Errorf("root is a file: %v", err)
	}
}

func TestParseEvents(t *testing.T) {
	want := []Event{
		{Type: EventElem, Mask: EventValue, ID: ElemID{NumID: 1, Iface: IfaceMixer, Name: "Master Volume"}},
		{Type: EventElem, Mask: EventRemove, ID: ElemID{NumID: 300, Iface: IfacePCM, Device: 3, Subdevice: 1,
			Name: strings.Repeat("n", 43), Index: 2}},
	}
	var buf []byte
	for _, e := range want {
		buf = appendEvent(buf, e)
	}
	got, err := ParseEvents(buf)
	if err != nil || !reflect.DeepEqual(got, want) {
		t.Fatalf("ParseEvents = %+v, %v", got, err)
	}
	if !got[1].Removed() || got[0].Removed() || got[1].Mask.String() != "remove" ||
		(EventValue|EventInfo).String() != "value|info" {
		t.Error("mask reading")
	}
	if _, err := ParseEvents(buf[:71]); err == nil || !strings.Contains(err.Error(), "71 bytes") {
		t.Errorf("short record: %v", err)
	}
	if got, err := ParseEvents(nil); err != nil || len(got) != 0 {
		t.Errorf("empty read: %v %v", got, err)
	}
}

func TestNamesRoundTrip(t *testing.T) {
	for i := IfaceCard; i <= IfaceSequencer; i++ {
		if back, err := ParseIface(i.String()); err != nil || back != i {
			t.Errorf("iface %d", i)
		}
	}
	for ty := TypeBoolean; ty <= TypeInteger64; ty++ {
		if back, err := ParseElemType(ty.String()); err != nil || back != ty {
			t.Errorf("type %d", ty)
		}
	}
	all := AccessRead | AccessWrite | AccessVolatile | AccessTLVRead | AccessTLVWrite | AccessTLVCommand |
		AccessInactive | AccessLock | AccessOwner | AccessTLVCallback | AccessUser
	if back, err := ParseAccess(all.String()); err != nil || back != all {
		t.Errorf("access %q -> %v %v", all.String(), back, err)
	}
	if a, err := ParseAccess("read lock"); err != nil || a != AccessRead|AccessLock {
		t.Errorf("alsactl's lock: %v %v", a, err)
	}
	for _, bad := range []string{"RW", "reads"} {
		if _, err := ParseAccess(bad); err == nil {
			t.Errorf("ParseAccess(%q) accepted", bad)
		}
	}
	if _, err := ParseElemType("NONE"); err == nil {
		t.Error("NONE accepted")
	}
	id := ElemID{NumID: 37, Iface: IfacePCM, Device: 5, Name: "ELD"}
	if id.String() != "numid=37,iface=PCM,device=5,name='ELD'" {
		t.Errorf("%s", id)
	}
}

func TestElemPCMDevice(t *testing.T) {
	for _, tc := range []struct {
		id   ElemID
		dev  int
		isIt bool
	}{
		{ELDElemID(7), 7, true},
		{ChannelMapElemID(3, 0, Playback), 3, true},
		{ElemID{Iface: IfaceCard, Name: "HDMI/DP,pcm=5 Jack"}, 5, true},
		{ElemID{Iface: IfaceCard, Name: "Headphone Jack"}, 0, false},
		{ElemID{Iface: IfaceMixer, Name: "HDMI/DP,pcm=5 Jack"}, 0, false},
		{ElemID{Iface: IfaceMixer, Name: "Master Playback Volume"}, 0, false},
	} {
		if dev, ok := tc.id.PCMDevice(); dev != tc.dev || ok != tc.isIt {
			t.Errorf("%s: %d %v", tc.id, dev, ok)
		}
	}
}
