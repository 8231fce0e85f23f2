// SPDX-License-Identifier: Apache-2.0

package alsa

import (
	"errors"
	"os"
	"testing"

	"golang.org/x/sys/unix"
)

// ELDUnchanged holds a block read earlier against the element as it is
// now: the same bytes (a monitor's block, an empty one, a corrupt one)
// are unchanged, any other bytes, a read that failed before and reads
// now, or an element that is gone are changes.
func TestELDUnchanged(t *testing.T) {
	r := xpsCard(t, 0)
	c := r.Open()
	defer c.Close()
	dell, err := os.ReadFile("../../testdata/fixtures/eld/alsa-ucm-conf-248-dell-g2422hs-eld-ctl.bin")
	if err != nil {
		t.Fatal(err)
	}
	read := func(dev int) ELDState {
		t.Helper()
		s, ok := ReadELD(c, dev)
		if !ok {
			t.Fatalf("PCM %d has no ELD element", dev)
		}
		return s
	}
	check := func(what string, dev int, was ELDState, want bool) {
		t.Helper()
		if got := ELDUnchanged(c, dev, was); got != want {
			t.Errorf("%s: ELDUnchanged = %v, want %v", what, got, want)
		}
	}

	if err := r.SetELD(5, dell); err != nil {
		t.Fatal(err)
	}
	monitor := read(5)
	if !monitor.Valid() {
		t.Fatalf("PCM 5: %+v", monitor)
	}
	check("the same monitor", 5, monitor, true)

	if err := r.SetELD(5, nil); err != nil {
		t.Fatal(err)
	}
	check("the monitor gone", 5, monitor, false)
	empty := read(5)
	check("still no monitor", 5, empty, true)
	check("a failed read, now an empty block", 5, ELDState{Err: unix.EIO}, false)

	corrupt := []byte{0x10, 0, 0x08, 0}
	if err := r.SetELD(5, corrupt); err != nil {
		t.Fatal(err)
	}
	check("no monitor, then a corrupt block", 5, empty, false)
	bad := read(5)
	if bad.Err == nil || len(bad.Raw) == 0 {
		t.Fatalf("corrupt block read as %+v", bad)
	}
	check("the same corrupt block", 5, bad, true)

	if err := r.SetELD(5, dell); err != nil {
		t.Fatal(err)
	}
	check("a corrupt block, then the monitor", 5, bad, false)
	check("the monitor back", 5, monitor, true)

	if _, err := c.Read(ELDElemID(3)); !errors.Is(err, unix.ENOENT) {
		t.Fatalf("PCM 3 has an ELD element (%v)", err)
	}
	check("no element", 3, ELDState{}, false)
}
