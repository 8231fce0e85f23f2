// SPDX-License-Identifier: Apache-2.0

package bluezsim

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/godbus/dbus/v5"
	"github.com/google/go-cmp/cmp"

	"github.com/liken-sh/operators/test/poll"
)

// The fixtures' real devices (testdata/fixtures/bluez in the repository).
const (
	adapterAddr = "04:4A:69:66:92:27"
	gamepadAddr = "E4:17:D8:C5:67:6D" // 8Bitdo NES30 Pro, classic HID
	mouseAddr   = "C2:11:22:33:44:55" // an LE HID mouse, static random address
	strayAddr   = "E3:28:E9:23:21:6F" // a neighbour: no name, never paired
)

const (
	hidUUID = "00001124-0000-1000-8000-00805f9b34fb"
	pnpUUID = "00001200-0000-1000-8000-00805f9b34fb"
	gapUUID = "00001800-0000-1000-8000-00805f9b34fb"
)

var fixtureDir = filepath.Join("..", "..", "testdata", "fixtures", "bluez")

var gamepad = Device{
	Name:     "8Bitdo NES30 Pro",
	Class:    0x002508,
	Modalias: "usb:v2DC8p3820d0100",
	UUIDs:    []string{hidUUID, pnpUUID},
}

var mouse = Device{
	Name:        "Basilisk X HyperSpeed",
	Bearer:      LE,
	AddressType: "random",
	Appearance:  0x03c2,
	UUIDs:       []string{gapUUID},
}

func requireRoot(t *testing.T) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Fatal("BlueZ's bus policy lets only root own org.bluez; run the tests as root, as CI does")
	}
}

// client is what the code under test would be: a plain connection to the
// simulator's bus, subscribed to BlueZ's signals.
type client struct {
	t    *testing.T
	conn *dbus.Conn
	sigs chan *dbus.Signal
}

func newClient(t *testing.T, s *Sim) *client {
	t.Helper()
	conn, err := dbus.Connect(s.Address())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	c := &client{t: t, conn: conn, sigs: make(chan *dbus.Signal, 256)}
	conn.Signal(c.sigs)
	for _, opts := range [][]dbus.MatchOption{
		{dbus.WithMatchSender(Service), dbus.WithMatchInterface("org.freedesktop.DBus.ObjectManager")},
		{dbus.WithMatchSender(Service), dbus.WithMatchInterface("org.freedesktop.DBus.Properties"), dbus.WithMatchMember("PropertiesChanged")},
		{dbus.WithMatchSender(Service), dbus.WithMatchInterface(DeviceInterface)},
		{dbus.WithMatchSender("org.freedesktop.DBus"), dbus.WithMatchMember("NameOwnerChanged"), dbus.WithMatchArg(0, Service)},
	} {
		if err := conn.AddMatchSignal(opts...); err != nil {
			t.Fatal(err)
		}
	}
	return c
}

type objects map[dbus.ObjectPath]map[string]map[string]dbus.Variant

func (c *client) managedObjects() objects {
	c.t.Helper()
	var out objects
	if err := c.conn.Object(Service, "/").Call("org.freedesktop.DBus.ObjectManager.GetManagedObjects", 0).Store(&out); err != nil {
		c.t.Fatalf("GetManagedObjects: %v", err)
	}
	return out
}

// next returns the next signal with the given member, failing after
// waitTimeout. Other signals are skipped.
func (c *client) next(member string) *dbus.Signal {
	c.t.Helper()
	deadline := time.After(waitTimeout)
	for {
		select {
		case s := <-c.sigs:
			if s.Name[strings.LastIndex(s.Name, ".")+1:] == member {
				return s
			}
		case <-deadline:
			c.t.Fatalf("no %s signal within %v", member, waitTimeout)
			return nil
		}
	}
}

// changed returns the next PropertiesChanged of iface on path, as name ->
// value.
func (c *client) changed(path dbus.ObjectPath, iface string) map[string]any {
	c.t.Helper()
	for {
		s := c.next("PropertiesChanged")
		if s.Path != path || s.Body[0].(string) != iface {
			continue
		}
		out := map[string]any{}
		for k, v := range s.Body[1].(map[string]dbus.Variant) {
			out[k] = v.Value()
		}
		return out
	}
}

func (c *client) set(path dbus.ObjectPath, iface, name string, value any) error {
	return c.conn.Object(Service, path).Call("org.freedesktop.DBus.Properties.Set", 0, iface, name, dbus.MakeVariant(value)).Err
}

func errorName(err error) string {
	var e dbus.Error
	if errors.As(err, &e) {
		return e.Name
	}
	return fmt.Sprintf("not a D-Bus error: %v", err)
}

