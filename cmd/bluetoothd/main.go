// SPDX-License-Identifier: Apache-2.0

// Command bluetoothd is the entrypoint of the bluetoothd image, run as the
// operator pod's native sidecar (deploy/bluetooth/operator.yaml, container "bluetoothd"). It
// starts the private system bus that bluetoothd and the operator share,
// writes BlueZ's configuration, and then becomes bluetoothd.
//
// Steps, each failing with exit status 1 and a message naming what failed:
//
//  1. Read DBUS_SYSTEM_BUS_ADDRESS (default DefaultBusAddress); only
//     unix:path=/absolute/path is served. Read
//     BLUETOOTH_CLASSIC_BONDED_ONLY: unset or empty means true, otherwise
//     exactly "true" or "false".
//  2. Create the socket's directory (0755) and make sure a file can be
//     created in it, so that a socket path the bus could never listen at
//     (under /proc or /sys, say) fails here.
//  3. Write <config-dir>/main.conf ([Policy] AutoEnable=true, so an
//     adapter is powered when it appears) and <config-dir>/input.conf
//     ([General] ClassicBondedOnly=<value>), mode 0644.
//  4. Start dbus-daemon with the distribution's system configuration, whose
//     system.d holds BlueZ's bus policy, listening at the address, and
//     wait (10 s at most) until a client can connect to it.
//  5. Exec bluetoothd -n, so that bluetoothd takes this process's PID (PID 1
//     of the container), receives the container's signals directly, and
//     its exit status is the container's.
//
// Every input is checked before anything is written or started, and the
// socket's directory before any configuration is written, so bad input
// changes nothing.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"

	"github.com/liken-sh/operators/internal/dbusd"
	"github.com/liken-sh/operators/internal/regularfile"
)

const (
	// EnvBusAddress names the bus to serve; bluetoothd inherits it.
	EnvBusAddress = "DBUS_SYSTEM_BUS_ADDRESS"
	// DefaultBusAddress is served when EnvBusAddress is unset or empty:
	// the socket in the hostPath directory deploy/bluetooth/operator.yaml mounts at
	// /var/run/bluetooth.liken.sh/dbus.
	DefaultBusAddress = "unix:path=/var/run/bluetooth.liken.sh/dbus/system_bus_socket"
	// EnvClassicBondedOnly sets input.conf's ClassicBondedOnly.
	EnvClassicBondedOnly = "BLUETOOTH_CLASSIC_BONDED_ONLY"
	// DefaultConfigDir is where bluetoothd reads main.conf and its input
	// plugin reads input.conf (BlueZ's CONFIGDIR).
	DefaultConfigDir = "/etc/bluetooth"
	// DefaultBluetoothd is the daemon's path in Debian's bluez package
	// and in the image.
	DefaultBluetoothd = "/usr/libexec/bluetooth/bluetoothd"
	// busDirMode is the socket directory's mode: others must reach the
	// socket, which dbus-daemon makes world-connectable itself.
	busDirMode = 0o755
)

// version is the release, set at build time with -ldflags "-X main.version=..."
// (hack/build-images.sh); "-version" as the only argument prints it.
var version = "dev"

func main() {
	if len(os.Args) == 2 && (os.Args[1] == "-version" || os.Args[1] == "--version") {
		fmt.Println(version)
		return
	}
	err := run(os.Args[1:], os.Getenv, os.Stderr)
	// run returns only on failure: on success the process is bluetoothd.
	fmt.Fprintf(os.Stderr, "bluetoothd entrypoint: %v\n", err)
	os.Exit(1)
}

