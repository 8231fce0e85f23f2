// SPDX-License-Identifier: Apache-2.0

package guest

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/liken-sh/operators/internal/evdev"
	"github.com/liken-sh/operators/internal/uinput"
)

// CreateUHIDWithNode creates the device (CreateUHID) and waits, at most
// StartTimeout, until hid-input has made its one evdev node and devtmpfs
// has it under /dev/input; it returns the device and the node's path.
// The device is told from others by its HID_UNIQ, so spec.Uniq must be
// set and unique among the devices present.
func CreateUHIDWithNode(spec UHIDSpec) (*UHID, string, error) {
	if spec.Uniq == "" {
		return nil, "", errors.New("the device needs a Uniq to be found")
	}
	u, err := CreateUHID(spec)
	if err != nil {
		return nil, "", err
	}
	var node string
	if !WaitFor(StartTimeout, func() bool {
		node = ""
		for _, ev := range Glob("/sys/bus/hid/devices/*/uevent") {
			raw, err := os.ReadFile(ev)
			if err != nil || !bytes.Contains(append([]byte("\n"), raw...), []byte("\nHID_UNIQ="+spec.Uniq+"\n")) {
				continue
			}
			events := Glob(filepath.Join(filepath.Dir(ev), "input/input*/event*"))
			if len(events) == 1 {
				node = filepath.Join("/dev/input", filepath.Base(events[0]))
			}
		}
		return node != "" && Exists(node)
	}) {
		u.Destroy()
		return nil, "", fmt.Errorf("uhid device %q: no evdev node within %s", spec.Name, StartTimeout)
	}
	return u, node, nil
}

// AwaitEvent reads evdev records from f, an event node opened with
// evdev.Open, until one of type typ with code and value arrives, or
// timeout passes.
func AwaitEvent(f *os.File, typ, code uint16, value int32, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	if err := f.SetReadDeadline(deadline); err != nil {
		return err
	}
	buf := make([]byte, 64*evdev.EventSize)
	var seen []evdev.Event
	for {
		n, err := f.Read(buf)
		if err != nil {
			return fmt.Errorf("waiting for %#x:%#x=%d on %s (read %v): %w", typ, code, value, f.Name(), seen, err)
		}
		events, err := evdev.DecodeEvents(nil, buf[:n])
		if err != nil {
			return err
		}
		for _, e := range events {
			if e.Type == typ && e.Code == code && e.Value == value {
				return nil
			}
			if e.Type != evdev.EvSyn && len(seen) < 32 {
				seen = append(seen, e)
			}
		}
	}
}

// CreateKeyboard makes a USB keyboard through uinput, the device that in
// a household takes an input number a sleeping pad freed, and returns it
// with its event node. The caller closes it.
func CreateKeyboard() (*uinput.Device, uinput.Node, error) {
	kbd, err := uinput.Create(uinput.DefaultPath, evdev.Capabilities{
		Name: "liken usb keyboard", ID: evdev.ID{Bus: BusUSB, Vendor: 1, Product: 2}, Keys: []uint16{30},
	})
	if err != nil {
		return nil, uinput.Node{}, err
	}
	n, err := kbd.EventNode("/sys")
	if err != nil {
		kbd.Close()
		return nil, uinput.Node{}, err
	}
	return kbd, n, nil
}
