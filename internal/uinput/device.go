// SPDX-License-Identifier: Apache-2.0

//go:build linux && (amd64 || arm64)

package uinput

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"unsafe"

	"github.com/liken-sh/operators/internal/evdev"
	"github.com/liken-sh/operators/internal/ioctl"
	"golang.org/x/sys/unix"
)

// DefaultPath is where the kernel's uinput misc device lives.
const DefaultPath = "/dev/uinput"

// Device is one virtual input device. Write and Read may be called from
// different goroutines; Close ends a Read in progress.
type Device struct {
	f       *os.File
	caps    evdev.Capabilities
	sysName string
	wmu     sync.Mutex
	wbuf    []byte
}

// Node is a virtual device's event node: its name under /dev/input
// ("event7") and its character device number.
type Node struct {
	Name         string
	Major, Minor uint32
}

// Path returns the node's path under devRoot ("/dev/input/event7").
func (n Node) Path(devRoot string) string { return filepath.Join(devRoot, "input", n.Name) }

// Create makes a virtual input device through the uinput node at path
// (DefaultPath in production) with caps' name, identity, phys, properties,
// codes, axes and force-feedback effect count. caps must pass Validate.
// The device lasts until Close or until the process's descriptor is
// closed any other way (its exit included). Errors name the step: the
// open (ENOENT without the uinput module, EACCES without the node's
// grant), a kernel older than uinput protocol 5 (Linux 4.5), or the ioctl
// the kernel refused.
func Create(path string, caps evdev.Capabilities) (*Device, error) {
	if err := caps.Validate(); err != nil {
		return nil, fmt.Errorf("uinput: %w", err)
	}
	fd, err := unix.Open(path, unix.O_RDWR|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("uinput: open %s: %w", path, err)
	}
	d := &Device{f: os.NewFile(uintptr(fd), path), caps: caps}
	if err := d.setup(); err != nil {
		d.f.Close()
		return nil, fmt.Errorf("uinput: %s: %w", caps.Name, err)
	}
	return d, nil
}

func (d *Device) setup() error {
	var version uint32
	if err := d.ioctl(ioctlGetVersion, unsafe.Pointer(&version)); err != nil {
		return fmt.Errorf("UI_GET_VERSION: %w", err)
	}
	if version < minVersion {
		return fmt.Errorf("uinput protocol %d is older than %d (Linux 4.5), which has UI_DEV_SETUP", version, minVersion)
	}
	c := d.caps
	for _, t := range c.Types() {
		if t == evdev.EvSyn {
			continue
		}
		if err := d.ioctlValue(ioctlSetEvBit, uintptr(t)); err != nil {
			return fmt.Errorf("UI_SET_EVBIT %#x: %w", t, err)
		}
	}
	set := func(typ uint16, prop bool, codes []uint16) error {
		req, ok := ioctlSetBit(typ, prop)
		if !ok {
			return nil
		}
		for _, code := range codes {
			if err := d.ioctlValue(req, uintptr(code)); err != nil {
				return fmt.Errorf("setting code %#x of type %#x: %w", code, typ, err)
			}
		}
		return nil
	}
	for _, l := range []struct {
		typ   uint16
		codes []uint16
	}{
		{evdev.EvKey, c.Keys}, {evdev.EvRel, c.Rel}, {evdev.EvMsc, c.Misc}, {evdev.EvSw, c.Switches},
		{evdev.EvLed, c.LEDs}, {evdev.EvSnd, c.Sounds}, {evdev.EvFF, c.ForceFeedback},
	} {
		if err := set(l.typ, false, l.codes); err != nil {
			return err
		}
	}
	if err := set(0, true, c.Properties); err != nil {
		return err
	}
	var abs [absSetupSize]byte
	for _, a := range c.Abs {
		binary.NativeEndian.PutUint16(abs[0:], a.Code)
		for i, v := range []int32{a.Value, a.Minimum, a.Maximum, a.Fuzz, a.Flat, a.Resolution} {
			binary.NativeEndian.PutUint32(abs[4+4*i:], uint32(v))
		}
		req, _ := ioctlSetBit(evdev.EvAbs, false)
		if err := d.ioctlValue(req, uintptr(a.Code)); err != nil {
			return fmt.Errorf("UI_SET_ABSBIT %#x: %w", a.Code, err)
		}
		if err := d.ioctl(ioctlAbsSetup, unsafe.Pointer(&abs[0])); err != nil {
			return fmt.Errorf("UI_ABS_SETUP %#x: %w", a.Code, err)
		}
	}
	if c.Phys != "" {
		phys := append([]byte(c.Phys), 0)
		if err := d.ioctl(ioctlSetPhys, unsafe.Pointer(&phys[0])); err != nil {
			return fmt.Errorf("UI_SET_PHYS: %w", err)
		}
	}
	var setup [setupSize]byte
	binary.NativeEndian.PutUint16(setup[0:], c.ID.Bus)
	binary.NativeEndian.PutUint16(setup[2:], c.ID.Vendor)
	binary.NativeEndian.PutUint16(setup[4:], c.ID.Product)
	binary.NativeEndian.PutUint16(setup[6:], c.ID.Version)
	copy(setup[8:8+nameSize-1], c.Name)
	binary.NativeEndian.PutUint32(setup[8+nameSize:], c.FFEffects)
	if err := d.ioctl(ioctlDevSetup, unsafe.Pointer(&setup[0])); err != nil {
		return fmt.Errorf("UI_DEV_SETUP: %w", err)
	}
	if err := d.ioctlValue(ioctlDevCreate, 0); err != nil {
		return fmt.Errorf("UI_DEV_CREATE: %w", err)
	}
	var name [sysNameSize]byte
	if err := d.ioctl(ioctlGetSysName, unsafe.Pointer(&name[0])); err != nil {
		return fmt.Errorf("UI_GET_SYSNAME: %w", err)
	}
	s, _, _ := bytes.Cut(name[:], []byte{0})
	d.sysName = string(s)
	return nil
}

