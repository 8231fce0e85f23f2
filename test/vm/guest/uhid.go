// SPDX-License-Identifier: Apache-2.0

package guest

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
	"time"
)

// UHIDPath is the kernel's userspace-HID node (module uhid).
const UHIDPath = "/dev/uhid"

// uhid event types and the layout of struct uhid_event, which is packed:
// a u32 type, then the request (include/uapi/linux/uhid.h).
const (
	uhidDestroy        = 1
	uhidInput2         = 12 // struct uhid_input2_req: __u16 size, then the report
	uhidStart          = 2
	uhidGetReport      = 9
	uhidGetReportReply = 10
	uhidCreate2        = 11
	uhidSetReport      = 13
	uhidSetReportReply = 14

	// UHIDEventSize is sizeof(struct uhid_event): the type and the
	// largest request, CREATE2 (name 128, phys 64, uniq 64, rd_size,
	// bus, vendor, product, version, country, rd_data 4096).
	UHIDEventSize = 4 + 128 + 64 + 64 + 2 + 2 + 4*4 + maxDescriptor
	maxDescriptor = 4096 // HID_MAX_DESCRIPTOR_SIZE
	// Offsets in a CREATE2 event.
	offName    = 4
	offPhys    = offName + 128
	offUniq    = offPhys + 64
	offRDSize  = offUniq + 64
	offBus     = offRDSize + 2
	offVendor  = offBus + 2
	offProduct = offVendor + 4
	offVersion = offProduct + 4
	offCountry = offVersion + 4
	offRDData  = offCountry + 4
)

// HID bus types (include/uapi/linux/input.h).
const (
	BusUSB       = 0x03
	BusBluetooth = 0x05
)

// GamepadDescriptor is a HID report descriptor of a gamepad with eight
// buttons and an X and a Y axis, one 3-byte input report without a report
// id: enough for hid-generic to bind and for hid-input to make an evdev
// node with BTN_GAMEPAD keys.
var GamepadDescriptor = []byte{
	0x05, 0x01, // Usage Page (Generic Desktop)
	0x09, 0x05, // Usage (Game Pad)
	0xa1, 0x01, // Collection (Application)
	0x05, 0x09, //   Usage Page (Button)
	0x19, 0x01, //   Usage Minimum (1)
	0x29, 0x08, //   Usage Maximum (8)
	0x15, 0x00, //   Logical Minimum (0)
	0x25, 0x01, //   Logical Maximum (1)
	0x75, 0x01, //   Report Size (1)
	0x95, 0x08, //   Report Count (8)
	0x81, 0x02, //   Input (Data, Variable, Absolute)
	0x05, 0x01, //   Usage Page (Generic Desktop)
	0x09, 0x30, //   Usage (X)
	0x09, 0x31, //   Usage (Y)
	0x15, 0x81, //   Logical Minimum (-127)
	0x25, 0x7f, //   Logical Maximum (127)
	0x75, 0x08, //   Report Size (8)
	0x95, 0x02, //   Report Count (2)
	0x81, 0x02, //   Input (Data, Variable, Absolute)
	0xc0, // End Collection
}

// UHIDSpec describes a device to create. Name, Phys and Uniq are the
// strings the HID core shows as HID_NAME, HID_PHYS and HID_UNIQ (for
// Bluetooth: the adapter's and the peer's address); each must fit its
// field with a terminating NUL.
type UHIDSpec struct {
	Name, Phys, Uniq         string
	Bus                      uint16
	Vendor, Product, Version uint32
	Descriptor               []byte
}

// EncodeCreate2 lays out the UHID_CREATE2 event for spec.
func EncodeCreate2(spec UHIDSpec) ([]byte, error) {
	ev := make([]byte, UHIDEventSize)
	binary.NativeEndian.PutUint32(ev, uhidCreate2)
	for _, f := range []struct {
		name, value string
		off, size   int
	}{{"name", spec.Name, offName, 128}, {"phys", spec.Phys, offPhys, 64}, {"uniq", spec.Uniq, offUniq, 64}} {
		if len(f.value) >= f.size {
			return nil, fmt.Errorf("uhid %s %q is longer than %d bytes", f.name, f.value, f.size-1)
		}
		copy(ev[f.off:], f.value)
	}
	if len(spec.Descriptor) == 0 || len(spec.Descriptor) > maxDescriptor {
		return nil, fmt.Errorf("uhid report descriptor of %d bytes (want 1 to %d)", len(spec.Descriptor), maxDescriptor)
	}
	binary.NativeEndian.PutUint16(ev[offRDSize:], uint16(len(spec.Descriptor)))
	binary.NativeEndian.PutUint16(ev[offBus:], spec.Bus)
	binary.NativeEndian.PutUint32(ev[offVendor:], spec.Vendor)
	binary.NativeEndian.PutUint32(ev[offProduct:], spec.Product)
	binary.NativeEndian.PutUint32(ev[offVersion:], spec.Version)
	copy(ev[offRDData:], spec.Descriptor)
	return ev, nil
}

