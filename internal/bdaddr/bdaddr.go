// SPDX-License-Identifier: Apache-2.0

// Package bdaddr is the Bluetooth device address (BD_ADDR): one 48-bit
// value that names an adapter or a remote device, and the two ways this
// project spells it.
//
// BlueZ spells an address in uppercase hexadecimal with colons,
// "E4:17:D8:C5:67:6D"; that is the name of its storage directories and the
// Address property on D-Bus. Kubernetes names, label values and Secret keys
// allow neither colons nor uppercase, so there the same address is written
// in lowercase with dashes, "e4-17-d8-c5-67-6d". The kernel holds the octets in the other order: its bdaddr_t puts
// the least significant octet first (include/net/bluetooth/bluetooth.h).
package bdaddr

import (
	"errors"
	"fmt"
)

// Address is a Bluetooth device address, most significant octet first: the
// order in which it is printed. The zero value is BDADDR_ANY
// (00:00:00:00:00:00), which names no device.
type Address [6]byte

// textLen is the length of either spelling: six two-digit octets and five
// separators.
const textLen = 17

// ErrSyntax is wrapped by every error Parse returns.
var ErrSyntax = errors.New("not a Bluetooth address")

// Parse reads an address in either spelling: six octets of exactly two
// hexadecimal digits each, in either case, separated all by colons or all by
// dashes. Anything else (other lengths, mixed separators, signs, spaces)
// returns an error wrapping ErrSyntax that quotes the input.
func Parse(s string) (Address, error) {
	var a Address
	if len(s) != textLen {
		return a, fmt.Errorf("%w: %q has %d characters, want 17", ErrSyntax, s, len(s))
	}
	sep := s[2]
	if sep != ':' && sep != '-' {
		return a, fmt.Errorf("%w: %q: octets must be separated by ':' or '-'", ErrSyntax, s)
	}
	for i := range a {
		at := i * 3
		if i > 0 && s[at-1] != sep {
			return a, fmt.Errorf("%w: %q: separator at %d is not %q", ErrSyntax, s, at-1, sep)
		}
		hi, ok1 := hexDigit(s[at])
		lo, ok2 := hexDigit(s[at+1])
		if !ok1 || !ok2 {
			return a, fmt.Errorf("%w: %q: octet %d is not two hex digits", ErrSyntax, s, i+1)
		}
		a[i] = hi<<4 | lo
	}
	return a, nil
}

// hexDigit decodes one hexadecimal digit of either case. strconv would also
// take signs and "0x" prefixes, which an address never has.
func hexDigit(c byte) (byte, bool) {
	switch {
	case '0' <= c && c <= '9':
		return c - '0', true
	case 'a' <= c && c <= 'f':
		return c - 'a' + 10, true
	case 'A' <= c && c <= 'F':
		return c - 'A' + 10, true
	}
	return 0, false
}

// FromKernel converts the kernel's bdaddr_t, least significant octet first
// (as in struct hci_dev_info and every HCI and mgmt frame), to an Address.
func FromKernel(b [6]byte) Address {
	var a Address
	for i := range a {
		a[i] = b[5-i]
	}
	return a
}

// Kernel returns the address in the kernel's bdaddr_t order, least
// significant octet first; the inverse of FromKernel.
func (a Address) Kernel() [6]byte { return [6]byte(FromKernel(a)) }

// IsZero reports whether a is 00:00:00:00:00:00, which the kernel reports
// for an adapter whose address it has not read yet.
func (a Address) IsZero() bool { return a == Address{} }

// IsBroadcast reports whether a is FF:FF:FF:FF:FF:FF, the broadcast
// address (BDADDR_NONE in the kernel's include/net/bluetooth/bluetooth.h),
// which names no single device.
func (a Address) IsBroadcast() bool { return a == Address{0xff, 0xff, 0xff, 0xff, 0xff, 0xff} }

// String returns BlueZ's spelling, uppercase with colons:
// "E4:17:D8:C5:67:6D". It is the name of the address's directory under
// /var/lib/bluetooth.
func (a Address) String() string { return a.format(':', "0123456789ABCDEF") }

// Key returns the Kubernetes spelling, lowercase with dashes:
// "e4-17-d8-c5-67-6d". It is a valid label value, DNS label and Secret key.
func (a Address) Key() string { return a.format('-', "0123456789abcdef") }

func (a Address) format(sep byte, digits string) string {
	b := make([]byte, 0, textLen)
	for i, o := range a {
		if i > 0 {
			b = append(b, sep)
		}
		b = append(b, digits[o>>4], digits[o&0xf])
	}
	return string(b)
}

// MustParse is Parse for addresses written in the program (tests, the
// demo); it panics on a malformed one.
func MustParse(s string) Address {
	a, err := Parse(s)
	if err != nil {
		panic(err)
	}
	return a
}
