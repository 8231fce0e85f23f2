// SPDX-License-Identifier: Apache-2.0

package alsa

import (
	"context"
	"errors"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/liken-sh/operators/internal/alsa/eld"
	"github.com/liken-sh/operators/test/poll"
	"golang.org/x/sys/unix"
)

// xpsDumps holds the XPS 17's three cards as recorded dumps.
const xpsDumps = "testdata/xps9700"

func xpsCard(t testing.TB, card int) *Recorded {
	t.Helper()
	d, err := ReadDump(DumpPath(xpsDumps, card))
	if err != nil {
		t.Fatal(err)
	}
	r, err := NewRecorded(d)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// readEvents waits for the next batch of events, bounded.
func readEvents(t testing.TB, c Control) []Event {
	t.Helper()
	type res struct {
		evs []Event
		err error
	}
	ch := make(chan res, 1)
	go func() { evs, err := c.ReadEvents(); ch <- res{evs, err} }()
	select {
	case r := <-ch:
		if r.err != nil {
			t.Fatal(r.err)
		}
		return r.evs
	case <-time.After(30 * time.Second):
		t.Fatal("no event within 30 s")
		return nil
	}
}

// TestReadCardXPS serves the XPS 17's sof-soundwire card from its recorded
// dump and reads it as declare and the operator do.
func TestReadCardXPS(t *testing.T) {
	c := xpsCard(t, 0).Open()
	defer c.Close()
	card, err := ReadCard(c)
	if err != nil {
		t.Fatal(err)
	}
	if card.Info.Card != 0 || card.Info.ID != "sofsoundwire" || card.Info.MixerName != "Intel Kabylake HDMI" {
		t.Errorf("info %+v", card.Info)
	}
	var got []string
	for _, p := range card.PCMs {
		got = append(got, p.String()+" "+p.Info.ID)
	}
	want := []string{"card 0 PCM 0 playback Jack Out (*)", "card 0 PCM 1 capture Jack In (*)", "card 0 PCM 2 playback Speaker (*)",
		"card 0 PCM 4 capture Microphone (*)", "card 0 PCM 5 playback HDMI 1 (*)", "card 0 PCM 6 playback HDMI 2 (*)",
		"card 0 PCM 7 playback HDMI 3 (*)"}
	if !slices.Equal(got, want) {
		t.Errorf("PCMs\n got %q\nwant %q", got, want)
	}
	ident := CardIdentity{Card: 0, Bus: "pci", Location: "0000:00:1f.3", DeviceBus: "platform", Driver: "sof_sdw"}
	for _, tc := range []struct {
		device       int
		hasELD       bool
		monitor      string
		conn         string
		jack         string // "" none, "on", "off"
		layout       string
		chmapChannel int
	}{
		{0, false, "", ConnAnalog, "", "", 0},
		{2, false, "", ConnAnalog, "", "", 0},
		{5, true, "", "", "off", "", 8},
		{6, true, "", "", "off", "", 8},
		{7, true, "sam-0c4d-u28e590", ConnDisplayPort, "on", "FL,FR", 8},
	} {
		p := card.PCM(tc.device, Playback)
		if p == nil {
			t.Fatalf("no PCM %d", tc.device)
		}
		if p.HasELD != tc.hasELD || p.ELD.Valid() != (tc.monitor != "") {
			t.Errorf("PCM %d: HasELD %v ELD %+v", tc.device, p.HasELD, p.ELD)
		}
		if tc.hasELD && tc.monitor == "" && (!errors.Is(p.ELD.Err, eld.ErrEmpty) || len(p.ELD.Raw) != 0) {
			t.Errorf("PCM %d: the count-0 ELD gives %v", tc.device, p.ELD.Err)
		}
		if tc.monitor != "" && (p.ELD.ELD.MonitorID() != tc.monitor || p.ELD.ELD.MonitorName != "U28E590") {
			t.Errorf("PCM %d: monitor %q", tc.device, p.ELD.ELD.MonitorID())
		}
		if got := ConnectionType(*p, card.Info, ident); got != tc.conn {
			t.Errorf("PCM %d: connection type %q, want %q", tc.device, got, tc.conn)
		}
		jack := ""
		if p.Jack != nil {
			jack = map[bool]string{true: "on", false: "off"}[p.Jack.Plugged]
		}
		if jack != tc.jack {
			t.Errorf("PCM %d: jack %q, want %q", tc.device, jack, tc.jack)
		}
		if l := ChooseLayout(*p, ConnectionType(*p, card.Info, ident)); l.Position() != tc.layout {
			t.Errorf("PCM %d: layout %+v", tc.device, l)
		}
		if len(p.ChannelMap) != tc.chmapChannel || slices.ContainsFunc(p.ChannelMap, func(v uint32) bool { return v != 0 }) {
			t.Errorf("PCM %d: channel map %v", tc.device, p.ChannelMap)
		}
	}
	var jacks []string
	for _, j := range card.Jacks {
		jacks = append(jacks, j.ID.Name)
	}
	if !slices.Equal(jacks, []string{"Headphone Jack", "Headset Mic Jack", "HDMI/DP,pcm=5 Jack", "HDMI/DP,pcm=6 Jack", "HDMI/DP,pcm=7 Jack"}) {
		t.Errorf("jacks %q", jacks)
	}
	if card.Jacks[0].PCM != -1 || card.Jacks[2].PCM != 5 {
		t.Errorf("jack PCMs %+v", card.Jacks)
	}
}

// TestRecordedEvents: a monitor arriving on device 5 and leaving device 7,
// a jack flip and a mixer write reach a subscribed handle as the kernel
// sends them, and the next ReadCard sees the new state.
func TestRecordedEvents(t *testing.T) {
	r := xpsCard(t, 0)
	sub := r.Open()
	defer sub.Close()
	other := r.Open()
	defer other.Close()
	if _, err := sub.ReadEvents(); !errors.Is(err, unix.EBADFD) {
		t.Fatalf("ReadEvents before Subscribe: %v; want EBADFD", err)
	}
	if err := sub.Subscribe(); err != nil {
		t.Fatal(err)
	}

	dell, err := os.ReadFile("../../testdata/fixtures/eld/alsa-ucm-conf-248-dell-g2422hs-eld-ctl.bin")
	if err != nil {
		t.Fatal(err)
	}
	if err := r.SetELD(5, dell); err != nil {
		t.Fatal(err)
	}
	if err := r.Update(ElemID{Iface: IfaceCard, Name: "HDMI/DP,pcm=5 Jack"}, Value{Type: TypeBoolean, Ints: []int64{1}}); err != nil {
		t.Fatal(err)
	}
	evs := readEvents(t, sub)
	want := []Event{
		{Type: EventElem, Mask: EventValue | EventInfo, ID: ElemID{NumID: 37, Iface: IfacePCM, Device: 5, Name: "ELD"}},
		{Type: EventElem, Mask: EventValue, ID: ElemID{NumID: 32, Iface: IfaceCard, Name: "HDMI/DP,pcm=5 Jack"}},
	}
	if diff := cmp.Diff(evs, want); diff != "" {
		t.Fatalf("events (-evs +want):\n%s", diff)
	}
	if !evs[0].ID.IsELD() || evs[1].ID.IsELD() {
		t.Error("IsELD")
	}
	// The same block again changes nothing and sends nothing; the monitor
	// on 7 leaving does.
	if err := r.SetELD(5, dell); err != nil {
		t.Fatal(err)
	}
	if err := r.SetELD(7, nil); err != nil {
		t.Fatal(err)
	}
	if evs := readEvents(t, sub); len(evs) != 1 || evs[0].ID.NumID != 49 || evs[0].Mask != EventValue|EventInfo {
		t.Fatalf("after the U28E590 left: %+v", evs)
	}
	card, err := ReadCard(other)
	if err != nil {
		t.Fatal(err)
	}
	if p := card.PCM(5, Playback); p.ELD.ELD.MonitorID() != "del-a1e5-dell-g2422hs" || !p.Jack.Plugged {
		t.Errorf("PCM 5 after the Dell arrived: %+v", p.ELD)
	}
	if p := card.PCM(7, Playback); p.ELD.Valid() || !errors.Is(p.ELD.Err, eld.ErrEmpty) {
		t.Errorf("PCM 7 after the monitor left: %+v", p.ELD)
	}
	if info, _ := other.ElemInfo(ELDElemID(5)); info.Count != 36 {
		t.Errorf("ELD 5 count %d", info.Count)
	}

	// A write through another handle notifies the subscriber; writing the
	// same value again does not.
	hp := ElemID{Iface: IfaceMixer, Name: "Headphone Switch"}
	for range 2 {
		if err := other.Write(hp, Value{Type: TypeBoolean, Ints: []int64{1}}); err != nil {
			t.Fatal(err)
		}
	}
	if err := other.Write(ElemID{NumID: 55}, Value{Type: TypeInteger, Ints: []int64{20, 21}}); err != nil {
		t.Fatal(err)
	}
	evs = readEvents(t, sub)
	if len(evs) != 2 || evs[0].ID.Name != "Headphone Switch" || evs[1].ID.Name != "PGA1.0 1 Master Playback Volume" {
		t.Fatalf("after the writes: %+v", evs)
	}
	if v, _ := sub.Read(ElemID{NumID: 55}); !slices.Equal(v.Ints, []int64{20, 21}) {
		t.Errorf("volume reads %v", v.Ints)
	}

	// Close ends a blocked read.
	done := make(chan error, 1)
	go func() { _, err := sub.ReadEvents(); done <- err }()
	time.Sleep(10 * time.Millisecond)
	sub.Close()
	select {
	case err := <-done:
		if !errors.Is(err, os.ErrClosed) {
			t.Errorf("ReadEvents after Close: %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("Close did not end ReadEvents")
	}
	if _, err := sub.CardInfo(); !errors.Is(err, os.ErrClosed) {
		t.Errorf("CardInfo after Close: %v", err)
	}
}

// TestRecordedErrors: the errnos the kernel gives, through either lookup.
func TestRecordedErrors(t *testing.T) {
	c := xpsCard(t, 0).Open()
	defer c.Close()
	for _, tc := range []struct {
		name  string
		err   error
		errno unix.Errno
	}{
		{"unknown element", func() error { _, err := c.Read(ElemID{Iface: IfaceMixer, Name: "Nope"}); return err }(), unix.ENOENT},
		{"unknown numid", func() error { _, err := c.ElemInfo(ElemID{NumID: 54}); return err }(), unix.ENOENT},
		{"write a jack", c.Write(ElemID{NumID: 44}, Value{Type: TypeBoolean, Ints: []int64{0}}), unix.EPERM},
		{"write out of range", c.Write(ElemID{NumID: 55}, Value{Type: TypeInteger, Ints: []int64{33, 0}}), unix.EINVAL},
		{"TLV of an element with none", func() error { _, err := c.TLV(ElemID{NumID: 55}); return err }(), unix.ENXIO},
		{"capture of a playback PCM", func() error { _, err := c.PCMInfo(5, 0, Capture); return err }(), unix.ENOENT},
		{"no PCM 3", func() error { _, err := c.PCMInfo(3, 0, Playback); return err }(), unix.ENXIO},
		{"subdevice 1", func() error { _, err := c.PCMInfo(5, 1, Playback); return err }(), unix.ENXIO},
	} {
		if !errors.Is(tc.err, tc.errno) {
			t.Errorf("%s: %v; want %v", tc.name, tc.err, tc.errno)
		}
	}
	if err := c.Write(ElemID{NumID: 27}, Value{Type: TypeInteger, Ints: []int64{1}}); err == nil || !strings.Contains(err.Error(), "INTEGER for a BOOLEAN") {
		t.Errorf("wrong type: %v", err)
	}
	if err := c.Write(ElemID{NumID: 55}, Value{Type: TypeInteger, Ints: []int64{1}}); err == nil || !strings.Contains(err.Error(), "1 values for a INTEGER element that holds 2") {
		t.Errorf("wrong count: %v", err)
	}
	var devs []int
	for d := -1; ; {
		n, err := c.NextPCMDevice(d)
		if err != nil {
			t.Fatal(err)
		}
		if n < 0 {
			break
		}
		devs, d = append(devs, n), n
	}
	if !slices.Equal(devs, []int{0, 1, 2, 4, 5, 6, 7}) {
		t.Errorf("PCM devices %v", devs)
	}
}

// TestDumpDirWatch: rewriting a card's file is hardware changing: the
// subscribed handle gets the ELD's events, a new element's ADD and a gone
// element's REMOVE.
func TestDumpDirWatch(t *testing.T) {
	dir := t.TempDir()
	d, err := ReadDump(DumpPath(xpsDumps, 0))
	if err != nil {
		t.Fatal(err)
	}
	if err := WriteDump(dir, d); err != nil {
		t.Fatal(err)
	}
	dd := NewDumpDir(dir)
	c, err := dd.Open(0)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := c.Subscribe(); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	watchErr := make(chan error, 1)
	reloadErrs := make(chan error, 1000)
	go func() { watchErr <- dd.Watch(ctx, func(err error) { reloadErrs <- err }) }()
	// A write before the watch is set up passes unseen. A broken file is
	// reported and changes nothing, so one is written until it is
	// reported: then the watch is up.
	broken := []byte(`{"card": 0, "bogus": 1}`)
	poll.Until(t, "a broken card file reported by the watch", 30*time.Second, func() bool {
		if err := os.WriteFile(DumpPath(dir, 0), broken, 0o644); err != nil {
			t.Fatal(err)
		}
		select {
		case <-reloadErrs:
			return true
		default:
			return false
		}
	})
	if _, err := c.ElemInfo(ElemID{NumID: 30}); err != nil {
		t.Errorf("the broken file changed the card: %v", err)
	}

	// The U28E590 leaves device 7; Headset Mic Jack (numid 30) goes; a new
	// element 60 arrives.
	for i := range d.Controls {
		if d.Controls[i].NumID == 49 {
			d.Controls[i].Count, d.Controls[i].Bytes = 0, ""
		}
	}
	d.Controls = slices.DeleteFunc(d.Controls, func(c DumpControl) bool { return c.NumID == 30 })
	d.Controls = append(d.Controls, DumpControl{NumID: 60, Iface: "CARD", Name: "Line Out Phantom Jack", Type: "BOOLEAN",
		Access: "read", Count: 1, Values: []int64{1}})
	if err := WriteDump(dir, d); err != nil {
		t.Fatal(err)
	}
	var got []Event
	for len(got) < 3 {
		got = append(got, readEvents(t, c)...)
	}
	slices.SortFunc(got, func(a, b Event) int { return int(a.ID.NumID) - int(b.ID.NumID) })
	if len(got) != 3 || got[0].ID.NumID != 30 || !got[0].Removed() || got[1].ID.NumID != 49 || got[1].Mask != EventValue|EventInfo ||
		got[2].ID.NumID != 60 || got[2].Mask != EventAdd {
		t.Errorf("events %+v", got)
	}
	card, err := ReadCard(c)
	if err != nil {
		t.Fatal(err)
	}
	if card.PCM(7, Playback).ELD.Valid() {
		t.Error("device 7 still has a monitor")
	}

	// A broken file is reported and changes nothing.
	if err := os.WriteFile(DumpPath(dir, 0), broken, 0o644); err != nil {
		t.Fatal(err)
	}
	// An in-place write may be seen half done (truncated: EOF) first.
	for saw := false; !saw; {
		select {
		case err := <-reloadErrs:
			saw = strings.Contains(err.Error(), `unknown field "bogus"`)
		case <-time.After(30 * time.Second):
			t.Fatal("no reload error naming the broken field")
		}
	}
	if _, err := c.ElemInfo(ElemID{NumID: 60}); err != nil {
		t.Errorf("the broken file changed the card: %v", err)
	}
	cancel()
	if err := <-watchErr; err != nil {
		t.Errorf("Watch: %v", err)
	}

	if _, err := dd.Open(4); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("Open(4): %v", err)
	}
	d.Card = 3
	if err := os.WriteFile(DumpPath(dir, 4), mustEncode(t, d), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := dd.Open(4); err == nil || !strings.Contains(err.Error(), "holds card 3") {
		t.Errorf("card4.json holding card 3: %v", err)
	}
}

func mustEncode(t testing.TB, d *Dump) []byte {
	b, err := d.Encode()
	if err != nil {
		t.Fatal(err)
	}
	return b
}
