// SPDX-License-Identifier: Apache-2.0

package dbusd

import (
	"fmt"
	"path/filepath"
	"strings"
)

// unixPathPrefix is the transport and key of the one address form served.
const unixPathPrefix = "unix:path="

// MaxSocketPath is the longest socket path the kernel binds: sun_path holds
// 108 bytes with the terminating NUL (include/uapi/linux/un.h,
// UNIX_PATH_MAX). dbus-daemon fails a longer one with "Socket name too
// long".
const MaxSocketPath = 107

// SocketPath returns the socket path named by a D-Bus address of the form
// unix:path=/absolute/path, with the address's %XX escapes decoded (D-Bus
// specification, "Server Addresses").
//
// Anything else is an error naming what is wrong: another transport
// (tcp:, unix:abstract=, unixexec:), more than one address (';'), other
// keys (",guid=" and the like), an empty or relative path, a path longer
// than MaxSocketPath, a byte that the specification requires escaped but
// that is not, a malformed escape, or a NUL byte.
func SocketPath(address string) (string, error) {
	if !strings.HasPrefix(address, unixPathPrefix) {
		return "", fmt.Errorf("D-Bus address %q: only the form unix:path=/absolute/path is served", address)
	}
	value := address[len(unixPathPrefix):]
	if strings.Contains(value, ";") {
		return "", fmt.Errorf("D-Bus address %q: a list of addresses is not served, give exactly one", address)
	}
	if strings.Contains(value, ",") {
		return "", fmt.Errorf("D-Bus address %q: only the path key is served, no other keys", address)
	}
	path, err := unescape(value)
	if err != nil {
		return "", fmt.Errorf("D-Bus address %q: %w", address, err)
	}
	if path == "" {
		return "", fmt.Errorf("D-Bus address %q: the path is empty", address)
	}
	if strings.IndexByte(path, 0) >= 0 {
		return "", fmt.Errorf("D-Bus address %q: the path holds a NUL byte", address)
	}
	if !filepath.IsAbs(path) {
		return "", fmt.Errorf("D-Bus address %q: the path %q is not absolute", address, path)
	}
	if len(path) > MaxSocketPath {
		return "", fmt.Errorf("D-Bus address %q: the path is %d bytes, longer than a unix socket's %d", address, len(path), MaxSocketPath)
	}
	if strings.HasSuffix(path, "/") {
		return "", fmt.Errorf("D-Bus address %q: the path %q names a directory, not a socket", address, path)
	}
	return path, nil
}

// Address returns the unix:path= address of a socket path, escaping every
// byte outside the specification's optionally-escaped set.
func Address(socketPath string) string {
	var b strings.Builder
	b.WriteString(unixPathPrefix)
	for i := 0; i < len(socketPath); i++ {
		c := socketPath[i]
		if plainByte(c) {
			b.WriteByte(c)
		} else {
			fmt.Fprintf(&b, "%%%02x", c)
		}
	}
	return b.String()
}

// plainByte reports whether c may appear unescaped in an address value:
// the D-Bus specification's optionally-escaped bytes [-0-9A-Za-z_/.\*].
func plainByte(c byte) bool {
	switch {
	case c >= '0' && c <= '9', c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z':
		return true
	}
	return strings.IndexByte(`-_/.\*`, c) >= 0
}

// unescape decodes an address value: %XX is one byte, every other byte must
// be an optionally-escaped one. libdbus rejects the same inputs
// (dbus_address_unescape_value), so an address accepted here is one
// dbus-daemon and bluetoothd accept too.
func unescape(v string) (string, error) {
	var b strings.Builder
	for i := 0; i < len(v); i++ {
		c := v[i]
		if c == '%' {
			if i+2 >= len(v) {
				return "", fmt.Errorf("escape at byte %d is cut short", i)
			}
			hi, ok1 := hexValue(v[i+1])
			lo, ok2 := hexValue(v[i+2])
			if !ok1 || !ok2 {
				return "", fmt.Errorf("escape %q at byte %d is not %%XX with two hex digits", v[i:i+3], i)
			}
			b.WriteByte(hi<<4 | lo)
			i += 2
			continue
		}
		if !plainByte(c) {
			return "", fmt.Errorf("byte %q at %d must be written as %%%02x", c, i, c)
		}
		b.WriteByte(c)
	}
	return b.String(), nil
}

// hexValue decodes one hexadecimal digit of either case.
func hexValue(c byte) (byte, bool) {
	switch {
	case c >= '0' && c <= '9':
		return c - '0', true
	case c >= 'a' && c <= 'f':
		return c - 'a' + 10, true
	case c >= 'A' && c <= 'F':
		return c - 'A' + 10, true
	}
	return 0, false
}