// readKeyFile parses a BlueZ key file into group order and group -> key
// order and values.
type keyFile struct {
	groups []string
	keys   map[string][]string
	values map[string]map[string]string
}

func readKeyFile(t *testing.T, path string) keyFile {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	kf := keyFile{keys: map[string][]string{}, values: map[string]map[string]string{}}
	group := ""
	for _, line := range strings.Split(string(data), "\n") {
		switch {
		case line == "" || strings.HasPrefix(line, "#"):
		case strings.HasPrefix(line, "[") && strings.HasSuffix(line, "]"):
			group = line[1 : len(line)-1]
			kf.groups = append(kf.groups, group)
			kf.values[group] = map[string]string{}
		default:
			k, v, ok := strings.Cut(line, "=")
			if !ok || group == "" {
				t.Fatalf("%s: not a key file line: %q", path, line)
			}
			kf.keys[group] = append(kf.keys[group], k)
			kf.values[group][k] = v
		}
	}
	return kf
}

func mode(t *testing.T, path string) os.FileMode {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return fi.Mode().Perm()
}

// setup starts a simulator with the lab adapter, the gamepad, the mouse
// and a nameless neighbour.
func setup(t *testing.T, opts Options) (*Sim, *client) {
	t.Helper()
	requireRoot(t)
	s := New(t, opts)
	c := newClient(t, s)
	if _, err := s.AddAdapter("hci0", adapterAddr); err != nil {
		t.Fatal(err)
	}
	for addr, d := range map[string]Device{gamepadAddr: gamepad, mouseAddr: mouse, strayAddr: {}} {
		if _, err := s.AddDevice("hci0", addr, d); err != nil {
			t.Fatal(err)
		}
	}
	return s, c
}

func TestManagedObjectsShape(t *testing.T) {
	_, c := setup(t, Options{})
	objs := c.managedObjects()

	manager := objs["/org/bluez"]
	for _, iface := range []string{AgentManagerInterface, "org.bluez.ProfileManager1"} {
		if _, ok := manager[iface]; !ok {
			t.Errorf("/org/bluez lacks %s: %v", iface, manager)
		}
	}
	for path, ifaces := range objs {
		for _, iface := range []string{"org.freedesktop.DBus.Introspectable", "org.freedesktop.DBus.Properties"} {
			if _, ok := ifaces[iface]; !ok {
				t.Errorf("%s does not list %s, which gdbus lists on every object", path, iface)
			}
		}
	}

	adapter := objs[AdapterPath("hci0")][AdapterInterface]
	for name, want := range map[string]any{
		"Address": adapterAddr, "AddressType": "public", "Powered": true, "PowerState": "on",
		"Connectable": false, "Discoverable": false, "Pairable": true, "Discovering": false,
	} {
		if got := adapter[name].Value(); got != want {
			t.Errorf("Adapter1.%s = %#v, want %#v", name, got, want)
		}
	}
	for _, name := range []string{"Alias", "Name"} {
		if _, ok := adapter[name].Value().(string); !ok {
			t.Errorf("Adapter1.%s = %#v, want a string", name, adapter[name].Value())
		}
	}
	if _, ok := objs[AdapterPath("hci0")][MediaInterface]["SupportedUUIDs"]; !ok {
		t.Errorf("adapter has no Media1.SupportedUUIDs: %v", objs[AdapterPath("hci0")])
	}

	pad := objs[DevicePath("hci0", gamepadAddr)]
	for name, want := range map[string]any{
		"Address": gamepadAddr, "AddressType": "public", "Name": gamepad.Name, "Alias": gamepad.Name,
		"Class": uint32(0x002508), "Icon": "input-gaming", "Modalias": gamepad.Modalias,
		"UUIDs": gamepad.UUIDs, "Paired": false, "Bonded": false, "Trusted": false,
		"Connected": false, "Adapter": AdapterPath("hci0"),
	} {
		if got := pad[DeviceInterface][name].Value(); !reflect.DeepEqual(got, want) {
			t.Errorf("gamepad Device1.%s = %#v, want %#v", name, got, want)
		}
	}
	if mode := pad[InputInterface]["ReconnectMode"].Value(); mode != "any" {
		t.Errorf("gamepad Input1.ReconnectMode = %#v, want \"any\"", mode)
	}

	m := objs[DevicePath("hci0", mouseAddr)]
	for name, want := range map[string]any{
		"AddressType": "random", "Appearance": uint16(0x03c2), "Icon": "input-mouse", "WakeAllowed": true,
	} {
		if got := m[DeviceInterface][name].Value(); !reflect.DeepEqual(got, want) {
			t.Errorf("mouse Device1.%s = %#v, want %#v", name, got, want)
		}
	}
	if _, ok := m[InputInterface]; ok {
		t.Error("an LE HID device (HOG) has Input1; bluetoothd gives it only to classic HID")
	}

	stray := objs[DevicePath("hci0", strayAddr)][DeviceInterface]
	for _, absent := range []string{"Name", "Class", "Appearance", "Icon", "Modalias", "UUIDs"} {
		if v, ok := stray[absent]; ok {
			t.Errorf("nameless device has optional %s = %v; bluetoothd leaves unknown ones out", absent, v)
		}
	}
	if alias := stray["Alias"].Value(); alias != "E3-28-E9-23-21-6F" {
		t.Errorf("nameless device's Alias = %#v, want the address with dashes", alias)
	}

	// Properties.Get answers as gdbus does.
	var v dbus.Variant
	err := c.conn.Object(Service, DevicePath("hci0", strayAddr)).Call("org.freedesktop.DBus.Properties.Get", 0, DeviceInterface, "Name").Store(&v)
	if errorName(err) != "org.freedesktop.DBus.Error.InvalidArgs" {
		t.Errorf("Get of an absent Name: %v, want InvalidArgs", err)
	}
}

