// SPDX-License-Identifier: Apache-2.0

package modes

import (
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/godbus/dbus/v5"

	"github.com/liken-sh/operators/internal/dbusd"
)

// A2DP's UUIDs (Bluetooth Assigned Numbers: 0x110A Audio Source, 0x110B
// Audio Sink) in BlueZ's 128-bit spelling, the SupportedUUIDs of a BR/EDR
// adapter's Media1.
const (
	audioSource = "0000110a-0000-1000-8000-00805f9b34fb"
	audioSink   = "0000110b-0000-1000-8000-00805f9b34fb"
)

// mediaBus is a private system bus with, once startBlueZ ran, python-
// dbusmock's bluez5 template owning org.bluez on it.
type mediaBus struct {
	dir  string
	bus  *dbusd.Daemon
	conn *dbus.Conn
}

func newMediaBus(t *testing.T) *mediaBus {
	t.Helper()
	dir, err := os.MkdirTemp("", "bus") // short: the socket path must fit
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	log, err := os.Create(filepath.Join(dir, "dbus-daemon.log"))
	if err != nil {
		t.Fatal(err)
	}
	defer log.Close()
	bus, err := dbusd.Start(t.Context(), dbusd.Options{
		SocketPath: filepath.Join(dir, "system_bus_socket"), Policy: dbusd.PolicyOpen,
		KeepUser: true, DieWithParent: true, Stdout: log, Stderr: log,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { bus.Stop() })
	conn, err := dbus.Connect(bus.Address())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return &mediaBus{dir: dir, bus: bus, conn: conn}
}

// startBlueZ runs `/usr/bin/python3 -m dbusmock --system --template
// bluez5` on the bus (Debian's python3, which sees python3-dbusmock) and
// waits until it owns org.bluez.
func (m *mediaBus) startBlueZ(t *testing.T) {
	t.Helper()
	log, err := os.Create(filepath.Join(m.dir, "bluez.log"))
	if err != nil {
		t.Fatal(err)
	}
	defer log.Close()
	cmd := exec.Command("/usr/bin/python3", "-m", "dbusmock", "--system", "--template", "bluez5")
	cmd.Env = append(os.Environ(), EnvSystemBus+"="+m.bus.Address())
	cmd.Stdout, cmd.Stderr = log, log
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
		if t.Failed() {
			data, _ := os.ReadFile(log.Name())
			t.Logf("dbusmock output:\n%s", lastLines(string(data), 20))
		}
	})
	// A cold Python start on a loaded machine takes seconds.
	eventually(t, 60*time.Second, "dbusmock owns org.bluez", func() bool {
		var owned bool
		err := m.conn.BusObject().Call("org.freedesktop.DBus.NameHasOwner", 0, bluezService).Store(&owned)
		return err == nil && owned
	})
}

func (m *mediaBus) call(t *testing.T, path dbus.ObjectPath, method string, args ...any) {
	t.Helper()
	if err := m.conn.Object(bluezService, path).Call(method, 0, args...).Err; err != nil {
		t.Fatalf("%s on %s: %v", method, path, err)
	}
}

// addAdapter adds hciN through the template's own method: Adapter1 with
// BlueZ's usual UUIDs (PnP, GAP, GATT, AVRCP), none of them A2DP.
func (m *mediaBus) addAdapter(t *testing.T, name string) dbus.ObjectPath {
	m.call(t, "/", "org.bluez.Mock.AddAdapter", name, "liken")
	return dbus.ObjectPath("/org/bluez/" + name)
}

// hostMedia gives the adapter a Media1 with SupportedUUIDs, as
// bluetoothd's media plugin does; the template has Media1's methods only.
func (m *mediaBus) hostMedia(t *testing.T, adapter dbus.ObjectPath, uuids ...string) {
	m.call(t, adapter, "org.freedesktop.DBus.Mock.AddProperties", mediaInterface,
		map[string]dbus.Variant{"SupportedUUIDs": dbus.MakeVariant(uuids)})
}

// advertise sets the adapter's UUIDs.
func (m *mediaBus) advertise(t *testing.T, adapter dbus.ObjectPath, uuids ...string) {
	m.call(t, adapter, "org.freedesktop.DBus.Mock.UpdateProperties", adapterInterface,
		map[string]dbus.Variant{"UUIDs": dbus.MakeVariant(uuids)})
}

func (m *mediaBus) probe(t *testing.T) (int, string, string) {
	t.Helper()
	return probe(t, EndpointsRegistered, nil, Env{Environ: []string{EnvSystemBus + "=" + m.bus.Address()}})
}

func expectPass(t *testing.T, state string, code int, stdout, stderr, want string) {
	t.Helper()
	if code != 0 || stderr != "" || strings.Count(stdout, "\n") != 1 || !strings.Contains(stdout, want) {
		t.Fatalf("%s: status %d, stdout %q, stderr %q; want a pass saying %q", state, code, stdout, stderr, want)
	}
	t.Logf("%s: %s", state, strings.TrimSpace(stdout))
}

