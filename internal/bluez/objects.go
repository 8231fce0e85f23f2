// SPDX-License-Identifier: Apache-2.0

package bluez

import (
	"cmp"
	"fmt"
	"path"
	"slices"
	"strings"

	"github.com/godbus/dbus/v5"
)

// BlueZ's bus name and the interfaces this package reads (BlueZ
// doc/org.bluez.Adapter.rst, doc/org.bluez.Device.rst).
const (
	Service          = "org.bluez"
	AdapterInterface = "org.bluez.Adapter1"
	DeviceInterface  = "org.bluez.Device1"
	// MediaEndpointInterface is a stream endpoint (BlueZ
	// doc/org.bluez.MediaEndpoint.rst); bluetoothd exports a connected
	// device's remote ones at <device>/sep<N>.
	MediaEndpointInterface = "org.bluez.MediaEndpoint1"
)

// Standard D-Bus interfaces (D-Bus specification, "Standard Interfaces").
const (
	objectManagerInterface = "org.freedesktop.DBus.ObjectManager"
	propertiesInterface    = "org.freedesktop.DBus.Properties"
)

// Adapter is one org.bluez.Adapter1 object: a local radio as bluetoothd
// reports it. A property bluetoothd did not report is its zero value.
type Adapter struct {
	// Path is the object path, e.g. /org/bluez/hci0.
	Path dbus.ObjectPath
	// Address is the adapter's public address as BlueZ spells it,
	// "AA:BB:CC:DD:EE:FF" (upper case, colons).
	Address string
	// Alias is the adapter's friendly name.
	Alias string
	// Powered is true while the radio is on.
	Powered bool
	// Connectable is true while page scan is on, i.e. while bonded devices
	// can connect to this adapter. ReportsConnectable says whether
	// bluetoothd has the property at all: BlueZ 5.66 (Debian 12) has not
	// (measured in the VM tier: "No such property 'Connectable'").
	Connectable        bool
	ReportsConnectable bool
	Discovering        bool
	Discoverable       bool
	Pairable           bool
	// DiscoverableTimeout and PairableTimeout are in seconds; 0 means
	// none.
	DiscoverableTimeout uint32
	PairableTimeout     uint32
	// Modalias is the adapter's Device ID, "usb:v1D6Bp0246d0542": vendor
	// 0x1d6b and product 0x0246 are BlueZ's own, and the d field is
	// bluetoothd's version (0x0542 is 5.66).
	Modalias string
}

// BlueZVersion returns bluetoothd's version ("5.66") from the Device ID
// it puts in the adapter's Modalias, or "" when the Modalias is not
// BlueZ's (a main.conf DeviceID overrides it).
func (a Adapter) BlueZVersion() string {
	var vendor, product, version uint32
	if n, err := fmt.Sscanf(a.Modalias, "usb:v%04Xp%04Xd%04X", &vendor, &product, &version); err != nil || n != 3 ||
		vendor != 0x1d6b || product != 0x0246 {
		return ""
	}
	return fmt.Sprintf("%d.%d", version>>8, version&0xff)
}

// NeedsPageScan reports whether the adapter is powered but not connectable:
// a fresh bluetoothd starts with page scan off, and then no bonded device
// can reconnect, with no error anywhere. An adapter that is off is left
// alone; BlueZ's AutoEnable powers it. A bluetoothd without the
// Connectable property cannot be asked over D-Bus, so it is not asked.
func (a Adapter) NeedsPageScan() bool { return a.Powered && a.ReportsConnectable && !a.Connectable }

// DisplayName is the one name every liken object shows for a device (a
// Peripheral's status.name, its DRA device's name attribute, Events):
// Alias, which is a person's alias (Device1.Alias, set from a
// Peripheral's spec.alias) or else the name the device reported, and Name
// where Alias is empty or is the one BlueZ makes up from the address
// ("E4-17-D8-C5-67-6D"), which says nothing the address does not. Empty
// when the device never reported a name and has no alias. The text is as
// BlueZ gave it: clean it (DisplayText) before publishing it.
func (d Device) DisplayName() string {
	if d.Alias == "" || strings.EqualFold(d.Alias, strings.ReplaceAll(d.Address, ":", "-")) {
		return d.Name
	}
	return d.Alias
}