// The simulator's bus is the real system policy with BlueZ's: a client
// may call org.bluez but may not own an arbitrary name.
func TestBusPolicy(t *testing.T) {
	_, c := setup(t, Options{})
	_, err := c.conn.RequestName("com.example.NotBlueZ", dbus.NameFlagDoNotQueue)
	if errorName(err) != "org.freedesktop.DBus.Error.AccessDenied" {
		t.Fatalf("owning an arbitrary name: %v, want AccessDenied", err)
	}
}

func TestSignalsOnPairConnectDisconnectRemove(t *testing.T) {
	s, c := setup(t, Options{})
	path := DevicePath("hci0", "A0:AB:51:33:B7:12")
	if _, err := s.AddDevice("hci0", "A0:AB:51:33:B7:12", Device{Name: "Wireless Controller", Class: 0x002508, UUIDs: []string{hidUUID}}); err != nil {
		t.Fatal(err)
	}
	added := c.next("InterfacesAdded")
	for added.Body[0].(dbus.ObjectPath) != path {
		added = c.next("InterfacesAdded")
	}
	ifaces := added.Body[1].(map[string]map[string]dbus.Variant)
	if _, ok := ifaces[DeviceInterface]; !ok {
		t.Errorf("InterfacesAdded lacks Device1: %v", ifaces)
	}
	if _, ok := ifaces[InputInterface]; !ok {
		t.Errorf("InterfacesAdded lacks Input1: %v", ifaces)
	}

	if err := s.Pair("hci0", "A0:AB:51:33:B7:12"); err != nil {
		t.Fatal(err)
	}
	if got := c.changed(path, DeviceInterface); got["Bonded"] != true {
		t.Errorf("first change after Pair = %v, want Bonded true", got)
	}
	if got := c.changed(path, DeviceInterface); got["Paired"] != true {
		t.Errorf("second change after Pair = %v, want Paired true", got)
	}
	if err := s.Pair("hci0", "A0:AB:51:33:B7:12"); errorName(err) != "org.bluez.Error.AlreadyExists" {
		t.Errorf("pairing twice: %v, want org.bluez.Error.AlreadyExists", err)
	}

	if err := s.Connect("hci0", "A0:AB:51:33:B7:12"); err != nil {
		t.Fatal(err)
	}
	if got := c.changed(path, DeviceInterface); got["Connected"] != true {
		t.Errorf("after Connect: %v, want Connected true", got)
	}
	if got := c.changed(path, DeviceInterface); got["ServicesResolved"] != true {
		t.Errorf("after Connect: %v, want ServicesResolved true", got)
	}
	if got := c.managedObjects()[path][DeviceInterface]["Connected"].Value(); got != true {
		t.Errorf("GetManagedObjects after Connect: Connected = %v", got)
	}

	if err := s.Disconnect("hci0", "A0:AB:51:33:B7:12", ReasonTimeout); err != nil {
		t.Fatal(err)
	}
	if got := c.changed(path, DeviceInterface); got["ServicesResolved"] != false {
		t.Errorf("after Disconnect: %v, want ServicesResolved false", got)
	}
	if got := c.changed(path, DeviceInterface); got["Connected"] != false {
		t.Errorf("after Disconnect: %v, want Connected false", got)
	}
	if d := c.next("Disconnected"); d.Path != path || d.Body[0] != "org.bluez.Reason.Timeout" {
		t.Errorf("Disconnected signal = %v %v", d.Path, d.Body)
	}

	if err := s.RemoveDevice("hci0", "A0:AB:51:33:B7:12"); err != nil {
		t.Fatal(err)
	}
	removed := c.next("InterfacesRemoved")
	for removed.Body[0].(dbus.ObjectPath) != path {
		removed = c.next("InterfacesRemoved")
	}
	names := removed.Body[1].([]string)
	for _, want := range []string{DeviceInterface, InputInterface} {
		if !contains(names, want) {
			t.Errorf("InterfacesRemoved lists %v, lacking %s", names, want)
		}
	}
	if _, ok := c.managedObjects()[path]; ok {
		t.Error("removed device still in GetManagedObjects")
	}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

var hexKey = regexp.MustCompile(`^[0-9A-F]{32}$`)

// Pairing a classic device writes the tree as bluetoothd does, with the
// same groups and keys in the same order as the real 8Bitdo bond in the
// fixtures, and the SDP records given.
func TestPairWritesClassicBond(t *testing.T) {
	s, _ := setup(t, Options{})
	fixtureInfo := readKeyFile(t, filepath.Join(fixtureDir, "8bitdo-nes30-pro.info"))
	fixtureCache := readKeyFile(t, filepath.Join(fixtureDir, "8bitdo-nes30-pro.cache"))

	// Re-add the gamepad with the fixture's own SDP records.
	if err := s.RemoveDevice("hci0", gamepadAddr); err != nil {
		t.Fatal(err)
	}
	pad := gamepad
	pad.ServiceRecords = fixtureCache.values["ServiceRecords"]
	if _, err := s.AddDevice("hci0", gamepadAddr, pad); err != nil {
		t.Fatal(err)
	}
	if err := s.Pair("hci0", gamepadAddr); err != nil {
		t.Fatal(err)
	}

	adapterDir := filepath.Join(s.StorageDir(), adapterAddr)
	infoPath := filepath.Join(adapterDir, gamepadAddr, "info")
	cachePath := filepath.Join(adapterDir, "cache", gamepadAddr)
	for path, want := range map[string]os.FileMode{
		adapterDir: 0o700, filepath.Dir(infoPath): 0o700, filepath.Dir(cachePath): 0o700,
		infoPath: 0o600, cachePath: 0o600,
	} {
		if got := mode(t, path); got != want {
			t.Errorf("%s: mode %v, want %v", path, got, want)
		}
	}

	info := readKeyFile(t, infoPath)
	if !reflect.DeepEqual(info.groups, fixtureInfo.groups) || !reflect.DeepEqual(info.keys, fixtureInfo.keys) {
		t.Errorf("info layout\n got %v %v\nwant %v %v (the fixture)", info.groups, info.keys, fixtureInfo.groups, fixtureInfo.keys)
	}
	for group, keys := range map[string][]string{"General": {"Name", "Class", "SupportedTechnologies", "Blocked", "Services"}, "DeviceID": {"Source", "Vendor", "Product", "Version"}, "LinkKey": {"PINLength"}} {
		for _, k := range keys {
			if info.values[group][k] != fixtureInfo.values[group][k] {
				t.Errorf("[%s] %s = %q, the fixture has %q", group, k, info.values[group][k], fixtureInfo.values[group][k])
			}
		}
	}
	if key := info.values["LinkKey"]["Key"]; !hexKey.MatchString(key) || key == fixtureInfo.values["LinkKey"]["Key"] {
		t.Errorf("LinkKey Key = %q, want a generated 32-digit uppercase hex key", key)
	}
	if info.values["LinkKey"]["Type"] != "4" {
		t.Errorf("LinkKey Type = %q, want 4 (Secure Simple Pairing)", info.values["LinkKey"]["Type"])
	}

	cache := readKeyFile(t, cachePath)
	if !reflect.DeepEqual(cache.values, fixtureCache.values) || !reflect.DeepEqual(cache.groups, fixtureCache.groups) {
		t.Errorf("cache\n got %v\nwant %v", cache.values, fixtureCache.values)
	}
	// A named neighbour's name is cached although it never paired, and it
	// has no bond directory: what a bond reader must leave out. A
	// nameless one leaves nothing.
	const neighbour = "7C:66:EF:22:E7:80"
	if _, err := s.AddDevice("hci0", neighbour, Device{Name: "Neighbour's phone", Class: 0x5a020c}); err != nil {
		t.Fatal(err)
	}
	if got := readKeyFile(t, filepath.Join(adapterDir, "cache", neighbour)).values; !reflect.DeepEqual(got, map[string]map[string]string{"General": {"Name": "Neighbour's phone"}}) {
		t.Errorf("neighbour's cache = %v", got)
	}
	for _, addr := range []string{neighbour, strayAddr} {
		if _, err := os.Stat(filepath.Join(adapterDir, addr)); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("unpaired %s has a bond directory: %v", addr, err)
		}
	}
	if _, err := os.Stat(filepath.Join(adapterDir, "cache", strayAddr)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("nameless %s has a cache file: %v", strayAddr, err)
	}
	if data, err := os.ReadFile(filepath.Join(adapterDir, "settings")); err != nil || len(data) != 0 {
		t.Errorf("adapter settings: %q, %v; want an empty file", data, err)
	}
}