func TestEndpointsRegisteredOnTheMediaBus(t *testing.T) {
	m := newMediaBus(t)

	code, out, errOut := m.probe(t)
	expectPass(t, "bus with no bluetoothd", code, out, errOut, "bluetoothd does not answer")

	m.startBlueZ(t)
	code, out, errOut = m.probe(t)
	expectPass(t, "bluetoothd with no adapter", code, out, errOut, "no adapter on the media bus")

	hci0 := m.addAdapter(t, "hci0")
	code, out, errOut = m.probe(t)
	expectPass(t, "adapter with no Media1", code, out, errOut, "none hosting a media profile")

	// bluetoothd hosts A2DP; the adapter advertises only its defaults:
	// no one holds an endpoint.
	m.hostMedia(t, hci0, audioSource, audioSink)
	code, out, errOut = m.probe(t)
	if code != 1 || out != "" || strings.Count(errOut, "\n") != 1 ||
		!strings.Contains(errOut, "/org/bluez/hci0 (hosts "+audioSource+", "+audioSink+")") {
		t.Fatalf("adapter advertising no hosted profile: status %d, stdout %q, stderr %q", code, out, errOut)
	}
	t.Logf("fails: %s", strings.TrimSpace(errOut))

	// WirePlumber registers an A2DP source endpoint: bluetoothd adds the
	// Audio Source record. The case differs from Media1's on purpose.
	defaults := []string{"00001200-0000-1000-8000-00805f9b34fb", "00001800-0000-1000-8000-00805f9b34fb", "0000110e-0000-1000-8000-00805f9b34fb"}
	m.advertise(t, hci0, append(defaults, strings.ToUpper(audioSource))...)
	code, out, errOut = m.probe(t)
	expectPass(t, "endpoint registered", code, out, errOut, "advertises 1 of the 2 media profiles bluetoothd hosts ("+audioSource+")")

	// A second adapter with no endpoint does not fail the probe while the
	// first one's endpoints work.
	hci1 := m.addAdapter(t, "hci1")
	m.hostMedia(t, hci1, audioSource, audioSink)
	code, out, errOut = m.probe(t)
	expectPass(t, "one of two adapters advertising", code, out, errOut, "/org/bluez/hci0 advertises 1 of the 2")

	// The endpoints are gone from both (WirePlumber lost its bus).
	m.advertise(t, hci0, defaults...)
	code, _, errOut = m.probe(t)
	if code != 1 || !strings.Contains(errOut, "/org/bluez/hci0 (hosts") || !strings.Contains(errOut, "/org/bluez/hci1 (hosts") {
		t.Fatalf("no adapter advertising: status %d, stderr %q", code, errOut)
	}
}

func TestEndpointsRegisteredPassesWithNoBus(t *testing.T) {
	code, out, errOut := probe(t, EndpointsRegistered, nil, Env{Environ: []string{"PATH=/usr/bin"}})
	expectPass(t, "no bus variable", code, out, errOut, "DBUS_SYSTEM_BUS_ADDRESS is not set")
}

func TestEndpointsRegisteredPassesWhenTheBusIsUnreachable(t *testing.T) {
	dir := t.TempDir()
	for _, address := range []string{
		"unix:path=" + filepath.Join(dir, "no_such_socket"),
		"not-an-address",
	} {
		code, out, errOut := probe(t, EndpointsRegistered, nil, Env{Environ: []string{EnvSystemBus + "=" + address}})
		expectPass(t, "unreachable "+address, code, out, errOut, "does not answer")
	}
}

// A bus that accepts and never answers (dbus-daemon stopped, or hung)
// passes within the budget rather than at the kubelet's timeout.
func TestEndpointsRegisteredPassesWhenTheBusIsSilent(t *testing.T) {
	dir, err := os.MkdirTemp("", "bus")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "system_bus_socket")
	l, err := net.Listen("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			defer c.Close()
		}
	}()
	for _, tc := range []struct {
		deadline time.Duration
		want     string
	}{
		// The probe's deadline bounds it, whichever bound fires first.
		{time.Second, "within 1s"},
		// The default: 3 s for the connection.
		{0, "does not answer (no connection within 3s)"},
	} {
		began := time.Now()
		code, out, errOut := probe(t, EndpointsRegistered, nil, Env{Environ: []string{EnvSystemBus + "=" + dbusd.Address(path)}, ProbeDeadline: tc.deadline})
		took := time.Since(began)
		// The message names the bound that fired; unbounded, the probe
		// would wait on the silent bus for ever, while a slow host only
		// takes a little longer than the bound.
		expectPass(t, "silent bus", code, out, errOut, tc.want)
		if took > 30*time.Second {
			t.Fatalf("deadline %v: took %v", tc.deadline, took)
		}
	}
}

