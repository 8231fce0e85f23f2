// SPDX-License-Identifier: Apache-2.0

package bluez

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/godbus/dbus/v5"

	"github.com/liken-sh/operators/internal/tailbuf"
	"github.com/liken-sh/operators/test/poll"
)

// testBus is a real dbus-daemon with a system-type configuration on a
// private socket, and optionally python3-dbusmock's bluez5 template on it.
type testBus struct {
	t       *testing.T
	dir     string
	address string
	socket  string
	daemon  *exec.Cmd
	mock    *exec.Cmd
	ctl     *dbus.Conn      // the test's own connection, to drive the mock
	logs    *tailbuf.Buffer // the children's output, for failure messages
}

// busConfig is a system bus with a permissive policy: the tests are about
// the client, not about BlueZ's bus policy.
const busConfig = `<!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-Bus Bus Configuration 1.0//EN"
 "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
<busconfig>
  <type>system</type>
  <listen>unix:path=%s</listen>
  <auth>EXTERNAL</auth>
  <policy context="default">
    <allow user="*"/>
    <allow own="*"/>
    <allow send_type="method_call"/>
    <allow send_type="signal"/>
    <allow send_type="method_return"/>
    <allow send_type="error"/>
    <allow receive_type="method_call"/>
    <allow receive_type="signal"/>
    <allow receive_type="method_return"/>
    <allow receive_type="error"/>
  </policy>
</busconfig>
`

// newTestBus prepares the bus directory and address without starting
// anything, so a test can start the daemon late.
func newTestBus(t *testing.T) *testBus {
	t.Helper()
	dir := t.TempDir()
	socket := filepath.Join(dir, "system_bus_socket")
	b := &testBus{t: t, dir: dir, socket: socket, address: "unix:path=" + socket, logs: tailbuf.New(1 << 20)}
	t.Cleanup(b.stopAll)
	return b
}

// startTestBus starts the daemon and the BlueZ mock.
func startTestBus(t *testing.T) *testBus {
	b := newTestBus(t)
	b.startDaemon()
	b.startMock()
	return b
}

func (b *testBus) startDaemon() {
	b.t.Helper()
	conf := filepath.Join(b.dir, "system.conf")
	if err := os.WriteFile(conf, fmt.Appendf(nil, busConfig, b.socket), 0o644); err != nil {
		b.t.Fatal(err)
	}
	cmd := exec.Command("dbus-daemon", "--config-file="+conf, "--nofork", "--nopidfile", "--print-address")
	out, err := cmd.StdoutPipe()
	if err != nil {
		b.t.Fatal(err)
	}
	cmd.Stderr = b.logs
	if err := cmd.Start(); err != nil {
		b.t.Fatalf("starting dbus-daemon: %v", err)
	}
	b.daemon = cmd
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		b.t.Fatalf("dbus-daemon printed no address: %v; log: %s", err, b.logs)
	}
	go io.Copy(io.Discard, out)
	if !strings.HasPrefix(line, "unix:path="+b.socket) {
		b.t.Fatalf("dbus-daemon listens at %q, want %s", line, b.socket)
	}
}

// startMock starts dbusmock's BlueZ template and waits until it owns
// org.bluez. The Debian module is only visible to /usr/bin/python3.
func (b *testBus) startMock() {
	b.t.Helper()
	cmd := exec.Command("/usr/bin/python3", "-m", "dbusmock", "--system", "--template", "bluez5")
	cmd.Env = append(os.Environ(), AddressEnv+"="+b.address)
	cmd.Stdout, cmd.Stderr = b.logs, b.logs
	if err := cmd.Start(); err != nil {
		b.t.Fatalf("starting dbusmock: %v", err)
	}
	b.mock = cmd
	ctl := b.control()
	poll.WaitFor(b.t, context.Background(), "dbusmock taking org.bluez", time.Minute, func() (bool, string) {
		var has bool
		if err := ctl.BusObject().Call("org.freedesktop.DBus.NameHasOwner", 0, Service).Store(&has); err != nil {
			b.t.Fatal(err)
		}
		return has, fmt.Sprintf("log: %s", b.logs)
	})
}

// control returns the test's own connection to the bus.
func (b *testBus) control() *dbus.Conn {
	b.t.Helper()
	if b.ctl == nil {
		conn, err := dbus.Connect(b.address)
		if err != nil {
			b.t.Fatalf("test connection: %v", err)
		}
		b.ctl = conn
	}
	return b.ctl
}

// mockCall calls a method of the bluez5 template's org.bluez.Mock
// interface on "/".
func (b *testBus) mockCall(method string, args ...any) {
	b.t.Helper()
	call := b.control().Object(Service, "/").Call("org.bluez.Mock."+method, 0, args...)
	if call.Err != nil {
		b.t.Fatalf("org.bluez.Mock.%s%v: %v", method, args, call.Err)
	}
}

// mockProps sets properties on a mock object through dbusmock's generic
// org.freedesktop.DBus.Mock interface: UpdateProperties emits
// PropertiesChanged, AddProperties does not.
func (b *testBus) mockProps(method string, path dbus.ObjectPath, iface string, props map[string]dbus.Variant) {
	b.t.Helper()
	call := b.control().Object(Service, path).Call("org.freedesktop.DBus.Mock."+method, 0, iface, props)
	if call.Err != nil {
		b.t.Fatalf("%s %s %v: %v", method, path, props, call.Err)
	}
}

// stopMock ends bluetoothd's stand-in, as a crash would.
func (b *testBus) stopMock() {
	if b.mock != nil && b.mock.Process != nil {
		b.mock.Process.Kill()
		b.mock.Wait()
		b.mock = nil
	}
}

func (b *testBus) stopAll() {
	if b.ctl != nil {
		b.ctl.Close()
	}
	b.stopMock()
	if b.daemon != nil && b.daemon.Process != nil {
		b.daemon.Process.Signal(syscall.SIGTERM)
		b.daemon.Wait()
		b.daemon = nil
	}
}

// connect connects a client with bounds that only a failure reaches.
func (b *testBus) connect(ctx context.Context) *Client {
	b.t.Helper()
	c, err := Connect(ctx, Options{Address: b.address, Wait: time.Minute, CallTimeout: 30 * time.Second})
	if err != nil {
		b.t.Fatalf("Connect: %v; log: %s", err, b.logs)
	}
	b.t.Cleanup(func() { c.Close() })
	return c
}