// Pairing an LE device writes its key groups at once and the address type
// later, on bluetoothd's idle callback. The file shows the first write
// alone only when it is read before Options.LateWrite has passed since
// Pair was called; a reading that came later proves nothing either way,
// so another mouse pairs, on a host slow enough to need it.
func TestPairWritesLEBondAddressTypeLate(t *testing.T) {
	const late = 2 * time.Second
	s, _ := setup(t, Options{LateWrite: late})
	addr := mouseAddr
	var infoPath string
	var info keyFile
	attempts := 0
	poll.WaitFor(t, context.Background(), "an LE bond read back before its late write was due", 2*time.Minute, func() (bool, string) {
		if attempts++; attempts > 1 {
			addr = fmt.Sprintf("C2:11:22:33:45:%02X", attempts)
			if _, err := s.AddDevice("hci0", addr, mouse); err != nil {
				t.Fatal(err)
			}
		}
		start := time.Now()
		if err := s.Pair("hci0", addr); err != nil {
			t.Fatal(err)
		}
		infoPath = filepath.Join(s.StorageDir(), adapterAddr, addr, "info")
		info = readKeyFile(t, infoPath)
		took := time.Since(start)
		return took < late, fmt.Sprintf("pairing %s and reading its bond took %v", addr, took)
	})
	wantGroups := []string{"General", "IdentityResolvingKey", "LongTermKey", "PeripheralLongTermKey"}
	if diff := cmp.Diff(info.groups, wantGroups); diff != "" {
		t.Errorf("LE info groups (-info.groups +wantGroups):\n%s", diff)
	}
	for _, g := range []string{"IdentityResolvingKey", "LongTermKey", "PeripheralLongTermKey"} {
		if !hexKey.MatchString(info.values[g]["Key"]) {
			t.Errorf("[%s] Key = %q", g, info.values[g]["Key"])
		}
	}
	if info.values["LongTermKey"]["Key"] == info.values["PeripheralLongTermKey"]["Key"] {
		t.Error("central and peripheral LTKs are equal; each key is generated")
	}
	gen := info.values["General"]
	if gen["SupportedTechnologies"] != "LE;" || gen["Appearance"] != "0x03c2" || gen["WakeAllowed"] != "true" {
		t.Errorf("LE [General] = %v", gen)
	}
	if _, ok := gen["AddressType"]; ok {
		t.Error("AddressType written with the keys; bluetoothd writes it later, on an idle callback")
	}
	poll.WaitFor(t, context.Background(), "AddressType=static written after pairing", waitTimeout, func() (bool, string) {
		at := readKeyFile(t, infoPath).values["General"]["AddressType"]
		return at == "static", fmt.Sprintf("AddressType = %q", at)
	})
}