// run performs the steps of the package comment and execs bluetoothd; it
// returns only with an error. Flags exist for tests: -config-dir points the
// configuration elsewhere, -bluetoothd runs another program in
// bluetoothd's place, -bus-timeout bounds the wait for the bus.
func run(args []string, getenv func(string) string, stderr io.Writer) error {
	flags := flag.NewFlagSet("bluetoothd", flag.ContinueOnError)
	flags.SetOutput(stderr)
	configDir := flags.String("config-dir", DefaultConfigDir, "directory to write main.conf and input.conf into")
	bluetoothd := flags.String("bluetoothd", DefaultBluetoothd, "bluetoothd binary to exec")
	busTimeout := flags.Duration("bus-timeout", dbusd.DefaultReadyTimeout, "how long to wait for the bus to accept a client")
	if err := flags.Parse(args); err != nil {
		return err
	}
	if flags.NArg() > 0 {
		return fmt.Errorf("unexpected arguments %q", flags.Args())
	}

	address := getenv(EnvBusAddress)
	if address == "" {
		address = DefaultBusAddress
	}
	socketPath, err := dbusd.SocketPath(address)
	if err != nil {
		return fmt.Errorf("%s: %w", EnvBusAddress, err)
	}
	bondedOnly, err := parseClassicBondedOnly(getenv(EnvClassicBondedOnly))
	if err != nil {
		return err
	}
	if err := checkExecutable(*bluetoothd); err != nil {
		return err
	}
	if err := checkSocketPath(socketPath); err != nil {
		return err
	}

	if err := prepareSocketDir(socketPath); err != nil {
		return err
	}
	if err := writeConfig(*configDir, bondedOnly); err != nil {
		return err
	}
	bus, err := dbusd.Start(context.Background(), dbusd.Options{
		SocketPath:   socketPath,
		Policy:       dbusd.PolicySystem,
		Stdout:       os.Stdout,
		Stderr:       os.Stderr,
		ReadyTimeout: *busTimeout,
	})
	if err != nil {
		return fmt.Errorf("start the system bus at %s: %w", address, err)
	}

	// The bus stays a child of this PID, and so of bluetoothd after the
	// exec; in the container it ends with PID 1.
	env := setenv(os.Environ(), EnvBusAddress, address)
	err = syscall.Exec(*bluetoothd, []string{*bluetoothd, "-n"}, env)
	bus.Stop()
	return fmt.Errorf("exec %s: %w", *bluetoothd, err)
}

// checkExecutable fails early, before the bus starts, when path cannot be
// exec'd.
func checkExecutable(path string) error {
	fi, err := os.Stat(path)
	if err != nil {
		return fmt.Errorf("bluetoothd: %w", err)
	}
	if fi.IsDir() || fi.Mode().Perm()&0o111 == 0 {
		return fmt.Errorf("bluetoothd: %s is not an executable file", path)
	}
	return nil
}

// checkSocketPath fails early when something other than a socket sits
// where the bus must listen: that file is not ours to replace. A stale
// socket is fine; dbusd replaces it.
func checkSocketPath(path string) error {
	fi, err := os.Lstat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("%s: %w", EnvBusAddress, err)
	}
	if fi.Mode().Type() != fs.ModeSocket {
		return fmt.Errorf("%s: %s is a %s, not a socket; not replacing it", EnvBusAddress, path, regularfile.Kind(fi.Mode()))
	}
	return nil
}

// prepareSocketDir creates the directory of the bus socket (busDirMode)
// and checks that a file can be created in it, with a probe file removed
// at once. It runs before any configuration is written: a directory that
// cannot be made, or one where nothing can be created (procfs, sysfs, a
// read-only mount), would only fail later, when dbus-daemon binds.
func prepareSocketDir(socketPath string) error {
	dir := filepath.Dir(socketPath)
	if err := os.MkdirAll(dir, busDirMode); err != nil {
		return fmt.Errorf("%s: cannot create the bus socket's directory %s: %w", EnvBusAddress, dir, err)
	}
	probe, err := os.CreateTemp(dir, ".bluetoothd-probe-*")
	if err != nil {
		return fmt.Errorf("%s: cannot create the bus socket in %s: %w", EnvBusAddress, dir, err)
	}
	name := probe.Name()
	probe.Close()
	if err := os.Remove(name); err != nil {
		return fmt.Errorf("%s: remove the probe file in %s: %w", EnvBusAddress, dir, err)
	}
	return nil
}

// setenv returns env with key set to value, replacing any earlier entries.
func setenv(env []string, key, value string) []string {
	out := make([]string, 0, len(env)+1)
	for _, kv := range env {
		if len(kv) > len(key) && kv[:len(key)] == key && kv[len(key)] == '=' {
			continue
		}
		out = append(out, kv)
	}
	return append(out, key+"="+value)
}
