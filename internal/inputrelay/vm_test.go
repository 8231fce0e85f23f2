// SPDX-License-Identifier: Apache-2.0

//go:build vmtier

package inputrelay

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"syscall"
	"testing"
	"time"

	"github.com/liken-sh/operators/internal/evdev"
	"github.com/liken-sh/operators/internal/uinput"
	"github.com/liken-sh/operators/test/vm/guest"
	"golang.org/x/sys/unix"
)

const btnSouth = 0x130 // BTN_GAMEPAD, the descriptor's first button

// padSpec is a Bluetooth gamepad made through uhid: the HID core and
// hid-input make its evdev node as they would for a real pad.
var padSpec = guest.UHIDSpec{
	Name: "liken relay pad", Phys: "00:aa:01:00:00:00", Uniq: "a4:c1:38:0e:5f:21",
	Bus: guest.BusBluetooth, Vendor: 0x1d6b, Product: 0x0246, Descriptor: guest.GamepadDescriptor,
}

// connectPad makes the pad and returns it with its event node's path.
func connectPad(t *testing.T) (*guest.UHID, string) {
	t.Helper()
	pad, node, err := guest.CreateUHIDWithNode(padSpec)
	if err != nil {
		t.Fatal(err)
	}
	return pad, node
}

// report is the descriptor's 3-byte input report.
func report(buttons byte, x, y int8) []byte { return []byte{buttons, byte(x), byte(y)} }

// reader collects a consumer's events.
type reader struct {
	t *testing.T
	f *os.File
}

// reaches reads until, at the end of a frame (SYN_REPORT), the state the
// consumer has read holds every value in want, or fails the test. The
// state is followed across frames: when a controller goes, the kernel
// itself releases the keys its device held (input_unregister_device) in
// one frame, and the relay's own release of the rest follows in the next.
func (r reader) reaches(want ...evdev.Event) {
	r.t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	type code struct{ typ, code uint16 }
	state := map[code]int32{}
	var frame []evdev.Event
	buf := make([]byte, 64*evdev.EventSize)
	for time.Now().Before(deadline) {
		r.f.SetReadDeadline(deadline)
		n, err := r.f.Read(buf)
		if err != nil {
			r.t.Fatalf("consumer read: %v (frame so far %v)", err, frame)
		}
		events, err := evdev.DecodeEvents(nil, buf[:n])
		if err != nil {
			r.t.Fatal(err)
		}
		for _, e := range events {
			if e.Type != evdev.EvSyn || e.Code != evdev.SynReport {
				state[code{e.Type, e.Code}] = e.Value
				frame = append(frame, e)
				continue
			}
			held := true
			for _, w := range want {
				if v, ok := state[code{w.Type, w.Code}]; !ok || v != w.Value {
					held = false
				}
			}
			if held {
				return
			}
			r.t.Logf("after frame %v the consumer does not hold %v yet", frame, want)
			frame = nil
		}
	}
	r.t.Fatalf("the consumer never held %v within 20 s", want)
}

func key(code uint16, v int32) evdev.Event {
	return evdev.Event{Type: evdev.EvKey, Code: code, Value: v}
}
func abs(code uint16, v int32) evdev.Event {
	return evdev.Event{Type: evdev.EvAbs, Code: code, Value: v}
}