// Client property writes follow BlueZ: writable ones change and signal,
// others fail with gdbus's and BlueZ's errors.
func TestPropertyWrites(t *testing.T) {
	_, c := setup(t, Options{})
	hci0 := AdapterPath("hci0")
	if err := c.set(hci0, AdapterInterface, "Connectable", true); err != nil {
		t.Fatalf("Set Connectable: %v", err)
	}
	if got := c.changed(hci0, AdapterInterface); got["Connectable"] != true {
		t.Errorf("after Set Connectable: %v", got)
	}
	for _, tc := range []struct {
		name  string
		value any
		want  string
	}{
		{"Address", "00:00:00:00:00:01", "org.freedesktop.DBus.Error.PropertyReadOnly"},
		{"Connectable", "yes", "org.freedesktop.DBus.Error.InvalidSignature"},
		{"NoSuchThing", true, "org.freedesktop.DBus.Error.UnknownProperty"},
	} {
		if err := c.set(hci0, AdapterInterface, tc.name, tc.value); errorName(err) != tc.want {
			t.Errorf("Set %s=%v: %v, want %s", tc.name, tc.value, err, tc.want)
		}
	}
	if err := c.set(hci0, "org.bluez.Nothing1", "X", true); errorName(err) != "org.freedesktop.DBus.Error.InvalidArgs" {
		t.Errorf("Set on an unknown interface: %v", err)
	}
	if err := c.set(hci0, AdapterInterface, "Discoverable", true); err != nil {
		t.Fatal(err)
	}
	if got := c.changed(hci0, AdapterInterface); got["Discoverable"] != true {
		t.Errorf("after Set Discoverable: %v", got)
	}
	// Adapter.rst: clearing Connectable clears Discoverable.
	if err := c.set(hci0, AdapterInterface, "Connectable", false); err != nil {
		t.Fatal(err)
	}
	if got := c.changed(hci0, AdapterInterface); got["Connectable"] != false || got["Discoverable"] != false {
		t.Errorf("after clearing Connectable: %v", got)
	}
	// bluetoothd makes the adapter connectable before it asks the kernel
	// for discoverable, which the kernel refuses otherwise.
	if err := c.set(hci0, AdapterInterface, "Discoverable", true); err != nil {
		t.Fatalf("Discoverable on a non-connectable adapter: %v", err)
	}
	if got := c.changed(hci0, AdapterInterface); got["Connectable"] != true || got["Discoverable"] != true {
		t.Errorf("after Discoverable on a non-connectable adapter: %v", got)
	}
	if err := c.set(hci0, AdapterInterface, "Powered", false); err != nil {
		t.Fatal(err)
	}
	if got := c.changed(hci0, AdapterInterface); got["Powered"] != false || got["PowerState"] != "off" {
		t.Errorf("after powering off: %v", got)
	}

	dev := DevicePath("hci0", gamepadAddr)
	if err := c.set(dev, DeviceInterface, "Trusted", true); err != nil {
		t.Fatal(err)
	}
	if got := c.changed(dev, DeviceInterface); got["Trusted"] != true {
		t.Errorf("after Set Trusted: %v", got)
	}
	if err := c.set(dev, DeviceInterface, "Paired", true); errorName(err) != "org.freedesktop.DBus.Error.PropertyReadOnly" {
		t.Errorf("Set Paired: %v, want PropertyReadOnly", err)
	}
}

