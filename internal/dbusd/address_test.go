// SPDX-License-Identifier: Apache-2.0

package dbusd

import (
	"strconv"
	"strings"
	"testing"

	"github.com/godbus/dbus/v5"
)

func TestSocketPathAccepts(t *testing.T) {
	for address, want := range map[string]string{
		"unix:path=/var/run/bluetooth.liken.sh/dbus/system_bus_socket": "/var/run/bluetooth.liken.sh/dbus/system_bus_socket",
		"unix:path=/tmp/a%20b":        "/tmp/a b",
		"unix:path=/tmp/%2c%3B%3d":    "/tmp/,;=",
		"unix:path=/run/x-y_z.\\*":    "/run/x-y_z.\\*",
		"unix:path=/%2Ftmp%2fsock%41": "//tmp/sockA",
	} {
		got, err := SocketPath(address)
		if err != nil {
			t.Errorf("SocketPath(%q): %v", address, err)
			continue
		}
		if got != want {
			t.Errorf("SocketPath(%q) = %q, want %q", address, got, want)
		}
	}
}

func TestSocketPathRejects(t *testing.T) {
	for address, wantInErr := range map[string]string{
		"":                                       "only the form unix:path=",
		"/var/run/dbus/system_bus_socket":        "only the form unix:path=",
		"tcp:host=localhost,port=1234":           "only the form unix:path=",
		"unix:abstract=/tmp/dbus":                "only the form unix:path=",
		"unix:tmpdir=/tmp":                       "only the form unix:path=",
		"unixexec:path=/bin/sh":                  "only the form unix:path=",
		"UNIX:path=/tmp/s":                       "only the form unix:path=",
		"unix:path=":                             "path is empty",
		"unix:path=relative/socket":              "is not absolute",
		"unix:path=/tmp/s;unix:path=/tmp/t":      "list of addresses",
		"unix:path=/tmp/s;":                      "list of addresses",
		"unix:path=/tmp/s,guid=0123":             "no other keys",
		"unix:path=/tmp/a b":                     "must be written as %20",
		"unix:path=/tmp/%2":                      "cut short",
		"unix:path=/tmp/%zz":                     "two hex digits",
		"unix:path=/tmp/%00":                     "NUL byte",
		"unix:path=/tmp/dir/":                    "names a directory",
		"unix:path=/" + strings.Repeat("x", 107): "longer than a unix socket's 107",
	} {
		_, err := SocketPath(address)
		if err == nil {
			t.Errorf("SocketPath(%q) accepted it", address)
			continue
		}
		if !strings.Contains(err.Error(), wantInErr) {
			t.Errorf("SocketPath(%q) = %v, want an error containing %q", address, err, wantInErr)
		}
		if !strings.Contains(err.Error(), strconv.Quote(address)) {
			t.Errorf("SocketPath(%q) error %q does not quote the address", address, err)
		}
	}
}

func TestAddressRoundTrip(t *testing.T) {
	for _, path := range []string{"/tmp/plain", "/tmp/with space/s", "/tmp/é,;=%"} {
		a := Address(path)
		if strings.ContainsAny(a[len("unix:path="):], " ,;=") {
			t.Errorf("Address(%q) = %q leaves a reserved byte unescaped", path, a)
		}
		got, err := SocketPath(a)
		if err != nil || got != path {
			t.Errorf("SocketPath(Address(%q)) = %q, %v", path, got, err)
		}
	}
}

// FuzzSocketPath: an accepted address names an absolute path without NUL,
// and the path's own address parses back to the same path, as does the
// address godbus escapes for it (the bluez client dials with godbus).
func FuzzSocketPath(f *testing.F) {
	for _, s := range []string{
		"unix:path=/var/run/bluetooth.liken.sh/dbus/system_bus_socket",
		"unix:path=/tmp/a%20b", "unix:path=/tmp/%2", "tcp:host=x", "unix:path=/x,guid=1",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, address string) {
		path, err := SocketPath(address)
		if err != nil {
			return
		}
		if path == "" || path[0] != '/' || strings.IndexByte(path, 0) >= 0 {
			t.Fatalf("SocketPath(%q) = %q", address, path)
		}
		again, err := SocketPath(Address(path))
		if err != nil || again != path {
			t.Fatalf("round trip of %q: %q, %v", path, again, err)
		}
		again, err = SocketPath(unixPathPrefix + dbus.EscapeBusAddressValue(path))
		if err != nil || again != path {
			t.Fatalf("round trip of %q through godbus's escape: %q, %v", path, again, err)
		}
	})
}
