package bluez

import (
	"fmt"
	"path/filepath"
	"strings"

	"github.com/godbus/dbus/v5"
)

// AddressEnv is the environment variable that names the system bus, as the
// D-Bus specification ("Well-known Message Bus Instances") defines it.
const AddressEnv = "DBUS_SYSTEM_BUS_ADDRESS"

// SocketPath returns the socket file named by a D-Bus server address of the
// only form this operator accepts, "unix:path=<absolute path>" (one address,
// no other keys), with the specification's %XX escapes undone.
//
// Other transports (abstract sockets, tcp), several ';'-separated addresses
// or other keys (guid) are refused with an error naming the address: the
// pod shares its bus as a socket file on a hostPath volume, and the
// operator waits for that file to appear, so nothing else could work.
func SocketPath(address string) (string, error) {
	const prefix = "unix:path="
	raw, ok := strings.CutPrefix(address, prefix)
	if !ok {
		return "", fmt.Errorf("bus address %q: only the form unix:path=<absolute path> is supported", address)
	}
	if strings.ContainsAny(raw, ";,=") {
		return "", fmt.Errorf("bus address %q: one unix:path=<absolute path> with no other keys or addresses is supported", address)
	}
	path, err := dbus.UnescapeBusAddressValue(raw)
	if err != nil {
		return "", fmt.Errorf("bus address %q: bad %%-escape: %w", address, err)
	}
	if !filepath.IsAbs(path) || strings.IndexByte(path, 0) >= 0 {
		return "", fmt.Errorf("bus address %q: the path must be absolute and free of NUL bytes", address)
	}
	return path, nil
}