// Restarting the BlueZ side is bluetoothd restarting: org.bluez leaves the
// bus and comes back, and the devices come back from storage, bonded ones
// paired and disconnected, unbonded ones gone.
func TestRestartReloadsBonds(t *testing.T) {
	s, c := setup(t, Options{})
	dev := DevicePath("hci0", gamepadAddr)
	if err := s.Pair("hci0", gamepadAddr); err != nil {
		t.Fatal(err)
	}
	if err := c.set(dev, DeviceInterface, "Trusted", true); err != nil {
		t.Fatal(err)
	}
	if err := s.Connect("hci0", gamepadAddr); err != nil {
		t.Fatal(err)
	}
	info := readKeyFile(t, filepath.Join(s.StorageDir(), adapterAddr, gamepadAddr, "info"))
	if info.values["General"]["Trusted"] != "true" {
		t.Errorf("Trusted not stored: %v", info.values["General"])
	}

	if err := s.StopBlueZ(); err != nil {
		t.Fatal(err)
	}
	left := c.next("NameOwnerChanged")
	if left.Body[0] != Service || left.Body[2] != "" {
		t.Errorf("NameOwnerChanged on stop = %v, want org.bluez losing its owner", left.Body)
	}
	// Without NO_AUTO_START the system bus tries to activate org.bluez
	// through its launch helper, and fails; with it, the name has no owner.
	err := c.conn.Object(Service, "/").Call("org.freedesktop.DBus.ObjectManager.GetManagedObjects", dbus.FlagNoAutoStart).Err
	if errorName(err) != "org.freedesktop.DBus.Error.NameHasNoOwner" {
		t.Errorf("GetManagedObjects with BlueZ stopped: %v (%s)", err, errorName(err))
	}
	if err := c.conn.Object(Service, "/").Call("org.freedesktop.DBus.ObjectManager.GetManagedObjects", 0).Err; err == nil {
		t.Error("GetManagedObjects with BlueZ stopped succeeded")
	}

	if err := s.StartBlueZ(t.Context()); err != nil {
		t.Fatal(err)
	}
	if back := c.next("NameOwnerChanged"); back.Body[2] == "" {
		t.Errorf("NameOwnerChanged on start = %v", back.Body)
	}
	objs := c.managedObjects()
	if _, ok := objs[AdapterPath("hci0")]; !ok {
		t.Fatal("adapter not registered again")
	}
	got := objs[dev][DeviceInterface]
	for name, want := range map[string]any{
		"Paired": true, "Bonded": true, "Trusted": true, "Connected": false, "Name": gamepad.Name,
		"Class": gamepad.Class, "Modalias": gamepad.Modalias, "UUIDs": gamepad.UUIDs, "Icon": "input-gaming",
	} {
		if v := got[name].Value(); !reflect.DeepEqual(v, want) {
			t.Errorf("reloaded gamepad %s = %#v, want %#v", name, v, want)
		}
	}
	for _, gone := range []string{mouseAddr, strayAddr} {
		if _, ok := objs[DevicePath("hci0", gone)]; ok {
			t.Errorf("unbonded %s came back after a restart", gone)
		}
	}
}

