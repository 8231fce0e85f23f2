// SPDX-License-Identifier: Apache-2.0

//go:build linux && (amd64 || arm64)

package evdev

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"strings"
	"unsafe"

	ioctlpkg "github.com/liken-sh/operators/internal/ioctl"
	"golang.org/x/sys/unix"
)

// Open opens an event node read-write (force feedback is uploaded through
// it), non-blocking and close-on-exec, in Go's poller: a read parks no
// thread, and Close ends a read in progress. A node that does not answer
// EVIOCGID (an ordinary file, another device) is refused with an error
// naming it.
func Open(path string) (*os.File, error) {
	fd, err := unix.Open(path, unix.O_RDWR|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	if errors.Is(err, unix.EACCES) || errors.Is(err, unix.EPERM) || errors.Is(err, unix.EROFS) {
		fd, err = unix.Open(path, unix.O_RDONLY|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	}
	if err != nil {
		return nil, fmt.Errorf("open event node %s: %w", path, err)
	}
	f := os.NewFile(uintptr(fd), path)
	var id inputID
	if err := ioctl(f, ioctlGetID, unsafe.Pointer(&id)); err != nil {
		f.Close()
		return nil, fmt.Errorf("%s is not an event node: %w", path, err)
	}
	return f, nil
}

// ioctl and ioctlValue run one evdev request on f.
func ioctl(f *os.File, req uintptr, arg unsafe.Pointer) error { return ioctlpkg.Ptr(f, req, arg) }

func ioctlValue(f *os.File, req, arg uintptr) error { return ioctlpkg.Value(f, req, arg) }

// ReadCapabilities asks the event node f for the device's identity and
// capabilities. Strings that are not valid UTF-8 have the bad bytes
// replaced, a name longer than NameMax is cut, an axis's value is brought
// into its range and its flat cut to the range's width, so the result
// passes Validate unless the device is one uinput could not copy (an axis
// with min above max, more than 100 touch slots), which is the error. An error (ENODEV once the device is gone) names the
// ioctl that failed.
func ReadCapabilities(f *os.File) (Capabilities, error) {
	var c Capabilities
	var id inputID
	if err := ioctl(f, ioctlGetID, unsafe.Pointer(&id)); err != nil {
		return c, fmt.Errorf("EVIOCGID on %s: %w", f.Name(), err)
	}
	c.ID = ID{Bus: id.Bustype, Vendor: id.Vendor, Product: id.Product, Version: id.Version}
	var err error
	if c.Name, err = readString(f, ioctlGetName, NameMax); err != nil {
		return c, fmt.Errorf("EVIOCGNAME on %s: %w", f.Name(), err)
	}
	if c.Name == "" {
		c.Name = "unnamed input device"
	}
	// A device with no phys or uniq answers ENOENT.
	if c.Phys, err = readString(f, ioctlGetPhys, 63); err != nil && !errors.Is(err, unix.ENOENT) {
		return c, fmt.Errorf("EVIOCGPHYS on %s: %w", f.Name(), err)
	}
	if c.Uniq, err = readString(f, ioctlGetUniq, 63); err != nil && !errors.Is(err, unix.ENOENT) {
		return c, fmt.Errorf("EVIOCGUNIQ on %s: %w", f.Name(), err)
	}
	if c.Properties, err = readBits(f, ioctlGetProp(PropMax/8+1), PropMax); err != nil {
		return c, fmt.Errorf("EVIOCGPROP on %s: %w", f.Name(), err)
	}
	types, err := readBits(f, ioctlGetBit(0, EvMax/8+1), EvMax)
	if err != nil {
		return c, fmt.Errorf("EVIOCGBIT(0) on %s: %w", f.Name(), err)
	}
	has := func(t uint16) bool {
		for _, x := range types {
			if x == t {
				return true
			}
		}
		return false
	}
	lists := []struct {
		typ uint16
		max uint16
		dst *[]uint16
	}{
		{EvKey, KeyMax, &c.Keys}, {EvRel, RelMax, &c.Rel}, {EvMsc, MscMax, &c.Misc},
		{EvSw, SwMax, &c.Switches}, {EvLed, LedMax, &c.LEDs}, {EvSnd, SndMax, &c.Sounds},
		{EvFF, FFMax, &c.ForceFeedback},
	}
	for _, l := range lists {
		if !has(l.typ) {
			continue
		}
		if *l.dst, err = readBits(f, ioctlGetBit(uintptr(l.typ), uintptr(l.max)/8+1), l.max); err != nil {
			return c, fmt.Errorf("EVIOCGBIT(%#x) on %s: %w", l.typ, f.Name(), err)
		}
	}
	if has(EvAbs) {
		codes, err := readBits(f, ioctlGetBit(EvAbs, AbsMax/8+1), AbsMax)
		if err != nil {
			return c, fmt.Errorf("EVIOCGBIT(EV_ABS) on %s: %w", f.Name(), err)
		}
		for _, code := range codes {
			var a Axis
			a.Code = code
			if err := ioctl(f, ioctlGetAbs(uintptr(code)), unsafe.Pointer(&a.AbsInfo)); err != nil {
				return c, fmt.Errorf("EVIOCGABS(%#x) on %s: %w", code, f.Name(), err)
			}
			a.Value = min(max(a.Value, a.Minimum), a.Maximum)
			if rng := int64(a.Maximum) - int64(a.Minimum); rng >= 0 && int64(a.Flat) > rng {
				a.Flat = int32(rng)
			}
			c.Abs = append(c.Abs, a)
		}
	}
	if has(EvFF) {
		var n int32
		if err := ioctl(f, ioctlGetEffects, unsafe.Pointer(&n)); err != nil {
			return c, fmt.Errorf("EVIOCGEFFECTS on %s: %w", f.Name(), err)
		}
		c.FFEffects = uint32(min(max(n, 0), maxFFEffects))
		if len(c.ForceFeedback) == 0 {
			c.FFEffects = 0
		}
	}
	c.Repeat = has(EvRep)
	return c, c.Validate()
}

// readString reads a NUL-terminated string ioctl into a 256-byte buffer
// and returns at most limit bytes of valid UTF-8.
func readString(f *os.File, req func(uintptr) uintptr, limit int) (string, error) {
	var buf [256]byte
	if err := ioctl(f, req(uintptr(len(buf))), unsafe.Pointer(&buf[0])); err != nil {
		return "", err
	}
	s, _, _ := bytes.Cut(buf[:], []byte{0})
	out := strings.ToValidUTF8(string(s), "?")
	for len(out) > limit {
		out = strings.ToValidUTF8(out[:limit], "")
	}
	return out, nil
}

// readBits reads a bitmap ioctl of n bytes and returns the set bits up
// to limit, ascending.
func readBits(f *os.File, req uintptr, limit uint16) ([]uint16, error) {
	size := (req >> 16) & 0x3fff
	buf := make([]byte, size)
	if err := ioctl(f, req, unsafe.Pointer(&buf[0])); err != nil {
		return nil, err
	}
	return Bits(buf, limit), nil
}

// Bits returns the positions of the set bits of a kernel bitmap (an
// array of longs, little-endian on the architectures this is built for,
// so bit n is bit n%8 of byte n/8) that are at most limit, ascending.
func Bits(bitmap []byte, limit uint16) []uint16 {
	var out []uint16
	for i, b := range bitmap {
		for j := range 8 {
			n := i*8 + j
			if n > int(limit) {
				return out
			}
			if b&(1<<j) != 0 {
				out = append(out, uint16(n))
			}
		}
	}
	return out
}

// ReadAbs returns the state and range of axis code of the device behind
// event node f (EVIOCGABS).
func ReadAbs(f *os.File, code uint16) (AbsInfo, error) {
	var a AbsInfo
	if err := ioctl(f, ioctlGetAbs(uintptr(code)), unsafe.Pointer(&a)); err != nil {
		return a, fmt.Errorf("EVIOCGABS(%#x) on %s: %w", code, f.Name(), err)
	}
	return a, nil
}

// ReadKeys returns the keys and buttons that are down now on the device
// behind event node f (EVIOCGKEY), ascending.
func ReadKeys(f *os.File) ([]uint16, error) {
	keys, err := readBits(f, ioc(iocRead, 'E', 0x18, KeyMax/8+1), KeyMax)
	if err != nil {
		return nil, fmt.Errorf("EVIOCGKEY on %s: %w", f.Name(), err)
	}
	return keys, nil
}
