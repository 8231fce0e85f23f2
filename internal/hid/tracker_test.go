// SPDX-License-Identifier: Apache-2.0

package hid

import (
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/liken-sh/operators/internal/uevent"
)

// recordedEvents parses a ../uevent/testdata/*.uevents file (blocks of a
// header line and variable lines, see that package's tests) through
// uevent.Parse, as the listener would deliver them.
func recordedEvents(t *testing.T, name string) []uevent.Event {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("../uevent/testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	var out []uevent.Event
	for _, block := range strings.Split(string(data), "\n\n") {
		var dg []byte
		for _, line := range strings.Split(block, "\n") {
			if line != "" && !strings.HasPrefix(line, "#") {
				dg = append(append(dg, line...), 0)
			}
		}
		if dg == nil {
			continue
		}
		ev, err := uevent.Parse(dg)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		out = append(out, ev)
	}
	return out
}

type step struct {
	action, tail string // tail: DEVPATH below the HID device ("" for itself)
	want         Change
}

func runSteps(t *testing.T, tr *Tracker, events []uevent.Event, base string, steps []step) {
	t.Helper()
	if len(events) != len(steps) {
		t.Fatalf("%d events, %d expectations", len(events), len(steps))
	}
	for i, ev := range events {
		s := steps[i]
		if ev.Action != s.action || ev.DevPath != base+s.tail {
			t.Fatalf("event %d is %s %s, expected %s %s", i, ev.Action, ev.DevPath, s.action, base+s.tail)
		}
		if got := tr.Observe(ev); got != s.want {
			t.Errorf("event %d (%s %s %s): %+v, want %+v", i, ev.Action, ev.Subsystem, ev.DevPath, got, s.want)
		}
	}
}

// TestTrackerUhidConnectDisconnect follows a BLE mouse through uhid: every
// hid and input event is relevant and names the mouse; hidraw is not ours;
// the input nodes' removals, which carry no address, resolve through the
// DEVPATH remembered at add; the device's removal forgets it.
func TestTrackerUhidConnectDisconnect(t *testing.T) {
	const mouse = "C8:3F:26:10:20:30"
	base := "/devices/virtual/misc/uhid/0005:045E:0916.0004"
	yes := Change{Relevant: true, Address: mouse}
	tr := NewTracker()
	runSteps(t, tr, recordedEvents(t, "hid-uhid-mouse3600.uevents"), base, []step{
		{"add", "", yes},
		{"add", "/input/input15", yes},
		{"add", "/input/input15/mouse0", yes},
		{"add", "/input/input15/event4", yes},
		{"add", "/input/input16", yes},
		{"add", "/input/input16/event6", yes},
		{"add", "/hidraw/hidraw3", Change{}},
		{"bind", "", yes},
		{"remove", "/input/input15/event4", yes},
		{"remove", "/input/input15/mouse0", yes},
		{"remove", "/input/input15", yes},
		{"remove", "/input/input16/event6", yes},
		{"remove", "/input/input16", yes},
		{"remove", "/hidraw/hidraw3", Change{}},
		{"unbind", "", yes},
		{"remove", "", yes},
	})
	if a, ok := tr.Remembered(base); ok {
		t.Errorf("still remembers %s -> %s after its removal", base, a)
	}
}

// TestTrackerRemovalFromMemory: HIDP's classic gamepad, below hci0. The
// event node's removal resolves from memory only (its datagram has no
// address), and a removal whose HID variables are gone too still does.
func TestTrackerRemovalFromMemory(t *testing.T) {
	const pad = "E4:17:D8:C5:67:6D"
	base := "/devices/pci0000:00/0000:00:14.0/usb1/1-7/1-7:1.0/bluetooth/hci0/hci0:256/0005:2DC8:3820.0006"
	yes := Change{Relevant: true, Address: pad}
	events := recordedEvents(t, "hid-hidp-8bitdo.uevents")
	tr := NewTracker()
	runSteps(t, tr, events[:5], base, []step{
		{"add", "", yes},
		{"add", "/input/input20", yes},
		{"add", "/input/input20/js0", yes},
		{"add", "/input/input20/event5", yes},
		{"remove", "/input/input20/event5", yes},
	})
	if a, _ := tr.Remembered(base); a != pad {
		t.Fatalf("remembered %q for the pad", a)
	}
	// The HID removal stripped of HID_ID and HID_UNIQ: recognised by its
	// bus name, resolved from memory.
	rm := events[5]
	rm.Env = map[string]string{"ACTION": "remove", "DEVPATH": rm.DevPath, "SUBSYSTEM": "hid", "SEQNUM": "615"}
	if got := tr.Observe(rm); got != yes {
		t.Errorf("bare removal: %+v, want %+v", got, yes)
	}
	// Forgotten now: a late input removal below it is still relevant (its
	// path names a Bluetooth HID device) but its address is unknown.
	late := events[4]
	if got := tr.Observe(late); got != (Change{Relevant: true}) {
		t.Errorf("late input removal: %+v, want relevant with no address", got)
	}
}

// TestTrackerIgnoresOthers: USB HID, platform input devices, hidraw and
// network events are not relevant.
func TestTrackerIgnoresOthers(t *testing.T) {
	tr := NewTracker()
	var events []uevent.Event
	events = append(events, recordedEvents(t, "usb-hid-keyboard.uevents")...)
	events = append(events, recordedEvents(t, "input-lis3lv02d.uevents")...)
	for _, name := range []string{"recorded-lo-add.bin", "recorded-lo-change-synth.bin"} {
		b, err := os.ReadFile(filepath.Join("../uevent/testdata", name))
		if err != nil {
			t.Fatal(err)
		}
		ev, err := uevent.Parse(b)
		if err != nil {
			t.Fatal(err)
		}
		events = append(events, ev)
	}
	for _, ev := range events {
		if got := tr.Observe(ev); got != (Change{}) {
			t.Errorf("%s %s %s: %+v, want not relevant", ev.Action, ev.Subsystem, ev.DevPath, got)
		}
	}
}

// TestTrackerInputBeforeMemory: an input device below a Bluetooth HID device
// the tracker never saw (e.g. events that arrive before the first scan)
// takes its address from its own UNIQ, which the input core quotes.
func TestTrackerInputBeforeMemory(t *testing.T) {
	events := recordedEvents(t, "hid-uhid-mxanywhere2-ortho.uevents")
	tr := NewTracker()
	if got, want := tr.Observe(events[1]), (Change{Relevant: true, Address: "DC:82:7A:00:11:22"}); got != want {
		t.Errorf("input24 without memory: %+v, want %+v", got, want)
	}
	// Then the HID adds, in any order, are remembered per device.
	for _, ev := range []uevent.Event{events[3], events[0]} {
		tr.Observe(ev)
	}
	if a, _ := tr.Remembered("/devices/virtual/misc/uhid/0005:0450:0004.0001"); a != "F0:5C:77:E1:02:03" {
		t.Errorf("ortho remote remembered as %q", a)
	}
	if got, want := tr.Observe(events[4]), (Change{Relevant: true, Address: "F0:5C:77:E1:02:03"}); got != want {
		t.Errorf("ortho input0: %+v, want %+v", got, want)
	}
}

// TestTrackerReset: memory seeded from a scan resolves removals of devices
// that were present before the listener started, and Reset forgets devices
// missing from the new scan.
func TestTrackerReset(t *testing.T) {
	root := materialize(t, "testdata/sysfs.dump")
	scan, err := Discover(root, "/dev")
	if err != nil {
		t.Fatal(err)
	}
	tr := NewTracker()
	tr.Reset(scan.Devices)
	rm := uevent.Event{
		Action: "remove", Subsystem: "input",
		DevPath: "/devices/virtual/misc/uhid/0005:3434:0213.000A/input/input46/event18",
	}
	if got, want := tr.Observe(rm), (Change{Relevant: true, Address: "6C:93:08:62:72:16"}); got != want {
		t.Errorf("keychron event18 removal: %+v, want %+v", got, want)
	}
	tr.Reset(nil)
	if _, ok := tr.Remembered("/devices/virtual/misc/uhid/0005:3434:0213.000A"); ok {
		t.Error("Reset(nil) kept a device")
	}
}

// TestTrackerConcurrent observes from several goroutines while another
// resets the memory: relevance never depends on memory for these events
// (their paths name a Bluetooth HID device), so each goroutine counts 14
// relevant events of 16 (the hidraw pair is not); -race checks the locking.
func TestTrackerConcurrent(t *testing.T) {
	events := recordedEvents(t, "hid-uhid-mouse3600.uevents")
	tr := NewTracker()
	stop := make(chan struct{})
	go func() {
		for {
			select {
			case <-stop:
				return
			default:
				tr.Reset(nil)
			}
		}
	}()
	var wg sync.WaitGroup
	counts := make([]int, 4)
	for g := range counts {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 50; i++ {
				for _, ev := range events {
					if tr.Observe(ev).Relevant {
						counts[g]++
					}
				}
			}
		}()
	}
	wg.Wait()
	close(stop)
	for g, n := range counts {
		if n != 50*14 {
			t.Errorf("goroutine %d counted %d relevant events, want %d", g, n, 50*14)
		}
	}
}