func TestEndpointsRegisteredRefusesArguments(t *testing.T) {
	if code, _, stderr := probe(t, EndpointsRegistered, []string{"x"}, Env{}); code != 2 || !strings.Contains(stderr, `"x"`) {
		t.Fatalf("%d, %q", code, stderr)
	}
}

func TestJudgeAdapters(t *testing.T) {
	for _, tc := range []struct {
		name     string
		adapters []adapter
		fail     bool
		want     string
	}{
		{"none", nil, false, "no adapter"},
		{"no Media1", []adapter{{path: "/org/bluez/hci0", uuids: []string{audioSource}}}, false, "none hosting"},
		{"empty SupportedUUIDs", []adapter{{path: "/org/bluez/hci0", hosted: []string{}}}, false, "none hosting"},
		{"advertised", []adapter{{path: "/org/bluez/hci0", uuids: []string{audioSink}, hosted: []string{audioSource, audioSink}}}, false, "advertises 1 of the 2"},
		{"case folded, repeats dropped", []adapter{{path: "/org/bluez/hci0", uuids: []string{strings.ToUpper(audioSink), audioSink}, hosted: []string{audioSink, " " + strings.ToUpper(audioSink)}}}, false, "advertises 1 of the 1"},
		{"not advertised", []adapter{{path: "/org/bluez/hci0", uuids: []string{"0000110e-0000-1000-8000-00805f9b34fb"}, hosted: []string{audioSource}}}, true, "/org/bluez/hci0 (hosts " + audioSource + ")"},
		{"one of two", []adapter{
			{path: "/org/bluez/hci0", hosted: []string{audioSource}},
			{path: "/org/bluez/hci1", uuids: []string{audioSource}, hosted: []string{audioSource}},
		}, false, "/org/bluez/hci1 advertises"},
	} {
		v := judgeAdapters(tc.adapters)
		if v.fail != tc.fail || !strings.Contains(v.line, tc.want) {
			t.Errorf("%s: %+v, want fail=%v and %q", tc.name, v, tc.fail, tc.want)
		}
	}
}

func TestAdaptersOfReadsOnlyTypedProperties(t *testing.T) {
	objects := map[dbus.ObjectPath]map[string]map[string]dbus.Variant{
		"/org/bluez/hci1": {
			adapterInterface: {"UUIDs": dbus.MakeVariant([]string{audioSource})},
			mediaInterface:   {"SupportedUUIDs": dbus.MakeVariant([]string{audioSource})},
		},
		"/org/bluez/hci0": {
			adapterInterface: {"UUIDs": dbus.MakeVariant("not an array")},
			mediaInterface:   {"SupportedUUIDs": dbus.MakeVariant([]int32{1})},
		},
		"/org/bluez/hci0/dev_AA_BB_CC_DD_EE_FF": {
			"org.bluez.Device1": {"UUIDs": dbus.MakeVariant([]string{audioSink})},
		},
	}
	got := adaptersOf(objects)
	if len(got) != 2 || got[0].path != "/org/bluez/hci0" || got[1].path != "/org/bluez/hci1" {
		t.Fatalf("adapters %+v", got)
	}
	if got[0].uuids != nil || got[0].hosted != nil || len(got[1].uuids) != 1 || len(got[1].hosted) != 1 {
		t.Fatalf("properties %+v", got)
	}
}

// FuzzJudgeAdapters: the verdict fails exactly when some adapter hosts a
// profile and no adapter advertises one it hosts, case aside; every
// verdict is one line.
func FuzzJudgeAdapters(f *testing.F) {
	f.Add(audioSource+","+audioSink, "0000110e-0000-1000-8000-00805f9b34fb", "", "")
	f.Add(audioSource, strings.ToUpper(audioSource), audioSink, "")
	f.Add("", "", "", "")
	f.Add("a\nb", "A\nB", "", "")
	f.Fuzz(func(t *testing.T, hosted0, uuids0, hosted1, uuids1 string) {
		split := func(s string) []string {
			if s == "" {
				return nil
			}
			return strings.Split(s, ",")
		}
		adapters := []adapter{
			{path: "/org/bluez/hci0", hosted: split(hosted0), uuids: split(uuids0)},
			{path: "/org/bluez/hci1", hosted: split(hosted1), uuids: split(uuids1)},
		}
		hostsAny, advertisesAny := false, false
		for _, a := range adapters {
			advertised := map[string]bool{}
			for _, u := range a.uuids {
				advertised[strings.ToLower(strings.TrimSpace(u))] = true
			}
			for _, h := range a.hosted {
				if h = strings.ToLower(strings.TrimSpace(h)); h != "" {
					hostsAny = true
					advertisesAny = advertisesAny || advertised[h]
				}
			}
		}
		v := judgeAdapters(adapters)
		if want := hostsAny && !advertisesAny; v.fail != want {
			t.Fatalf("adapters %+v: fail=%v, want %v (%s)", adapters, v.fail, want, v.line)
		}
		if v.line == "" || strings.ContainsAny(v.line, "\n\r") {
			t.Fatalf("verdict line %q", v.line)
		}
	})
}