// Capabilities returns the snapshot the device was made from.
func (d *Device) Capabilities() evdev.Capabilities { return d.caps }

// SysName returns the input device's name in sysfs ("input42"), below
// /sys/devices/virtual/input.
func (d *Device) SysName() string { return d.sysName }

// EventNode finds the device's event node in the sysfs tree at sysRoot
// ("/sys" in production): the eventN child of its input device and the
// device number in that child's dev file. The evdev handler registers
// the node while UI_DEV_CREATE runs, so it is there when Create returns
// unless the evdev module is not loaded; the error says so.
func (d *Device) EventNode(sysRoot string) (Node, error) {
	dir := filepath.Join(sysRoot, "devices/virtual/input", d.sysName)
	entries, err := os.ReadDir(dir)
	if err != nil {
		return Node{}, fmt.Errorf("uinput: %s: %w", dir, err)
	}
	for _, e := range entries {
		if !strings.HasPrefix(e.Name(), "event") {
			continue
		}
		raw, err := os.ReadFile(filepath.Join(dir, e.Name(), "dev"))
		if err != nil {
			return Node{}, fmt.Errorf("uinput: %w", err)
		}
		maj, mnr, ok := strings.Cut(strings.TrimSpace(string(raw)), ":")
		ma, err1 := strconv.ParseUint(maj, 10, 32)
		mi, err2 := strconv.ParseUint(mnr, 10, 32)
		if !ok || err1 != nil || err2 != nil {
			return Node{}, fmt.Errorf("uinput: %s/%s/dev holds %q, want MAJOR:MINOR", dir, e.Name(), raw)
		}
		return Node{Name: e.Name(), Major: uint32(ma), Minor: uint32(mi)}, nil
	}
	return Node{}, fmt.Errorf("uinput: %s has no event node (is the evdev module loaded?)", dir)
}

// Write sends events to the device's readers, in order, in one write; the
// caller ends each frame with SYN_REPORT. An event of a type or code the
// device was not made with is dropped by the input core without error.
func (d *Device) Write(events ...evdev.Event) error {
	d.wmu.Lock()
	defer d.wmu.Unlock()
	d.wbuf = d.wbuf[:0]
	for _, e := range events {
		d.wbuf = evdev.AppendEvent(d.wbuf, e)
	}
	if _, err := d.f.Write(d.wbuf); err != nil {
		return fmt.Errorf("uinput: %s: %w", d.caps.Name, err)
	}
	return nil
}

// Read waits for what the device's readers send back and appends it to
// dst: EV_FF plays and gain changes, EV_LED and EV_SND changes, and
// EV_UINPUT requests (see Request). buf is scratch space of a multiple of
// evdev.EventSize bytes. It returns os.ErrClosed once Close ran.
func (d *Device) Read(dst []evdev.Event, buf []byte) ([]evdev.Event, error) {
	n, err := d.f.Read(buf)
	if err != nil {
		return dst, err
	}
	return evdev.DecodeEvents(dst, buf[:n])
}

// Close destroys the device (its readers' descriptors then read ENODEV)
// and closes the uinput descriptor.
func (d *Device) Close() error {
	err := d.ioctlValue(ioctlDevDestroy, 0)
	if cerr := d.f.Close(); err == nil {
		err = cerr
	}
	if errors.Is(err, os.ErrClosed) {
		return nil
	}
	return err
}

func (d *Device) ioctl(req uintptr, arg unsafe.Pointer) error { return ioctl.Ptr(d.f, req, arg) }

func (d *Device) ioctlValue(req, arg uintptr) error { return ioctl.Value(d.f, req, arg) }