// A consumer opens the relay's node once and reads the pad through a nap:
// the pad's node goes, another device takes its minor, the pad comes
// back at another one, and the consumer's descriptor reads on. While the
// pad was away it read the release of the held button and the stick's
// return to rest.
func TestVMRelayAcrossNap(t *testing.T) {
	if err := guest.Modprobe("uhid", "hid-generic", "evdev", "uinput"); err != nil {
		t.Fatal(err)
	}
	pad, node := connectPad(t)
	defer func() {
		if pad != nil {
			pad.Destroy()
		}
	}()
	src, err := evdev.Open(node)
	if err != nil {
		t.Fatal(err)
	}
	caps, err := evdev.ReadCapabilities(src)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("pad at %s: %+v", node, caps)
	r, err := New(uinput.DefaultPath, caps)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	vnode, err := r.Device().EventNode("/sys")
	if err != nil {
		t.Fatal(err)
	}
	var st syscall.Stat_t
	if err := syscall.Stat(vnode.Path("/dev"), &st); err != nil || unix.Major(st.Rdev) != vnode.Major || unix.Minor(st.Rdev) != vnode.Minor {
		t.Fatalf("virtual node %+v: stat rdev %#x (%v)", vnode, st.Rdev, err)
	}
	consumerFile, err := evdev.Open(vnode.Path("/dev"))
	if err != nil {
		t.Fatal(err)
	}
	defer consumerFile.Close()
	vcaps, err := evdev.ReadCapabilities(consumerFile)
	if err != nil {
		t.Fatal(err)
	}
	if !evdev.SameDevice(caps, vcaps) || vcaps.ID != caps.ID {
		t.Errorf("the virtual device is %+v, want the pad's identity and capabilities %+v", vcaps, caps)
	}
	consumer := reader{t, consumerFile}
	if err := r.Attach(src); err != nil {
		t.Fatal(err)
	}

	// The stick rests a little off centre; the first frame teaches the
	// relay that resting position.
	if err := pad.Input(report(0, 5, -3)); err != nil {
		t.Fatal(err)
	}
	consumer.reaches(abs(0, 5), abs(1, -3))
	if err := pad.Input(report(1, 100, -3)); err != nil {
		t.Fatal(err)
	}
	consumer.reaches(key(btnSouth, 1), abs(0, 100))

	// The nap, with the button held and the stick pushed.
	if err := pad.Destroy(); err != nil {
		t.Fatal(err)
	}
	pad = nil
	consumer.reaches(key(btnSouth, 0), abs(0, 5))
	if !guest.WaitFor(10*time.Second, func() bool { return !r.Attached() }) {
		t.Fatal("the relay still has the pad attached after it went")
	}

	// Another input device takes the freed minor meanwhile.
	kbd, kn, err := guest.CreateKeyboard()
	if err != nil {
		t.Fatal(err)
	}
	defer kbd.Close()
	t.Logf("pad was at %s, the keyboard took %s", node, kn.Path("/dev"))

	// The pad wakes at another node; the relay takes it and the consumer's
	// same descriptor reads on.
	pad, node2 := connectPad(t)
	if node2 == node || node2 == kn.Path("/dev") {
		t.Errorf("the pad woke at %s, want a node other than its old %s and the keyboard's", node2, node)
	}
	src2, err := evdev.Open(node2)
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Attach(src2); err != nil {
		t.Fatal(err)
	}
	if err := pad.Input(report(2, 5, 40)); err != nil {
		t.Fatal(err)
	}
	consumer.reaches(key(btnSouth+1, 1), abs(1, 40))
	st2 := r.Stats()
	t.Logf("stats %+v", st2)
	// The kernel releases the pad's held keys itself as the device goes
	// (drivers/input/input.c, input_disconnect_device), and the relay
	// copies that frame when it reads it before the read that fails; the
	// stick's axis is the relay's alone to return. So one release at
	// least, two when the relay's read failed first.
	if st2.Attachments != 2 || st2.Released < 1 {
		t.Errorf("stats %+v, want 2 attachments and at least 1 release", st2)
	}
}

// rumble is a struct ff_effect of type FF_RUMBLE: id -1 (a new effect),
// replay length 500 ms, strong and weak magnitudes.
func rumble(strong, weak uint16) evdev.FFEffect {
	var e evdev.FFEffect
	binary.NativeEndian.PutUint16(e[0:], evdev.FFRumble)
	binary.NativeEndian.PutUint16(e[2:], 0xffff)
	binary.NativeEndian.PutUint16(e[10:], 500)
	binary.NativeEndian.PutUint16(e[16:], strong)
	binary.NativeEndian.PutUint16(e[18:], weak)
	return e
}