// The real LE bond in the fixtures (both PeripheralLongTermKey and the old
// SlaveLongTermKey, a bare 16-bit Services entry, static address) loads as
// a paired LE device.
func TestLoadsFixtureLEBond(t *testing.T) {
	requireRoot(t)
	storage := t.TempDir()
	data, err := os.ReadFile(filepath.Join(fixtureDir, "razer-basilisk-x-hyperspeed.info"))
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(storage, adapterAddr, mouseAddr)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "info"), data, 0o600); err != nil {
		t.Fatal(err)
	}
	s := New(t, Options{StorageDir: storage})
	c := newClient(t, s)
	if _, err := s.AddAdapter("hci0", adapterAddr); err != nil {
		t.Fatal(err)
	}
	got := c.managedObjects()[DevicePath("hci0", mouseAddr)][DeviceInterface]
	for name, want := range map[string]any{
		"Paired": true, "Bonded": true, "AddressType": "random", "Name": "Basilisk X HyperSpeed",
		"Appearance": uint16(0x03c2), "Icon": "input-mouse", "Trusted": true,
		"UUIDs": []string{gapUUID}, "Modalias": "usb:v1532p0082d0001",
	} {
		if v := got[name].Value(); !reflect.DeepEqual(v, want) {
			t.Errorf("loaded %s = %#v, want %#v", name, v, want)
		}
	}
	if err := s.Stop(); err != nil {
		t.Fatal(err)
	}
	if after, err := os.ReadFile(filepath.Join(dir, "info")); err != nil || string(after) != string(data) {
		t.Errorf("a given storage directory was changed or removed by Stop: %v", err)
	}
}

// Stop makes org.bluez leave the bus and removes the bus.
func TestStop(t *testing.T) {
	s, c := setup(t, Options{})
	if err := s.Stop(); err != nil {
		t.Fatal(err)
	}
	if left := c.next("NameOwnerChanged"); left.Body[2] != "" {
		t.Errorf("NameOwnerChanged on Stop = %v", left.Body)
	}
	if _, err := os.Stat(s.SocketPath()); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("bus socket after Stop: %v", err)
	}
	if err := s.Stop(); err != nil {
		t.Errorf("second Stop: %v", err)
	}
}

func TestBadRequests(t *testing.T) {
	s, _ := setup(t, Options{})
	addDevice := func(addr string, d Device) error { _, err := s.AddDevice("hci0", addr, d); return err }
	for _, tc := range []struct {
		name string
		err  error
		want string
	}{
		{"bad adapter name", func() error { _, err := s.AddAdapter("usb0", "00:11:22:33:44:55"); return err }(), `"usb0" is not hciN`},
		{"bad address", func() error { _, err := s.AddAdapter("hci1", "00:11:22:33:44"); return err }(), "is not a Bluetooth address"},
		{"adapter twice", func() error { _, err := s.AddAdapter("hci0", adapterAddr); return err }(), "adapter hci0 exists"},
		{"no such adapter", func() error { _, err := s.AddDevice("hci9", "00:11:22:33:44:55", Device{}); return err }(), "adapter hci9 does not exist"},
		{"device twice", addDevice(gamepadAddr, Device{}), "exists on hci0"},
		{"random BR/EDR", addDevice("00:11:22:33:44:56", Device{AddressType: "random"}), "address type 'random' on bredr"},
		{"bad modalias", addDevice("00:11:22:33:44:57", Device{Modalias: "pci:1234"}), "modalias 'pci:1234'"},
		{"no such device", s.Pair("hci0", "00:11:22:33:44:58"), "does not exist on hci0"},
		{"not connected", s.Disconnect("hci0", gamepadAddr, ReasonRemote), "Not Connected"},
		{"bad reason", s.Disconnect("hci0", gamepadAddr, "Gremlins"), "reason 'Gremlins'"},
	} {
		if tc.err == nil || !strings.Contains(tc.err.Error(), tc.want) {
			t.Errorf("%s: %v, want an error containing %q", tc.name, tc.err, tc.want)
		}
	}
}

