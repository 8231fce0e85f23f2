// SPDX-License-Identifier: Apache-2.0

package images_test

import (
	"errors"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/godbus/dbus/v5"
	"golang.org/x/sys/unix"
)

// The bluetoothd container's capabilities and bus address
// (deploy/bluetooth/operator.yaml).
var (
	bluetoothdCaps = []string{"CAP_NET_ADMIN", "CAP_NET_RAW", "CAP_NET_BIND_SERVICE", "CAP_SETUID", "CAP_SETGID"}
	bluetoothdEnv  = []string{"DBUS_SYSTEM_BUS_ADDRESS=unix:path=/var/run/bluetooth.liken.sh/dbus/system_bus_socket"}
)

// TestBluetoothdImage runs the image's entrypoint as the pod's bluetoothd
// sidecar runs: PID 1 of its own PID namespace, deploy/bluetooth/operator.yaml's capabilities,
// the bus directory and the bonds volume mounted. It starts dbus-daemon,
// whose socket appears in the shared directory, and execs bluetoothd,
// which gets on the bus and then, on a kernel without AF_BLUETOOTH (this
// one), fails to open the management interface and exits 1: that exit is
// the container's, and the bus ends with it. A second run in the test's
// PID namespace keeps the bus the entrypoint started alive after
// bluetoothd exits, and ListNames answers on it.
func TestBluetoothdImage(t *testing.T) {
	img := unpack(t, "bluetoothd")
	entry := img.config.Config.Entrypoint
	tools := sandbox{image: img}
	for _, argv := range [][]string{
		{"/usr/bin/dbus-daemon", "--version"}, {"/usr/libexec/bluetooth/bluetoothd", "--version"},
		{"/usr/bin/bluetoothctl", "--version"}, {"/usr/bin/btmon", "--version"}, {"/usr/bin/btmgmt", "--version"},
	} {
		if r := tools.run(t, time.Minute, argv...); r.exit != 0 {
			t.Errorf("%s: exit %d (%v)\n%s%s", strings.Join(argv, " "), r.exit, r.err, r.stdout, r.stderr)
		}
	}

	t.Run("as the pod runs it", func(t *testing.T) {
		bus, bonds := t.TempDir(), t.TempDir()
		s := sandbox{image: img, writable: true, caps: bluetoothdCaps, env: bluetoothdEnv, binds: []bind{
			{host: bus, path: "/run/bluetooth.liken.sh/dbus"}, {host: bonds, path: "/var/lib/bluetooth"}}}
		r := s.run(t, 30*time.Second, entry...)
		t.Logf("exit %d; output:\n%s%s", r.exit, r.stdout, r.stderr)
		if r.exit != 1 || strings.Contains(r.stderr, "bluetoothd entrypoint:") {
			t.Errorf("exit %d (%v), want bluetoothd's own 1 and no entrypoint failure", r.exit, r.err)
		}
		// bluetoothd logs under its PID: 1, the entrypoint's, which it
		// replaced. It got on the bus before it looked for the kernel's
		// management interface (else "Unable to get on D-Bus").
		for _, want := range []string{"bluetoothd[1]: Bluetooth daemon 5.", "Failed to access management interface", "Adapter handling initialization failed"} {
			if !strings.Contains(r.stderr, want) {
				t.Errorf("bluetoothd's output lacks %q", want)
			}
		}
		socket := filepath.Join(bus, "system_bus_socket")
		fi, err := os.Lstat(socket)
		if err != nil || fi.Mode().Type() != os.ModeSocket {
			t.Fatalf("bus socket: %v (%v)", fi, err)
		}
		// The PID namespace went with PID 1, and dbus-daemon with it.
		if c, err := net.Dial("unix", socket); err == nil {
			c.Close()
			t.Error("the bus still accepts connections after the container exited")
		} else if !errors.Is(err, syscall.ECONNREFUSED) {
			t.Errorf("dial the ended bus: %v, want connection refused", err)
		}
		conf, err := os.ReadFile(filepath.Join(img.root, "etc", "bluetooth", "main.conf"))
		if err != nil || !strings.Contains(string(conf), "AutoEnable=true") {
			t.Errorf("main.conf the entrypoint wrote: %q (%v)", conf, err)
		}
	})

	t.Run("the bus answers ListNames", func(t *testing.T) {
		// dbus-daemon outlives bluetoothd when they share this test's
		// PID namespace; as the subreaper, the test inherits and reaps it.
		if err := unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			_ = unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 0, 0, 0, 0)
			reapOrphanedBus(t)
		})
		bus := t.TempDir()
		s := sandbox{image: img, writable: true, sharePID: true, caps: bluetoothdCaps, env: bluetoothdEnv, binds: []bind{
			{host: bus, path: "/run/bluetooth.liken.sh/dbus"}, {host: t.TempDir(), path: "/var/lib/bluetooth"}}}
		r := s.run(t, 30*time.Second, entry...)
		if r.exit != 1 || !strings.Contains(r.stderr, "Adapter handling initialization failed") {
			t.Fatalf("exit %d (%v), want bluetoothd's 1:\n%s%s", r.exit, r.err, r.stdout, r.stderr)
		}
		conn, err := dbus.Connect("unix:path=" + filepath.Join(bus, "system_bus_socket"))
		if err != nil {
			t.Fatalf("connect to the bus the entrypoint started: %v", err)
		}
		defer conn.Close()
		var pid uint32
		if err := conn.BusObject().Call("org.freedesktop.DBus.GetConnectionUnixProcessID", 0, "org.freedesktop.DBus").Store(&pid); err != nil {
			t.Fatal(err)
		}
		var names []string
		if err := conn.BusObject().Call("org.freedesktop.DBus.ListNames", 0).Store(&names); err != nil {
			t.Fatalf("ListNames: %v", err)
		}
		if !slices.Contains(names, "org.freedesktop.DBus") || !slices.Contains(names, conn.Names()[0]) {
			t.Errorf("ListNames = %q, want the bus and this connection", names)
		}
		comm, err := os.ReadFile("/proc/" + strconv.FormatUint(uint64(pid), 10) + "/comm")
		if err != nil || strings.TrimSpace(string(comm)) != "dbus-daemon" {
			t.Errorf("the bus is served by pid %d %q (%v), want dbus-daemon", pid, comm, err)
		}
		t.Logf("ListNames on the entrypoint's bus: %q (dbus-daemon pid %d)", names, pid)
	})
}

// reapOrphanedBus ends and reaps the dbus-daemon the entrypoint started,
// which became this process's child when bluetoothd exited: every child
// of this process named dbus-daemon is it, as no other test here starts
// one in this PID namespace.
func reapOrphanedBus(t *testing.T) {
	t.Helper()
	lists, _ := filepath.Glob("/proc/self/task/*/children")
	for _, list := range lists {
		data, _ := os.ReadFile(list)
		for _, field := range strings.Fields(string(data)) {
			pid, err := strconv.Atoi(field)
			if err != nil {
				continue
			}
			comm, _ := os.ReadFile("/proc/" + field + "/comm")
			if strings.TrimSpace(string(comm)) != "dbus-daemon" {
				continue
			}
			_ = syscall.Kill(pid, syscall.SIGKILL)
			var ws syscall.WaitStatus
			if _, err := syscall.Wait4(pid, &ws, 0, nil); err != nil {
				t.Errorf("reap dbus-daemon %d: %v", pid, err)
			}
		}
	}
}
