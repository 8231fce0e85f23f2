// SPDX-License-Identifier: Apache-2.0

package bluez

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/godbus/dbus/v5"
	"github.com/google/go-cmp/cmp"
)

const (
	hci0      = dbus.ObjectPath("/org/bluez/hci0")
	padAddr   = "E4:17:D8:C5:67:6D" // 8BitDo NES30 Pro, fixtures/bluez/my-retropie
	padPath   = dbus.ObjectPath("/org/bluez/hci0/dev_E4_17_D8_C5_67_6D")
	mouseAddr = "C2:1D:3E:4F:50:61"
	mousePath = dbus.ObjectPath("/org/bluez/hci0/dev_C2_1D_3E_4F_50_61")
)

func TestConnectWaitsForTheBusThenForBlueZ(t *testing.T) {
	b := newTestBus(t)
	type result struct {
		c   *Client
		err error
		at  time.Duration
	}
	start := time.Now()
	done := make(chan result, 1)
	go func() {
		c, err := Connect(context.Background(), Options{Address: b.address, Wait: time.Minute})
		done <- result{c, err, time.Since(start)}
	}()

	time.Sleep(300 * time.Millisecond)
	b.startDaemon()
	select {
	case r := <-done:
		t.Fatalf("Connect returned before org.bluez had an owner: %v, %v", r.c, r.err)
	case <-time.After(300 * time.Millisecond):
	}
	mockAt := time.Since(start)
	b.startMock()

	r := <-done
	if r.err != nil {
		t.Fatalf("Connect: %v; log: %s", r.err, b.logs)
	}
	defer r.c.Close()
	if r.at < mockAt {
		t.Errorf("Connect returned at %v, before the mock started at %v", r.at, mockAt)
	}
	if !strings.HasPrefix(r.c.Owner(), ":") {
		t.Errorf("Owner() = %q, want a unique bus name", r.c.Owner())
	}
	var owner string
	if err := b.control().BusObject().Call("org.freedesktop.DBus.GetNameOwner", 0, Service).Store(&owner); err != nil {
		t.Fatal(err)
	}
	if owner != r.c.Owner() {
		t.Errorf("Owner() = %q, the bus says %q", r.c.Owner(), owner)
	}
	t.Logf("connected %v after start, %v after the mock started", r.at, r.at-mockAt)
}

func TestConnectIsBounded(t *testing.T) {
	t.Run("no socket", func(t *testing.T) {
		b := newTestBus(t)
		start := time.Now()
		_, err := Connect(context.Background(), Options{Address: b.address, Wait: 300 * time.Millisecond})
		if !errors.Is(err, ErrNoBus) {
			t.Fatalf("err = %v, want ErrNoBus", err)
		}
		if !strings.Contains(err.Error(), b.socket) {
			t.Errorf("error %q does not name the socket", err)
		}
		// Only a bound other than the 300 ms asked for (DefaultWait)
		// comes this late; a slow host does not.
		if d := time.Since(start); d >= DefaultWait {
			t.Errorf("gave up after %v, bound was 300ms", d)
		}
	})
	t.Run("a file that is not a socket", func(t *testing.T) {
		b := newTestBus(t)
		if err := writeFile(b.socket); err != nil {
			t.Fatal(err)
		}
		_, err := Connect(context.Background(), Options{Address: b.address, Wait: 300 * time.Millisecond})
		if !errors.Is(err, ErrNoBus) || !strings.Contains(err.Error(), "not a socket") {
			t.Fatalf("err = %v, want ErrNoBus naming a non-socket", err)
		}
	})
	t.Run("no bluetoothd", func(t *testing.T) {
		b := newTestBus(t)
		b.startDaemon()
		start := time.Now()
		_, err := Connect(context.Background(), Options{Address: b.address, Wait: 400 * time.Millisecond})
		if !errors.Is(err, ErrNoBlueZ) {
			t.Fatalf("err = %v, want ErrNoBlueZ", err)
		}
		if d := time.Since(start); d >= DefaultWait {
			t.Errorf("gave up after %v, bound was 400ms", d)
		}
	})
	t.Run("cancelled", func(t *testing.T) {
		b := newTestBus(t)
		ctx, cancel := context.WithCancel(context.Background())
		time.AfterFunc(100*time.Millisecond, cancel)
		_, err := Connect(ctx, Options{Address: b.address, Wait: 2 * time.Minute})
		if !errors.Is(err, context.Canceled) || errors.Is(err, ErrNoBus) {
			t.Fatalf("err = %v, want context.Canceled and not ErrNoBus", err)
		}
	})
	t.Run("bad address", func(t *testing.T) {
		_, err := Connect(context.Background(), Options{Address: "unix:abstract=/x"})
		if err == nil || errors.Is(err, ErrNoBus) || !strings.Contains(err.Error(), "unix:abstract=/x") {
			t.Fatalf("err = %v, want an address error naming it", err)
		}
	})
	t.Run("address from the environment", func(t *testing.T) {
		t.Setenv(AddressEnv, "")
		_, err := Connect(context.Background(), Options{})
		if err == nil || !strings.Contains(err.Error(), AddressEnv) {
			t.Fatalf("err = %v, want one naming %s", err, AddressEnv)
		}
		b := newTestBus(t)
		t.Setenv(AddressEnv, b.address)
		_, err = Connect(context.Background(), Options{Wait: 200 * time.Millisecond})
		if !errors.Is(err, ErrNoBus) || !strings.Contains(err.Error(), b.socket) {
			t.Fatalf("err = %v, want ErrNoBus at the socket the environment names", err)
		}
	})
}