// UHID is a HID device created through /dev/uhid; it exists until
// Destroy (or until the process exits, which closes the node).
type UHID struct {
	f       *os.File
	started chan struct{}
	done    chan struct{}
	wmu     sync.Mutex
}

// StartTimeout bounds the wait for a driver to bind a new device.
var StartTimeout = 30 * time.Second

// CreateUHID creates the device and waits until a HID driver has bound it
// (the kernel's UHID_START). A device no driver binds (one whose ids name
// a vendor driver that is not loaded) never starts; that is an error
// after StartTimeout, and the device is destroyed. The device's requests
// for reports are answered with an error, so the driver never waits on
// them.
func CreateUHID(spec UHIDSpec) (*UHID, error) {
	ev, err := EncodeCreate2(spec)
	if err != nil {
		return nil, err
	}
	// A character device opened by os is in Go's poller: reads park no
	// thread, and Close ends them.
	f, err := os.OpenFile(UHIDPath, os.O_RDWR, 0)
	if err != nil {
		return nil, err
	}
	u := &UHID{f: f, started: make(chan struct{}), done: make(chan struct{})}
	if _, err := f.Write(ev); err != nil {
		f.Close()
		return nil, fmt.Errorf("UHID_CREATE2 %q: %w", spec.Name, err)
	}
	go u.serve()
	select {
	case <-u.started:
		return u, nil
	case <-u.done:
	case <-time.After(StartTimeout):
	}
	u.Destroy()
	return nil, fmt.Errorf("uhid device %q (bus %04x, %04x:%04x): no driver started it within %s", spec.Name, spec.Bus, spec.Vendor, spec.Product, StartTimeout)
}

// serve reads the kernel's events until the node is closed.
func (u *UHID) serve() {
	defer close(u.done)
	buf := make([]byte, UHIDEventSize)
	once := sync.Once{}
	for {
		n, err := u.f.Read(buf)
		if err != nil || n < 4 {
			return
		}
		switch binary.NativeEndian.Uint32(buf) {
		case uhidStart:
			once.Do(func() { close(u.started) })
		case uhidGetReport, uhidSetReport:
			// Both requests start with a u32 id; the replies are id,
			// err (EIO), and for GET_REPORT an empty report.
			reply := make([]byte, UHIDEventSize)
			kind := uint32(uhidGetReportReply)
			if binary.NativeEndian.Uint32(buf) == uhidSetReport {
				kind = uhidSetReportReply
			}
			binary.NativeEndian.PutUint32(reply, kind)
			copy(reply[4:8], buf[4:8])
			binary.NativeEndian.PutUint16(reply[8:], 5) // EIO
			u.write(reply)                              //nolint:errcheck // a reply the kernel refuses shows as the device not appearing, which the caller waits for
		}
	}
}

func (u *UHID) write(ev []byte) error {
	u.wmu.Lock()
	defer u.wmu.Unlock()
	_, err := u.f.Write(ev)
	return err
}

// Input sends one input report from the device (UHID_INPUT2), as if the
// hardware had sent it: the HID core parses it with the report
// descriptor and hid-input turns it into evdev events.
func (u *UHID) Input(report []byte) error {
	if len(report) > maxDescriptor {
		return fmt.Errorf("uhid input report of %d bytes (want at most %d)", len(report), maxDescriptor)
	}
	ev := make([]byte, UHIDEventSize)
	binary.NativeEndian.PutUint32(ev, uhidInput2)
	binary.NativeEndian.PutUint16(ev[4:], uint16(len(report)))
	copy(ev[6:], report)
	if err := u.write(ev); err != nil {
		return fmt.Errorf("UHID_INPUT2: %w", err)
	}
	return nil
}

// Destroy removes the device (UHID_DESTROY) and closes the node.
func (u *UHID) Destroy() error {
	ev := make([]byte, UHIDEventSize)
	binary.NativeEndian.PutUint32(ev, uhidDestroy)
	werr := u.write(ev)
	cerr := u.f.Close()
	<-u.done
	if werr != nil && !errors.Is(werr, io.ErrClosedPipe) {
		return fmt.Errorf("UHID_DESTROY: %w", werr)
	}
	return cerr
}
