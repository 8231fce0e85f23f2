// SPDX-License-Identifier: Apache-2.0

//go:build vmtier

package uevent_test

import (
	"context"
	"fmt"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/liken-sh/operators/internal/hid"
	"github.com/liken-sh/operators/internal/uevent"
	"github.com/liken-sh/operators/test/vm/guest"
)

// The VM tier's tests (test/vm): the listener on a real kernel's group 1,
// with real module and device events.

// recorder keeps every event a Listener delivers and fails the test on
// any error it reports; the guest is quiet, so none is expected.
type recorder struct {
	t      *testing.T
	l      *uevent.Listener
	events []uevent.Event
}

func listen(t *testing.T) *recorder {
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	l, err := uevent.Listen(ctx, uevent.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return &recorder{t: t, l: l}
}

// until reads events until one matches, or fails the test after 30 s.
func (r *recorder) until(what string, match func(uevent.Event) bool) uevent.Event {
	r.t.Helper()
	timeout := time.After(30 * time.Second)
	for {
		select {
		case ev := <-r.l.Events():
			r.events = append(r.events, ev)
			if match(ev) {
				return ev
			}
		case err := <-r.l.Errors():
			r.t.Fatalf("listener: %v", err)
		case <-timeout:
			r.t.Fatalf("no %s within 30 s; received:\n%s", what, r.dump())
		}
	}
}

// consecutive checks that the kernel's sequence numbers of what was
// received have no gap: every uevent goes to group 1, so a gap is a lost
// event.
func (r *recorder) consecutive() {
	r.t.Helper()
	for i := 1; i < len(r.events); i++ {
		if r.events[i].Seqnum != r.events[i-1].Seqnum+1 {
			r.t.Errorf("SEQNUM %d follows %d: events lost\n%s", r.events[i].Seqnum, r.events[i-1].Seqnum, r.dump())
			return
		}
	}
}

// seen returns the first event received so far that matches.
func (r *recorder) seen(match func(uevent.Event) bool) (uevent.Event, bool) {
	for _, ev := range r.events {
		if match(ev) {
			return ev, true
		}
	}
	return uevent.Event{}, false
}

func (r *recorder) dump() string {
	var b strings.Builder
	for _, ev := range r.events {
		fmt.Fprintf(&b, "  %d %s@%s (%s)\n", ev.Seqnum, ev.Action, ev.DevPath, ev.Subsystem)
	}
	return b.String()
}

func is(action, devpath string) func(uevent.Event) bool {
	return func(ev uevent.Event) bool { return ev.Action == action && ev.DevPath == devpath }
}

// Loading the dummy network driver adds the module and its dummy0
// interface; removing it removes both.
func TestVMModuleLoadAndUnload(t *testing.T) {
	r := listen(t)
	if err := guest.Modprobe("dummy"); err != nil {
		t.Fatal(err)
	}
	// The module's own add comes last, once its init has made dummy0.
	mod := r.until("add@/module/dummy", is("add", "/module/dummy"))
	if mod.Subsystem != "module" {
		t.Errorf("add@/module/dummy has SUBSYSTEM %q", mod.Subsystem)
	}
	netdev, ok := r.seen(is("add", "/devices/virtual/net/dummy0"))
	if !ok || netdev.Subsystem != "net" || netdev.Env["INTERFACE"] != "dummy0" || netdev.Env["IFINDEX"] == "" {
		t.Errorf("add of dummy0 before the module's (%v): %v\n%s", ok, netdev.Env, r.dump())
	}
	if out, err := exec.Command("rmmod", "dummy").CombinedOutput(); err != nil {
		t.Fatalf("rmmod dummy: %v: %s", err, out)
	}
	r.until("remove@/module/dummy", is("remove", "/module/dummy"))
	if _, ok := r.seen(is("remove", "/devices/virtual/net/dummy0")); !ok {
		t.Errorf("no remove of dummy0 before the module's:\n%s", r.dump())
	}
	r.consecutive()
	t.Logf("received:\n%s", r.dump())
}

// A Bluetooth HID device made through uhid: its hid, input and evdev
// devices come and go, and hid.Tracker resolves the removal of the evdev
// node, which carries no address, to the address the hid device's add
// carried.
func TestVMUHIDDeviceEvents(t *testing.T) {
	if err := guest.Modprobe("uhid", "hid-generic", "evdev"); err != nil {
		t.Fatal(err)
	}
	r := listen(t)
	tracker := hid.NewTracker()
	const uniq, address = "a4:c1:38:0e:5f:21", "A4:C1:38:0E:5F:21"
	dev, err := guest.CreateUHID(guest.UHIDSpec{
		Name: "liken vm gamepad", Phys: "00:aa:01:00:00:00", Uniq: uniq,
		Bus: guest.BusBluetooth, Vendor: 0x1d6b, Product: 0x0246, Descriptor: guest.GamepadDescriptor,
	})
	if err != nil {
		t.Fatal(err)
	}
	// observe feeds every event to the tracker, in order, and returns the
	// first that matches with what the tracker made of it.
	observe := func(what string, match func(uevent.Event) bool) (uevent.Event, hid.Change) {
		t.Helper()
		var ch hid.Change
		ev := r.until(what, func(ev uevent.Event) bool {
			ch = tracker.Observe(ev)
			return match(ev)
		})
		return ev, ch
	}
	hidAdd, ch := observe("the add of the hid device", func(ev uevent.Event) bool {
		return ev.Action == "add" && ev.Subsystem == "hid"
	})
	if hidAdd.Env["HID_UNIQ"] != uniq || !strings.HasPrefix(hidAdd.Env["HID_ID"], "0005:") || !strings.HasPrefix(hidAdd.Env["MODALIAS"], "hid:b0005") {
		t.Errorf("hid add: %v", hidAdd.Env)
	}
	if !ch.Relevant || ch.Address != address {
		t.Errorf("Tracker on the hid add: %+v, want relevant with %s", ch, address)
	}
	evdevAdd, ch := observe("the add of an evdev node below it", func(ev uevent.Event) bool {
		return ev.Action == "add" && ev.Subsystem == "input" && strings.HasPrefix(ev.Env["DEVNAME"], "input/event") &&
			strings.HasPrefix(ev.DevPath, hidAdd.DevPath+"/")
	})
	if !ch.Relevant || ch.Address != address {
		t.Errorf("Tracker on the add of %s: %+v, want relevant with %s", evdevAdd.DevPath, ch, address)
	}
	observe("the hid device's bind", is("bind", hidAdd.DevPath))

	if err := dev.Destroy(); err != nil {
		t.Fatal(err)
	}
	evdevRemove, ch := observe("the remove of the evdev node", is("remove", evdevAdd.DevPath))
	if _, ok := evdevRemove.Env["UNIQ"]; ok {
		t.Logf("the evdev remove carries UNIQ %q", evdevRemove.Env["UNIQ"])
	}
	if !ch.Relevant || ch.Address != address {
		t.Errorf("Tracker on the remove of %s (%v): %+v, want the remembered %s", evdevRemove.DevPath, evdevRemove.Env, ch, address)
	}
	_, ch = observe("the remove of the hid device", is("remove", hidAdd.DevPath))
	if !ch.Relevant || ch.Address != address {
		t.Errorf("Tracker on the hid remove: %+v, want relevant with %s", ch, address)
	}
	if a, ok := tracker.Remembered(hidAdd.DevPath); ok {
		t.Errorf("Tracker still remembers %s as %s after its removal", hidAdd.DevPath, a)
	}
	r.consecutive()
	t.Logf("received:\n%s", r.dump())
}
