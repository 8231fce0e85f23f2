// SPDX-License-Identifier: Apache-2.0

//go:build vmtier

package alsa_test

import (
	"strings"
	"testing"

	"github.com/liken-sh/operators/internal/alsa"
	"github.com/liken-sh/operators/internal/alsa/alsatest"
	"github.com/liken-sh/operators/test/vm/guest"
)

// The VM tier's test (test/vm): every ioctl of the control interface on
// three real cards of a real kernel, snd-dummy, snd-aloop, and
// snd-hda-intel on qemu's intel-hda with an hda-duplex codec.
func TestVMExerciseDevSnd(t *testing.T) {
	if err := guest.LoadSoundCards(); err != nil {
		t.Fatal(err)
	}
	reports, err := alsatest.ExerciseDevSnd(alsa.DevSndRoot, "/sys")
	for _, r := range reports {
		for _, line := range r.Log {
			t.Log(line)
		}
	}
	if err != nil {
		t.Fatal(err)
	}
	// The drivers' names in CARD_INFO, in load order; TLV says whether the
	// card has a dB-scaled volume (Loopback has none).
	want := []struct {
		driver string
		tlv    bool
	}{{"Dummy", true}, {"Loopback", false}, {"HDA-Intel", true}}
	if len(reports) != len(want) {
		t.Fatalf("ExerciseDevSnd exercised %d cards, want %d", len(reports), len(want))
	}
	for i, r := range reports {
		w := want[i]
		if r.Card.Card != i || r.Card.Driver != w.driver {
			t.Errorf("card %d: CARD_INFO says card %d driver %q, want driver %q", i, r.Card.Card, r.Card.Driver, w.driver)
		}
		if (r.TLVs > 0) != w.tlv {
			t.Errorf("card %d (%s): %d TLVs read", i, r.Card.Driver, r.TLVs)
		}
		if len(r.PCMs) == 0 || r.Read == 0 {
			t.Errorf("card %d (%s): %d PCM streams, %d elements read", i, r.Card.Driver, len(r.PCMs), r.Read)
		}
		if r.Event.Mask&alsa.EventValue == 0 || r.Event.ID.NumID != r.Wrote.NumID || r.Event.ID.Name != r.Wrote.Name {
			t.Errorf("card %d (%s): wrote %s, event %s on %s", i, r.Card.Driver, r.Wrote, r.Event.Mask, r.Event.ID)
		}
	}
	// qemu's hda-duplex codec has QEMU's PCI vendor id, 1af4.
	if hda := reports[2].Card; !strings.HasPrefix(hda.Components, "HDA:1af4") {
		t.Errorf("HDA card components %q, want qemu's codec HDA:1af4...", hda.Components)
	}
}