// TestMediaEndpointAdvertised registers an A2DP source endpoint as
// WirePlumber does: the adapter's UUIDs gain the profile, as bluetoothd
// adds its SDP record, and lose it when the endpoint goes or its caller
// leaves the bus.
func TestMediaEndpointAdvertised(t *testing.T) {
	s := New(t, Options{})
	hci0, err := s.AddAdapter("hci0", "00:1A:7D:DA:71:13")
	if err != nil {
		t.Fatal(err)
	}
	const source = "0000110a-0000-1000-8000-00805f9b34fb"
	uuids := func(c *client) []string {
		t.Helper()
		return variantStrings(t, c.managedObjects()[hci0][AdapterInterface]["UUIDs"])
	}
	c := newClient(t, s)
	if slices.Contains(uuids(c), source) {
		t.Fatalf("a fresh adapter advertises the audio source: %v", uuids(c))
	}
	props := map[string]dbus.Variant{"UUID": dbus.MakeVariant(source), "Codec": dbus.MakeVariant(byte(0))}
	if err := c.conn.Object(Service, hci0).Call(MediaInterface+".RegisterEndpoint", 0, dbus.ObjectPath("/ep/source"), props).Err; err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(uuids(c), source) {
		t.Fatalf("the registered endpoint's profile is not advertised: %v", uuids(c))
	}
	if err := c.conn.Object(Service, hci0).Call(MediaInterface+".UnregisterEndpoint", 0, dbus.ObjectPath("/ep/source")).Err; err != nil {
		t.Fatal(err)
	}
	if slices.Contains(uuids(c), source) {
		t.Fatalf("the unregistered endpoint's profile is still advertised: %v", uuids(c))
	}

	// The caller leaving the bus drops its endpoints.
	other := newClient(t, s)
	if err := other.conn.Object(Service, hci0).Call(MediaInterface+".RegisterEndpoint", 0, dbus.ObjectPath("/ep/source"), props).Err; err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(uuids(c), source) {
		t.Fatalf("the second caller's endpoint is not advertised: %v", uuids(c))
	}
	other.conn.Close()
	poll.WaitFor(t, context.Background(), "the profile of a caller that left no longer advertised", waitTimeout, func() (bool, string) {
		u := uuids(c)
		return !slices.Contains(u, source), fmt.Sprintf("UUIDs %v", u)
	})
}

func variantStrings(t *testing.T, v dbus.Variant) []string {
	t.Helper()
	var out []string
	if err := dbus.Store([]any{v.Value()}, &out); err != nil {
		t.Fatalf("UUIDs %v: %v", v, err)
	}
	return out
}

// SetBattery adds Battery1 as BlueZ's battery plugin does, updates its
// Percentage, and takes it away as the plugin does when the link drops.
func TestSetBattery(t *testing.T) {
	s, c := setup(t, Options{})
	path := DevicePath("hci0", gamepadAddr)
	if err := s.SetBattery("hci0", gamepadAddr, 40); err != nil {
		t.Fatal(err)
	}
	// The device's own InterfacesAdded (setup's) comes first.
	var ifaces map[string]map[string]dbus.Variant
	for {
		added := c.next("InterfacesAdded")
		ifaces = added.Body[1].(map[string]map[string]dbus.Variant)
		if _, ok := ifaces[DeviceInterface]; added.Body[0].(dbus.ObjectPath) == path && !ok {
			break
		}
	}
	if v, ok := ifaces["org.bluez.Battery1"]["Percentage"]; !ok || v.Value() != byte(40) || len(ifaces) != 1 {
		t.Errorf("InterfacesAdded carries %v, want Battery1 alone, Percentage 40 as a byte", ifaces)
	}
	if v := c.managedObjects()[path]["org.bluez.Battery1"]["Percentage"]; v.Value() != byte(40) {
		t.Errorf("GetManagedObjects: Percentage %v", v)
	}
	if err := s.SetBattery("hci0", gamepadAddr, 35); err != nil {
		t.Fatal(err)
	}
	if got := c.changed(path, "org.bluez.Battery1"); got["Percentage"] != byte(35) {
		t.Errorf("after SetBattery 35: %v", got)
	}
	if err := s.SetBattery("hci0", gamepadAddr, -1); err != nil {
		t.Fatal(err)
	}
	removed := c.next("InterfacesRemoved")
	for removed.Body[0].(dbus.ObjectPath) != path {
		removed = c.next("InterfacesRemoved")
	}
	if names := removed.Body[1].([]string); !slices.Equal(names, []string{"org.bluez.Battery1"}) {
		t.Errorf("InterfacesRemoved lists %v, want Battery1 alone", names)
	}
	if _, ok := c.managedObjects()[path]["org.bluez.Battery1"]; ok {
		t.Error("Battery1 still in GetManagedObjects")
	}
	if _, ok := c.managedObjects()[path][DeviceInterface]; !ok {
		t.Error("the device went with its battery")
	}
	if err := s.SetBattery("hci0", gamepadAddr, 101); errorName(err) != "sh.liken.BluezSim1.InvalidArguments" {
		t.Errorf("a charge of 101%%: %v, want refused", err)
	}
}