// A consumer's rumble reaches the controller while it is attached, is
// refused (upload) or dropped (play) while it is away, and plays again on
// the controller's next node without the consumer uploading it again.
// The controller here is itself a uinput device with force feedback, so
// the test sees exactly what reaches it.
func TestVMRelayForceFeedback(t *testing.T) {
	if err := guest.Modprobe("evdev", "uinput"); err != nil {
		t.Fatal(err)
	}
	ctrl, err := uinput.Create(uinput.DefaultPath, evdev.Capabilities{
		Name: "liken rumble pad", ID: evdev.ID{Bus: 5, Vendor: 0x054c, Product: 0x09cc},
		Keys: []uint16{btnSouth}, ForceFeedback: []uint16{evdev.FFRumble, evdev.FFGain}, FFEffects: 4,
	})
	if err != nil {
		t.Fatal(err)
	}
	defer ctrl.Close()
	got := make(chan string, 16)
	go func() {
		buf := make([]byte, 16*evdev.EventSize)
		var evs []evdev.Event
		for {
			var err error
			evs, err = ctrl.Read(evs[:0], buf)
			if err != nil {
				return
			}
			for _, e := range evs {
				switch {
				case uinput.IsUpload(e):
					u, err := ctrl.BeginUpload(uint32(e.Value))
					if err == nil {
						got <- fmt.Sprintf("upload %#x", u.Effect.Type())
						ctrl.EndUpload(u, 0)
					}
				case uinput.IsErase(e):
					x, err := ctrl.BeginErase(uint32(e.Value))
					if err == nil {
						got <- "erase"
						ctrl.EndErase(x, 0)
					}
				case e.Type == evdev.EvFF && e.Code < evdev.FFGain:
					got <- fmt.Sprintf("play %d", e.Value)
				}
			}
		}
	}()
	expect := func(want string) {
		t.Helper()
		select {
		case g := <-got:
			if g != want {
				t.Fatalf("the controller got %q, want %q", g, want)
			}
		case <-time.After(20 * time.Second):
			t.Fatalf("the controller got nothing within 20 s, want %q", want)
		}
	}
	cn, err := ctrl.EventNode("/sys")
	if err != nil {
		t.Fatal(err)
	}
	src, err := evdev.Open(cn.Path("/dev"))
	if err != nil {
		t.Fatal(err)
	}
	caps, err := evdev.ReadCapabilities(src)
	if err != nil {
		t.Fatal(err)
	}
	r, err := New(uinput.DefaultPath, caps)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if err := r.Attach(src); err != nil {
		t.Fatal(err)
	}
	vn, err := r.Device().EventNode("/sys")
	if err != nil {
		t.Fatal(err)
	}
	consumer, err := evdev.Open(vn.Path("/dev"))
	if err != nil {
		t.Fatal(err)
	}
	defer consumer.Close()
	id, err := evdev.UploadEffect(consumer, rumble(0xc000, 0x4000))
	if err != nil {
		t.Fatalf("the consumer's upload: %v", err)
	}
	expect("upload 0x50")
	play := func(v int32) error {
		_, err := consumer.Write(evdev.AppendEvent(nil, evdev.Event{Type: evdev.EvFF, Code: uint16(id), Value: v}))
		return err
	}
	if err := play(1); err != nil {
		t.Fatal(err)
	}
	expect("play 1")

	// Asleep: a new upload fails with ENODEV, a play goes nowhere. (The
	// relay's closing its descriptor to the controller stops and erases
	// what it uploaded there, as any close does (input_ff_flush); a
	// controller that went away has nothing left to erase.)
	r.Detach()
	expect("play 0")
	expect("erase")
	if _, err := evdev.UploadEffect(consumer, rumble(1, 1)); !errors.Is(err, syscall.ENODEV) {
		t.Errorf("an upload while the controller sleeps: %v, want ENODEV", err)
	}
	if err := play(1); err != nil {
		t.Fatal(err)
	}
	if !guest.WaitFor(10*time.Second, func() bool { return r.Stats().PlaysDropped >= 1 }) {
		t.Errorf("stats %+v, want the play counted as dropped", r.Stats())
	}

	// Awake at a new descriptor: the kept effect is uploaded again, then
	// played.
	src2, err := evdev.Open(cn.Path("/dev"))
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Attach(src2); err != nil {
		t.Fatal(err)
	}
	if err := play(2); err != nil {
		t.Fatal(err)
	}
	expect("upload 0x50")
	expect("play 2")
	select {
	case g := <-got:
		t.Errorf("the controller also got %q, want nothing queued from the nap", g)
	case <-time.After(time.Second):
	}
}
