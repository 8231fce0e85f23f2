// SPDX-License-Identifier: Apache-2.0

package hid

import "fmt"

// normalizeAddress returns s, a Bluetooth device address of six two-digit
// hex octets separated by colons in either case, in BlueZ's spelling
// (upper case). The kernel prints HID_UNIQ and HID_PHYS with %pMR (lower
// case, net/bluetooth/hidp/core.c), BlueZ's uhid with lower or upper case
// depending on its version; both spell the same address.
func normalizeAddress(s string) (string, error) {
	if len(s) != 17 {
		return "", fmt.Errorf("%q is not a Bluetooth address (want 6 hex octets separated by colons)", clipString(s))
	}
	out := []byte(s)
	for i := 0; i < len(out); i++ {
		c := out[i]
		if i%3 == 2 {
			if c != ':' {
				return "", fmt.Errorf("%q is not a Bluetooth address (want ':' at offset %d)", s, i)
			}
			continue
		}
		switch {
		case c >= '0' && c <= '9', c >= 'A' && c <= 'F':
		case c >= 'a' && c <= 'f':
			out[i] = c - 'a' + 'A'
		default:
			return "", fmt.Errorf("%q is not a Bluetooth address (%q at offset %d is not hex)", s, c, i)
		}
	}
	return string(out), nil
}

// clipString shortens untrusted text quoted in an error message.
func clipString(s string) string {
	const max = 64
	if len(s) > max {
		return s[:max] + "..."
	}
	return s
}
