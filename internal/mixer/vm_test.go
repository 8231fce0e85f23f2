// SPDX-License-Identifier: Apache-2.0

//go:build vmtier

package mixer

import (
	"strconv"
	"strings"
	"testing"

	"github.com/liken-sh/operators/internal/alsa"
	"github.com/liken-sh/operators/test/vm/guest"
)

// The VM tier's test (test/vm): Read, the attach rule, Parse and Write on
// the real kernel's cards. snd-dummy (card 0) has dB-scaled volumes of
// -50..100 from -45 dB in 0.3 dB steps (sound/drivers/dummy.c); the HDA
// card (card 2, qemu's hda-duplex codec under snd-hda-codec-generic) has
// amps whose TLV the driver makes through a TLV callback.
func TestVMMixerRealCards(t *testing.T) {
	if err := guest.LoadSoundCards(); err != nil {
		t.Fatal(err)
	}
	for card := range guest.SoundCards {
		c, err := alsa.DevOpener{}.Open(card)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		m, err := Read(c)
		if err != nil {
			t.Fatalf("card %d: %v", card, err)
		}
		if m.Err != nil {
			t.Errorf("card %d: %v", card, m.Err)
		}
		for _, ctl := range m.Controls {
			t.Logf("card %d: %s %s %d..%d step %d dB %q..%q items %q channels %d = %q (%s)", card, nameIndex(ctl.ID), ctl.Kind(),
				ctl.Min, ctl.Max, ctl.Step, ctl.MinDecibels(), ctl.MaxDecibels(), ctl.Items, ctl.Channels, ctl.Format(), SideOf(ctl.ID, m.HDMISlots))
		}
	}

	dummy, err := alsa.DevOpener{}.Open(0)
	if err != nil {
		t.Fatal(err)
	}
	defer dummy.Close()
	m, err := Read(dummy)
	if err != nil {
		t.Fatal(err)
	}
	master, ok := Find(m.Sink(0), "Master Volume")
	if !ok {
		t.Fatalf("snd-dummy sink controls %q, want Master Volume", keys(m.Sink(0)))
	}
	if master.Kind() != "integer" || master.Min != -50 || master.Max != 100 || master.MinDecibels() != "-45" || master.MaxDecibels() != "0" {
		t.Errorf("Master Volume: %d..%d, dB %q..%q; want -50..100, -45..0", master.Min, master.Max, master.MinDecibels(), master.MaxDecibels())
	}
	if len(m.Source()) == 0 || !strings.Contains(m.Source()[0].Key, "Capture") {
		t.Errorf("snd-dummy sources %q", keys(m.Source()))
	}
	roundTrip(t, dummy, master, "-20", "-20")
	roundTrip(t, dummy, master, "10,-30", "10,-30")
	if _, err := master.Parse("101"); err == nil || err.Error() != "Master Volume: 101 is past the maximum 100" {
		t.Errorf("Parse 101: %v", err)
	}

	hda, err := alsa.DevOpener{}.Open(2)
	if err != nil {
		t.Fatal(err)
	}
	defer hda.Close()
	m, err = Read(hda)
	if err != nil {
		t.Fatal(err)
	}
	var vol *Control
	for _, c := range m.Sink(0) {
		if c.Kind() == "integer" && strings.Contains(c.Key, "Playback Volume") && c.Decibels != nil {
			vol = &c
			break
		}
	}
	if vol == nil {
		t.Fatalf("HDA sink controls %q: no playback volume with a dB range", keys(m.Sink(0)))
	}
	if len(m.Source()) == 0 {
		t.Errorf("HDA: no source controls")
	}
	old := vol.Format()
	low := strconv.FormatInt(vol.Min, 10)
	roundTrip(t, hda, *vol, low, low)
	roundTrip(t, hda, *vol, old, old)
}

// roundTrip writes in and reads the control back as want.
func roundTrip(t *testing.T, c alsa.Control, ctl Control, in, want string) {
	t.Helper()
	v, err := ctl.Parse(in)
	if err != nil {
		t.Fatal(err)
	}
	if err := Write(c, ctl, v); err != nil {
		t.Fatal(err)
	}
	m, err := Read(c)
	if err != nil {
		t.Fatal(err)
	}
	for _, got := range m.Controls {
		if got.ID.NumID == ctl.ID.NumID {
			if got.Format() != want {
				t.Errorf("%s: wrote %q, reads back %q", ctl, in, got.Format())
			}
			return
		}
	}
	t.Errorf("%s is gone after a write", ctl)
}