// Device is one org.bluez.Device1 object: a remote device bluetoothd knows
// (seen, paired or bonded). A property bluetoothd did not report is its
// zero value, which the properties below document as "unknown".
type Device struct {
	// Path is the object path, e.g. /org/bluez/hci0/dev_E4_17_D8_C5_67_6D.
	Path dbus.ObjectPath
	// Adapter is the path of the adapter the device belongs to: the
	// Adapter property, or the parent of Path when that is absent.
	Adapter dbus.ObjectPath
	// Address is the peer address as BlueZ spells it ("E4:17:D8:C5:67:6D").
	Address string
	// AddressType is "public" or "random".
	AddressType string
	// Name is the remote name the device reported; Alias is the name to
	// show (the user's alias, else Name, else the address).
	Name  string
	Alias string
	// Paired is true once pairing completed; Bonded (BlueZ 5.67 and later)
	// once its keys are stored, so that it can reconnect.
	Paired    bool
	Bonded    bool
	Connected bool
	Trusted   bool
	// Class is the 24-bit Class of Device of a BR/EDR device, 0 if unknown.
	Class uint32
	// Appearance is the GAP appearance of an LE device, 0 if unknown.
	Appearance uint16
	// Icon is a freedesktop icon name such as "input-gaming".
	Icon string
	// Modalias is the Device ID record, e.g. "usb:v2DC8p3820d0100".
	Modalias string
	// UUIDs are the 128-bit service UUIDs in BlueZ's lower-case spelling.
	UUIDs []string
	// LegacyPairing is true for a device without Secure Simple Pairing
	// (it takes a PIN code).
	LegacyPairing bool
	// RSSI is the signal strength of the last inquiry result or
	// advertisement in dBm; HasRSSI is false when BlueZ reported none.
	RSSI    int16
	HasRSSI bool
	// Battery is org.bluez.Battery1.Percentage (0 to 100, D-Bus type
	// "y"); HasBattery is false when the device has no Battery1, or its
	// Percentage is absent or of another type. BlueZ's GATT battery
	// plugin (profiles/battery) drops Battery1 when the link goes down,
	// so a device off the air usually has none.
	Battery    uint8
	HasBattery bool
	// Endpoints are the device's remote stream endpoints bluetoothd
	// exports (MediaEndpoint1 objects whose Device is this one), by
	// path; bluetoothd exports them while the device is connected, from
	// an AVDTP discovery or from its cache of the last one.
	Endpoints []RemoteEndpoint
}

// Objects is BlueZ's object tree as one GetManagedObjects answer read it,
// sorted by object path.
type Objects struct {
	Adapters []Adapter
	Devices  []Device
	// Problems lists properties that were present with the wrong D-Bus
	// type (each a *PropertyError). Such a property is read as absent and
	// the rest of the object is kept: one odd property must not hide a
	// device that a claim may hold.
	Problems []error
}

// Device returns the device at path.
func (o Objects) Device(path dbus.ObjectPath) (Device, bool) {
	i := slices.IndexFunc(o.Devices, func(d Device) bool { return d.Path == path })
	if i < 0 {
		return Device{}, false
	}
	return o.Devices[i], true
}

// Adapter returns the adapter at path.
func (o Objects) Adapter(path dbus.ObjectPath) (Adapter, bool) {
	i := slices.IndexFunc(o.Adapters, func(a Adapter) bool { return a.Path == path })
	if i < 0 {
		return Adapter{}, false
	}
	return o.Adapters[i], true
}

// RemoteEndpoint is one remote A2DP stream endpoint (MediaEndpoint1).
type RemoteEndpoint struct {
	Path dbus.ObjectPath
	// UUID is its role in lower case: the A2DP sink UUID
	// (0000110b-...) for a speaker's endpoint.
	UUID string
	// Codec is the A2DP codec type (0x00 SBC, 0xff vendor) and
	// Capabilities its codec information element.
	Codec        byte
	Capabilities []byte
	// DelayReporting is the endpoint's delay reporting capability.
	DelayReporting bool
}

// PropertyError is a property that BlueZ reported with another D-Bus type
// than its documented one.
type PropertyError struct {
	Path      dbus.ObjectPath
	Interface string
	Property  string
	// Want and Got are D-Bus type signatures, e.g. "u" and "s".
	Want, Got string
}

func (e *PropertyError) Error() string {
	return fmt.Sprintf("%s: %s.%s has D-Bus type %q, want %q; read as absent", e.Path, e.Interface, e.Property, e.Got, e.Want)
}

// managedObjects is the reply shape of ObjectManager.GetManagedObjects:
// path → interface → property → value.
type managedObjects = map[dbus.ObjectPath]map[string]map[string]dbus.Variant