// addPad adds the 8BitDo NES30 Pro as bluetoothd reports a paired,
// connected classic HID gamepad (class and Device ID from
// fixtures/bluez/my-retropie: Class=0x002508, Source=2 Vendor=0x2dc8
// Product=0x3820 Version=0x0100).
func addPad(b *testBus) {
	b.mockCall("AddDevice", "hci0", padAddr, "8Bitdo NES30 Pro")
	b.mockCall("PairDevice", "hci0", padAddr, int32(0x002508))
	b.mockProps("UpdateProperties", padPath, DeviceInterface, map[string]dbus.Variant{
		"Class":     dbus.MakeVariant(uint32(0x002508)),
		"Icon":      dbus.MakeVariant("input-gaming"),
		"Modalias":  dbus.MakeVariant("usb:v2DC8p3820d0100"),
		"UUIDs":     dbus.MakeVariant([]string{"00001124-0000-1000-8000-00805f9b34fb", "00001200-0000-1000-8000-00805f9b34fb"}),
		"Connected": dbus.MakeVariant(true),
		"Trusted":   dbus.MakeVariant(true),
	})
	// The template predates Device1.Bonded (BlueZ 5.67).
	b.mockProps("AddProperties", padPath, DeviceInterface, map[string]dbus.Variant{"Bonded": dbus.MakeVariant(true)})
}

