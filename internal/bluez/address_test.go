package bluez

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/godbus/dbus/v5"
)

func TestSocketPath(t *testing.T) {
	good := map[string]string{
		"unix:path=/var/run/bluetooth.liken.sh/dbus/system_bus_socket": "/var/run/bluetooth.liken.sh/dbus/system_bus_socket",
		"unix:path=/tmp/a%20b": "/tmp/a b",
		"unix:path=/tmp/%2c":   "/tmp/,",
	}
	for in, want := range good {
		got, err := SocketPath(in)
		if err != nil || got != want {
			t.Errorf("SocketPath(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	bad := []string{
		"",
		"/var/run/dbus/system_bus_socket",
		"unix:abstract=/tmp/dbus-x",
		"unix:path=relative/socket",
		"unix:path=",
		"tcp:host=localhost,port=1234",
		"unix:path=/a;unix:path=/b",
		"unix:path=/a,guid=0123",
		"unix:path=/a%2",
		"unix:path=/a%zz",
		"unix:path=/a%00b",
		"UNIX:path=/a",
	}
	for _, in := range bad {
		if got, err := SocketPath(in); err == nil {
			t.Errorf("SocketPath(%q) = %q, want an error", in, got)
		} else if in != "" && !strings.Contains(err.Error(), in) {
			t.Errorf("SocketPath(%q): error %q does not name the address", in, err)
		}
	}
}

// FuzzSocketPath: the address comes from the environment. An accepted
// address names an absolute path, and escaping that path again gives an
// address with the same meaning.
func FuzzSocketPath(f *testing.F) {
	for _, s := range []string{"unix:path=/run/dbus/system_bus_socket", "unix:path=/a%20b", "unix:abstract=x", "unix:path=/a;b", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, address string) {
		p, err := SocketPath(address)
		if err != nil {
			return
		}
		if !filepath.IsAbs(p) || strings.IndexByte(p, 0) >= 0 {
			t.Fatalf("SocketPath(%q) = %q: not an absolute path", address, p)
		}
		again, err := SocketPath("unix:path=" + dbus.EscapeBusAddressValue(p))
		if err != nil || again != p {
			t.Fatalf("round trip of %q: %q, %v", p, again, err)
		}
	})
}