// decodeObjects turns a GetManagedObjects reply into typed values.
func decodeObjects(reply managedObjects) Objects {
	var out Objects
	for p, ifaces := range reply {
		if props, ok := ifaces[AdapterInterface]; ok {
			r := propReader{path: p, iface: AdapterInterface, props: props}
			out.Adapters = append(out.Adapters, r.adapter())
			out.Problems = append(out.Problems, r.errs...)
		}
		if props, ok := ifaces[DeviceInterface]; ok {
			r := propReader{path: p, iface: DeviceInterface, props: props}
			d := r.device()
			if bat, ok := ifaces[BatteryInterface]; ok {
				br := propReader{path: p, iface: BatteryInterface, props: bat}
				d.Battery, d.HasBattery = lookup[uint8](&br, "Percentage")
				r.errs = append(r.errs, br.errs...)
			}
			out.Devices = append(out.Devices, d)
			out.Problems = append(out.Problems, r.errs...)
		}
	}
	for p, ifaces := range reply {
		props, ok := ifaces[MediaEndpointInterface]
		if !ok {
			continue
		}
		r := propReader{path: p, iface: MediaEndpointInterface, props: props}
		dev := r.objectPath("Device")
		ep := RemoteEndpoint{Path: p, UUID: strings.ToLower(r.str("UUID")), Codec: get[byte](&r, "Codec"),
			Capabilities: get[[]byte](&r, "Capabilities"), DelayReporting: r.boolean("DelayReporting")}
		out.Problems = append(out.Problems, r.errs...)
		if i := slices.IndexFunc(out.Devices, func(d Device) bool { return d.Path == dev }); dev != "" && i >= 0 {
			out.Devices[i].Endpoints = append(out.Devices[i].Endpoints, ep)
		}
	}
	for i := range out.Devices {
		slices.SortFunc(out.Devices[i].Endpoints, func(a, b RemoteEndpoint) int { return cmp.Compare(a.Path, b.Path) })
	}
	slices.SortFunc(out.Adapters, func(a, b Adapter) int { return cmp.Compare(a.Path, b.Path) })
	slices.SortFunc(out.Devices, func(a, b Device) int { return cmp.Compare(a.Path, b.Path) })
	slices.SortFunc(out.Problems, func(a, b error) int { return cmp.Compare(a.Error(), b.Error()) })
	return out
}

// propReader reads one interface's properties, collecting type errors.
type propReader struct {
	path  dbus.ObjectPath
	iface string
	props map[string]dbus.Variant
	errs  []error
}

func (r *propReader) adapter() Adapter {
	return Adapter{
		Path:                r.path,
		Address:             r.str("Address"),
		Alias:               r.str("Alias"),
		Powered:             r.boolean("Powered"),
		Connectable:         r.boolean("Connectable"),
		ReportsConnectable:  r.has("Connectable"),
		Discovering:         r.boolean("Discovering"),
		Discoverable:        r.boolean("Discoverable"),
		Pairable:            r.boolean("Pairable"),
		DiscoverableTimeout: get[uint32](r, "DiscoverableTimeout"),
		PairableTimeout:     get[uint32](r, "PairableTimeout"),
		Modalias:            r.str("Modalias"),
	}
}

func (r *propReader) device() Device {
	d := Device{
		Path:          r.path,
		Adapter:       r.objectPath("Adapter"),
		Address:       r.str("Address"),
		AddressType:   r.str("AddressType"),
		Name:          r.str("Name"),
		Alias:         r.str("Alias"),
		Paired:        r.boolean("Paired"),
		Bonded:        r.boolean("Bonded"),
		Connected:     r.boolean("Connected"),
		Trusted:       r.boolean("Trusted"),
		Class:         get[uint32](r, "Class"),
		Appearance:    get[uint16](r, "Appearance"),
		Icon:          r.str("Icon"),
		Modalias:      r.str("Modalias"),
		UUIDs:         get[[]string](r, "UUIDs"),
		LegacyPairing: r.boolean("LegacyPairing"),
		RSSI:          get[int16](r, "RSSI"),
		HasRSSI:       r.has("RSSI"),
	}
	if d.Adapter == "" {
		// BlueZ nests a device under its adapter's path.
		d.Adapter = dbus.ObjectPath(path.Dir(string(r.path)))
	}
	return d
}

func (r *propReader) str(name string) string                 { return get[string](r, name) }
func (r *propReader) boolean(name string) bool               { return get[bool](r, name) }
func (r *propReader) has(name string) bool                   { _, ok := r.props[name]; return ok }
func (r *propReader) objectPath(name string) dbus.ObjectPath { return get[dbus.ObjectPath](r, name) }

// get returns property name as T, the zero T when it is absent, and the
// zero T plus a recorded *PropertyError when it has another type.
func get[T any](r *propReader, name string) T {
	t, _ := lookup[T](r, name)
	return t
}

// lookup is get that also says whether the property was present with
// type T.
func lookup[T any](r *propReader, name string) (T, bool) {
	var zero T
	v, ok := r.props[name]
	if !ok {
		return zero, false
	}
	t, ok := v.Value().(T)
	if !ok {
		r.errs = append(r.errs, &PropertyError{
			Path: r.path, Interface: r.iface, Property: name,
			Want: dbus.SignatureOf(zero).String(), Got: v.Signature().String(),
		})
		return zero, false
	}
	return t, true
}