func TestManagedObjectsReadsAdaptersAndDevices(t *testing.T) {
	b := startTestBus(t)
	b.mockCall("AddAdapter", "hci0", "liken-node")
	b.mockProps("AddProperties", hci0, AdapterInterface, map[string]dbus.Variant{"Connectable": dbus.MakeVariant(false)})
	addPad(b)
	// The Razer Basilisk X HyperSpeed (fixtures/bluez/ble-razer-basilisk):
	// LE, random static address, appearance 0x03c2 (mouse), not paired.
	b.mockCall("AddDevice", "hci0", mouseAddr, "Basilisk X HyperSpeed")
	b.mockProps("UpdateProperties", mousePath, DeviceInterface, map[string]dbus.Variant{
		"AddressType": dbus.MakeVariant("random"),
		"Appearance":  dbus.MakeVariant(uint16(0x03c2)),
	})

	c := b.connect(context.Background())
	objs, err := c.ManagedObjects(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(objs.Problems) > 0 {
		t.Errorf("problems: %v", objs.Problems)
	}
	// dbusmock's bluez5 template: a discoverable timeout of 180 s, a
	// Device ID of BlueZ's vendor (0x1d6b) with product 0x0245.
	wantAdapter := Adapter{Path: hci0, Address: "00:01:02:03:04:05", Alias: "liken-node", Powered: true, Pairable: true, ReportsConnectable: true,
		DiscoverableTimeout: 180, Modalias: "usb:v1D6Bp0245d050A"}
	if !reflect.DeepEqual(objs.Adapters, []Adapter{wantAdapter}) {
		t.Errorf("adapters:\n got %+v\nwant %+v", objs.Adapters, []Adapter{wantAdapter})
	}
	if !wantAdapter.NeedsPageScan() {
		t.Error("a powered adapter with page scan off does not need page scan")
	}
	// bluetoothd 5.66 has no Connectable property at all: there is
	// nothing to ask over D-Bus, and asking every pass only fails.
	if old := (Adapter{Powered: true}); old.NeedsPageScan() {
		t.Error("an adapter without the Connectable property is asked for page scan")
	}
	if a, ok := objs.Adapter(hci0); !ok || a != wantAdapter {
		t.Errorf("Adapter(%s) = %+v, %v", hci0, a, ok)
	}
	// dbusmock's PairDevice claims a phone's UUIDs; UpdateProperties above
	// replaced them with the pad's.
	wantPad := Device{
		Path: padPath, Adapter: hci0, Address: padAddr, AddressType: "public",
		Name: "8Bitdo NES30 Pro", Alias: "8Bitdo NES30 Pro",
		Paired: true, Bonded: true, Connected: true, Trusted: true,
		Class: 0x002508, Icon: "input-gaming", Modalias: "usb:v2DC8p3820d0100",
		UUIDs:         []string{"00001124-0000-1000-8000-00805f9b34fb", "00001200-0000-1000-8000-00805f9b34fb"},
		LegacyPairing: true, RSSI: -79, HasRSSI: true, // the template's
	}
	wantMouse := Device{
		Path: mousePath, Adapter: hci0, Address: mouseAddr, AddressType: "random",
		Name: "Basilisk X HyperSpeed", Alias: "Basilisk X HyperSpeed", Appearance: 0x03c2, UUIDs: []string{},
		RSSI: -79, HasRSSI: true,
	}
	if len(objs.Devices) != 2 {
		t.Fatalf("devices: %+v", objs.Devices)
	}
	// Sorted by path: dev_C2… before dev_E4….
	for i, want := range []Device{wantMouse, wantPad} {
		if got := objs.Devices[i]; !reflect.DeepEqual(got, want) {
			t.Errorf("device %d:\n got %+v\nwant %+v", i, got, want)
		}
	}
}

func TestManagedObjectsToleratesAbsentAndMistypedProperties(t *testing.T) {
	b := startTestBus(t)
	b.mockCall("AddAdapter", "hci0", "liken-node")
	addPad(b)
	b.mockProps("UpdateProperties", padPath, DeviceInterface, map[string]dbus.Variant{
		"Class":     dbus.MakeVariant("0x002508"),
		"Connected": dbus.MakeVariant(uint32(1)),
	})
	// A device with nothing but an address, and no Adapter property.
	bare := dbus.ObjectPath("/org/bluez/hci0/dev_11_22_33_44_55_66")
	call := b.control().Object(Service, "/").Call("org.freedesktop.DBus.Mock.AddObject", 0, bare, DeviceInterface,
		map[string]dbus.Variant{"Address": dbus.MakeVariant("11:22:33:44:55:66")}, []struct{ A, B, C, D string }{})
	if call.Err != nil {
		t.Fatal(call.Err)
	}

	c := b.connect(context.Background())
	objs, err := c.ManagedObjects(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(objs.Devices) != 2 {
		t.Fatalf("devices: %+v", objs.Devices)
	}
	wantBare := Device{Path: bare, Adapter: hci0, Address: "11:22:33:44:55:66"}
	if diff := cmp.Diff(objs.Devices[0], wantBare); diff != "" {
		t.Errorf("bare device (-objs.Devices[0] +wantBare):\n%s", diff)
	}
	pad := objs.Devices[1]
	if pad.Class != 0 || pad.Connected {
		t.Errorf("mistyped properties read as %#x, %v; want absent", pad.Class, pad.Connected)
	}
	if pad.Address != padAddr || !pad.Paired || pad.Modalias != "usb:v2DC8p3820d0100" {
		t.Errorf("the rest of the device was not kept: %+v", pad)
	}
	var got []string
	for _, p := range objs.Problems {
		var pe *PropertyError
		if !errors.As(p, &pe) {
			t.Fatalf("problem %v is not a *PropertyError", p)
		}
		got = append(got, pe.Error())
	}
	want := []string{
		string(padPath) + `: org.bluez.Device1.Class has D-Bus type "s", want "u"; read as absent`,
		string(padPath) + `: org.bluez.Device1.Connected has D-Bus type "u", want "b"; read as absent`,
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("problems:\n got %q\nwant %q", got, want)
	}
}

// next returns the next change or fails after a bound.
func next(t *testing.T, c *Client) Change {
	t.Helper()
	select {
	case ch, ok := <-c.Changes():
		if !ok {
			t.Fatalf("changes closed: %v", c.Err())
		}
		return ch
	case <-time.After(30 * time.Second):
		t.Fatal("no change within 30s")
	}
	return Change{}
}

func TestChangesFollowBlueZ(t *testing.T) {
	b := startTestBus(t)
	c := b.connect(context.Background())

	steps := []struct {
		name string
		do   func()
		want Change
	}{
		{"adapter registers", func() { b.mockCall("AddAdapter", "hci0", "liken-node") },
			Change{Kind: InterfacesAdded, Path: hci0, Interfaces: []string{AdapterInterface}}},
		{"device found", func() { b.mockCall("AddDevice", "hci0", padAddr, "8Bitdo NES30 Pro") },
			Change{Kind: InterfacesAdded, Path: padPath, Interfaces: []string{DeviceInterface}}},
		{"device connects", func() { b.mockCall("ConnectDevice", "hci0", padAddr) },
			Change{Kind: PropertiesChanged, Path: padPath, Interfaces: []string{DeviceInterface}, Properties: []string{"Blocked", "Connected"}}},
		{"adapter powers off", func() {
			b.mockProps("UpdateProperties", hci0, AdapterInterface, map[string]dbus.Variant{"Powered": dbus.MakeVariant(false)})
		}, Change{Kind: PropertiesChanged, Path: hci0, Interfaces: []string{AdapterInterface}, Properties: []string{"Powered"}}},
		{"a battery level is not followed", func() {
			b.mockProps("AddProperties", padPath, "org.bluez.Battery1", map[string]dbus.Variant{"Percentage": dbus.MakeVariant(byte(90))})
			b.mockProps("UpdateProperties", padPath, "org.bluez.Battery1", map[string]dbus.Variant{"Percentage": dbus.MakeVariant(byte(80))})
			b.mockCall("DisconnectDevice", "hci0", padAddr)
		}, Change{Kind: PropertiesChanged, Path: padPath, Interfaces: []string{DeviceInterface}, Properties: []string{"Connected"}}},
		{"a signal of the wrong shape asks for a re-read", func() {
			call := b.control().Object(Service, "/").Call("org.freedesktop.DBus.Mock.EmitSignal", 0,
				objectManagerInterface, "InterfacesAdded", "s", []dbus.Variant{dbus.MakeVariant("junk")})
			if call.Err != nil {
				t.Fatal(call.Err)
			}
		}, Change{Kind: Resync}},
		{"device removed", func() {
			if err := b.control().Object(Service, hci0).Call(AdapterInterface+".RemoveDevice", 0, padPath).Err; err != nil {
				t.Fatal(err)
			}
		}, Change{Kind: InterfacesRemoved, Path: padPath, Interfaces: []string{DeviceInterface}}},
	}
	for _, s := range steps {
		start := time.Now()
		s.do()
		got := next(t, c)
		if diff := cmp.Diff(got, s.want); diff != "" {
			t.Errorf("got (-got +s.want):\n%s", diff)
		}
		t.Logf("%s: %v after the call", s.name, time.Since(start))
	}
	select {
	case ch := <-c.Changes():
		t.Errorf("unexpected change %v", ch)
	case <-time.After(200 * time.Millisecond):
	}
	if err := c.Err(); err != nil {
		t.Errorf("Err() = %v while running", err)
	}
}

func TestBluetoothdLeavingTheBusStopsTheClient(t *testing.T) {
	b := startTestBus(t)
	b.mockCall("AddAdapter", "hci0", "liken-node")
	c := b.connect(context.Background())
	start := time.Now()
	b.stopMock()
	select {
	case _, ok := <-c.Changes():
		if ok {
			// Drain: the mock may announce nothing more, but be lenient.
			for range c.Changes() {
			}
		}
	case <-time.After(30 * time.Second):
		t.Fatal("changes still open 30s after bluetoothd left")
	}
	<-c.Done()
	if err := c.Err(); !errors.Is(err, ErrBlueZGone) || errors.Is(err, ErrConnectionLost) {
		t.Fatalf("Err() = %v, want ErrBlueZGone only", err)
	}
	t.Logf("noticed after %v: %v", time.Since(start), c.Err())
	_, err := c.ManagedObjects(context.Background())
	if err == nil {
		t.Fatal("ManagedObjects succeeded with bluetoothd gone")
	}
}

func TestALostBusStopsTheClient(t *testing.T) {
	b := startTestBus(t)
	c := b.connect(context.Background())
	b.daemon.Process.Kill()
	b.daemon.Wait()
	b.daemon = nil
	select {
	case <-c.Done():
	case <-time.After(30 * time.Second):
		t.Fatal("client still running 30s after the bus died")
	}
	if _, ok := <-c.Changes(); ok {
		t.Error("changes not closed")
	}
	if err := c.Err(); !errors.Is(err, ErrConnectionLost) {
		t.Fatalf("Err() = %v, want ErrConnectionLost", err)
	}
	_, err := c.ManagedObjects(context.Background())
	if !errors.Is(err, ErrConnectionLost) {
		t.Errorf("ManagedObjects error = %v, want ErrConnectionLost", err)
	}
}

func TestCloseStopsTheClient(t *testing.T) {
	b := startTestBus(t)
	c := b.connect(context.Background())
	c.Close()
	if _, ok := <-c.Changes(); ok {
		t.Error("changes not closed")
	}
	if err := c.Err(); !errors.Is(err, ErrClosed) {
		t.Fatalf("Err() = %v, want ErrClosed", err)
	}
}

func TestSetConnectable(t *testing.T) {
	b := startTestBus(t)
	b.mockCall("AddAdapter", "hci0", "liken-node")
	b.mockProps("AddProperties", hci0, AdapterInterface, map[string]dbus.Variant{"Connectable": dbus.MakeVariant(false)})
	c := b.connect(context.Background())
	ctx := context.Background()

	if err := c.SetConnectable(ctx, hci0); err != nil {
		t.Fatal(err)
	}
	objs, err := c.ManagedObjects(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if a, _ := objs.Adapter(hci0); !a.Connectable || a.NeedsPageScan() {
		t.Errorf("after SetConnectable: %+v", a)
	}
	want := Change{Kind: PropertiesChanged, Path: hci0, Interfaces: []string{AdapterInterface}, Properties: []string{"Connectable"}}
	if got := next(t, c); !reflect.DeepEqual(got, want) {
		t.Errorf("change: got %v, want %v", got, want)
	}

	// BlueZ refusing is an error naming the adapter.
	hci1 := dbus.ObjectPath("/org/bluez/hci1")
	b.mockCall("AddAdapter", "hci1", "second")
	err = c.SetConnectable(ctx, hci1)
	if err == nil || !strings.Contains(err.Error(), string(hci1)) {
		t.Errorf("err = %v, want a refusal naming %s", err, hci1)
	}
}

func TestCallsAreBounded(t *testing.T) {
	b := startTestBus(t)
	b.mockCall("AddAdapter", "hci0", "liken-node")
	c, err := Connect(context.Background(), Options{Address: b.address})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	// Connect's own calls keep the default bound, which a loaded host
	// needs; the short one is for the calls to the hung bluetoothd.
	c.callTimeout = 300 * time.Millisecond
	// A bluetoothd that hangs: stopped, it keeps its name and never answers.
	if err := b.mock.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	defer b.mock.Process.Signal(syscall.SIGCONT)
	for name, call := range map[string]func() error{
		"SetConnectable": func() error { return c.SetConnectable(context.Background(), hci0) },
		"ManagedObjects": func() error { _, err := c.ManagedObjects(context.Background()); return err },
	} {
		start := time.Now()
		err := call()
		d := time.Since(start)
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("%s: err = %v, want a deadline", name, err)
		}
		// Only another bound (DefaultCallTimeout) ends it this late.
		if d >= DefaultCallTimeout {
			t.Errorf("%s returned after %v, bound was 300ms", name, d)
		}
		t.Logf("%s: %v after %v", name, err, d)
	}
}

func TestBlueZVersion(t *testing.T) {
	for modalias, want := range map[string]string{
		"usb:v1D6Bp0246d0542": "5.66", // Debian 12
		"usb:v1D6Bp0246d0548": "5.72",
		"usb:v1D6Bp0245d050A": "", // another product
		"usb:v2DC8p3820d0100": "", // a device's, not BlueZ's
		"":                    "",
	} {
		if got := (Adapter{Modalias: modalias}).BlueZVersion(); got != want {
			t.Errorf("BlueZVersion(%q) = %q, want %q", modalias, got, want)
		}
	}
}
