// SPDX-License-Identifier: Apache-2.0

package bluezsim

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"time"

	"github.com/godbus/dbus/v5"
)

// BlueZ's D-Bus interfaces (BlueZ doc/org.bluez.*.rst).
const (
	AdapterInterface      = "org.bluez.Adapter1"
	DeviceInterface       = "org.bluez.Device1"
	InputInterface        = "org.bluez.Input1"
	MediaInterface        = "org.bluez.Media1"
	AgentManagerInterface = "org.bluez.AgentManager1"
)

// Bearer is the radio a device is reached over.
type Bearer string

const (
	// BREDR is classic Bluetooth: link keys, class of device, SDP.
	BREDR Bearer = "bredr"
	// LE is Bluetooth Low Energy: long-term keys, appearance, GATT.
	LE Bearer = "le"
)

// Device describes a remote device as the radio reports it when it comes
// into range. Zero fields are absent, and bluetoothd then leaves the
// optional property out (Name, Class, Appearance, Modalias, UUIDs, Icon).
type Device struct {
	// Name is the remote name; Alias defaults to it, or to the address
	// with dashes when there is no name.
	Name  string
	Alias string
	// Bearer defaults to BREDR.
	Bearer Bearer
	// AddressType is "public" (the default) or, for LE, "random".
	AddressType string
	// Class is the class of device (BR/EDR), e.g. 0x002508 for a gamepad.
	Class uint32
	// Appearance is the GAP appearance (LE), e.g. 0x03c2 for a mouse.
	Appearance uint16
	// Modalias is "usb:vXXXXpXXXXdXXXX" or "bluetooth:v...", from the
	// Device ID profile.
	Modalias string
	// UUIDs are the 128-bit service UUIDs the device offers, lowercase. A
	// device with HID (00001124-...) gets org.bluez.Input1.
	UUIDs []string
	// Trusted and LegacyPairing are Device1's properties of those names.
	Trusted       bool
	LegacyPairing bool
	// ReconnectMode is Input1's ("none", "host", "device", "any"); empty
	// means "any".
	ReconnectMode string
	// ServiceRecords are the SDP records written to the cache file's
	// [ServiceRecords] on pairing, handle ("0x00010000") to hex; nil
	// generates a minimal record per UUID.
	ServiceRecords map[string]string
	// RSSI is the signal strength of its inquiry answer, in dBm; zero
	// leaves the property out.
	RSSI int16
	// Pairing is how Device1.Pair goes; empty means JustWorks.
	Pairing PairingMethod
	// Endpoints are the A2DP stream endpoints of a speaker (its UUIDs
	// must include A2DPSinkUUID), in SEID order; see AddSpeaker, which
	// fills them from codec names.
	Endpoints []RemoteEndpoint
	// DelayReporting and Volume are a speaker's: see Speaker. A nil
	// Volume means no AVRCP absolute volume.
	DelayReporting bool
	Volume         *uint8
	// Battery, when set, gives the device org.bluez.Battery1 with this
	// Percentage (0 to 100), as BlueZ's battery plugin does for a device
	// that reports its charge (profiles/battery, or HFP/AVRCP).
	Battery *uint8
	// Secret is what Pairing compares the agent's answer with: the PIN
	// of PinCode, the passkey (decimal) of Passkey, or the D-Bus error
	// name Pair fails with for PairFail (default
	// org.bluez.Error.ConnectionAttemptFailed).
	Secret string
}

// PairingMethod is the agent call bluetoothd makes when a device pairs
// (BlueZ src/device.c, src/agent.c), as the association model of the two
// sides' IO capabilities decides (Core spec Vol 3 Part C 5.2.2).
type PairingMethod string

// The pairing methods.
const (
	// JustWorks: no agent call.
	JustWorks PairingMethod = "JustWorks"
	// DisplayPasskey: a keyboard; Agent1.DisplayPasskey, then the
	// keyboard types (Sim.EnterPasskey).
	DisplayPasskey PairingMethod = "DisplayPasskey"
	// Confirm: numeric comparison, Agent1.RequestConfirmation.
	Confirm PairingMethod = "Confirm"
	// PinCode: legacy pairing, Agent1.RequestPinCode compared with
	// Device.Secret.
	PinCode PairingMethod = "PinCode"
	// Passkey: the device shows Device.Secret, Agent1.RequestPasskey.
	Passkey PairingMethod = "Passkey"
	// PairFail: the radio fails the pairing with Device.Secret's error.
	PairFail PairingMethod = "Fail"
)

// spec is the Device as the template's AddDevice takes it.
func (d Device) spec() map[string]dbus.Variant {
	m := map[string]dbus.Variant{}
	put := func(key string, v any, present bool) {
		if present {
			m[key] = dbus.MakeVariant(v)
		}
	}
	put("Name", d.Name, d.Name != "")
	put("Alias", d.Alias, d.Alias != "")
	put("Bearer", string(d.Bearer), d.Bearer != "")
	put("AddressType", d.AddressType, d.AddressType != "")
	put("Class", d.Class, d.Class != 0)
	put("Appearance", d.Appearance, d.Appearance != 0)
	put("Modalias", d.Modalias, d.Modalias != "")
	put("UUIDs", d.UUIDs, len(d.UUIDs) > 0)
	put("Trusted", d.Trusted, d.Trusted)
	put("LegacyPairing", d.LegacyPairing, d.LegacyPairing)
	put("ReconnectMode", d.ReconnectMode, d.ReconnectMode != "")
	put("ServiceRecords", d.ServiceRecords, len(d.ServiceRecords) > 0)
	put("RSSI", d.RSSI, d.RSSI != 0)
	put("Pairing", string(d.Pairing), d.Pairing != "")
	put("Secret", d.Secret, d.Secret != "")
	if len(d.Endpoints) > 0 {
		eps := make([]map[string]dbus.Variant, len(d.Endpoints))
		for i, e := range d.Endpoints {
			eps[i] = map[string]dbus.Variant{"Codec": dbus.MakeVariant(e.Codec), "Capabilities": dbus.MakeVariant(e.Capabilities)}
		}
		m["Endpoints"] = dbus.MakeVariant(eps)
	}
	put("DelayReporting", d.DelayReporting, d.DelayReporting)
	if d.Battery != nil {
		m["Battery"] = dbus.MakeVariant(*d.Battery)
	}
	if d.Volume != nil {
		m["Volume"] = dbus.MakeVariant(uint16(*d.Volume))
	}
	return m
}

// DisconnectReason is why a link dropped, as Device1's Disconnected signal
// reports it (org.bluez.Reason.<reason>).
type DisconnectReason string

const (
	// ReasonRemote is the device ending the link (switched off).
	ReasonRemote DisconnectReason = "Remote"
	// ReasonTimeout is the link supervision timeout expiring (out of range).
	ReasonTimeout DisconnectReason = "Timeout"
	// ReasonLocal is this host ending the link.
	ReasonLocal DisconnectReason = "Local"
)

var (
	adapterNameRE = regexp.MustCompile(`^hci[0-9]+$`)
	addressRE     = regexp.MustCompile(`^[0-9A-Fa-f]{2}(:[0-9A-Fa-f]{2}){5}$`)
)

// AdapterPath returns BlueZ's object path of adapter name ("hci0").
func AdapterPath(name string) dbus.ObjectPath {
	return dbus.ObjectPath("/org/bluez/" + name)
}

// DevicePath returns BlueZ's object path of a device under an adapter:
// .../dev_XX_XX_XX_XX_XX_XX, uppercase.
func DevicePath(adapter, address string) dbus.ObjectPath {
	return dbus.ObjectPath(string(AdapterPath(adapter)) + "/dev_" + strings.ToUpper(strings.ReplaceAll(address, ":", "_")))
}

func checkAdapter(name string) error {
	if !adapterNameRE.MatchString(name) {
		return fmt.Errorf("bluezsim: adapter name %q is not hciN", name)
	}
	return nil
}

func checkAddress(address string) error {
	if !addressRE.MatchString(address) {
		return fmt.Errorf("bluezsim: %q is not a Bluetooth address (XX:XX:XX:XX:XX:XX)", address)
	}
	return nil
}

// call invokes the simulator's control method.
func (s *Sim) call(ctx context.Context, method string, args ...any) error {
	return s.callStore(ctx, nil, method, args...)
}

func (s *Sim) callStore(ctx context.Context, out any, method string, args ...any) error {
	ctx, cancel := context.WithTimeout(ctx, callTimeout)
	defer cancel()
	c := s.conn.Object(Service, "/").CallWithContext(ctx, controlInterface+"."+method, 0, args...)
	if c.Err != nil {
		return fmt.Errorf("bluezsim: %s: %w", method, c.Err)
	}
	if out != nil {
		return c.Store(out)
	}
	return nil
}

// AddAdapter registers adapter name ("hci0") with address, powered (as
// main.conf's AutoEnable=true makes it) but not connectable (a fresh
// bluetoothd leaves page scan off), and loads the bonds stored under the
// address. The adapter is registered again whenever the BlueZ side
// restarts.
func (s *Sim) AddAdapter(name, address string) (dbus.ObjectPath, error) {
	if err := checkAdapter(name); err != nil {
		return "", err
	}
	if err := checkAddress(address); err != nil {
		return "", err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	var path dbus.ObjectPath
	props := map[string]dbus.Variant{}
	if err := s.callStore(context.Background(), &path, "AddAdapter", name, address, props); err != nil {
		return "", err
	}
	s.adapters = append(s.adapters, adapterRecord{name: name, address: address, props: props})
	return path, nil
}

// RemoveAdapter makes the adapter depart (unplugged): InterfacesRemoved for
// each of its devices, then for the adapter. Its stored bonds stay.
func (s *Sim) RemoveAdapter(name string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.call(context.Background(), "RemoveAdapter", name); err != nil {
		return err
	}
	for i, a := range s.adapters {
		if a.name == name {
			s.adapters = append(s.adapters[:i], s.adapters[i+1:]...)
			break
		}
	}
	return nil
}

// AddDevice makes a device come into range of the adapter, unpaired; a
// named device's name goes to the cache file, as bluetoothd caches every
// name it learns.
func (s *Sim) AddDevice(adapter, address string, d Device) (dbus.ObjectPath, error) {
	if err := checkAddress(address); err != nil {
		return "", err
	}
	var path dbus.ObjectPath
	if err := s.callStore(context.Background(), &path, "AddDevice", adapter, address, d.spec()); err != nil {
		return "", err
	}
	return path, nil
}

// Pair pairs the device as a person at bluetoothctl would: the info file
// gets [General] and a generated key ([LinkKey] for BR/EDR; LTKs and an
// IRK for LE), Bonded and Paired change, the services found go to info's
// Services and the cache's [ServiceRecords], and for LE the address type
// follows on an idle callback (Options.LateWrite). Pairing a paired device
// fails with org.bluez.Error.AlreadyExists.
func (s *Sim) Pair(adapter, device string) error {
	return s.call(context.Background(), "PairDevice", adapter, device)
}

// EnterPasskey is a keyboard of a DisplayPasskey pairing typing passkey
// and Enter: the pending Device1.Pair succeeds when passkey is the one
// the agent was shown, and fails with org.bluez.Error.AuthenticationFailed
// otherwise. It fails when the device is not waiting for a passkey.
func (s *Sim) EnterPasskey(adapter, device string, passkey uint32) error {
	return s.call(context.Background(), "EnterPasskey", adapter, device, passkey)
}

// Connect brings the device's link up: Connected, then ServicesResolved.
// It fails for a device switched off (SetSwitchedOn).
func (s *Sim) Connect(adapter, device string) error {
	return s.call(context.Background(), "ConnectDevice", adapter, device)
}

// SetSwitchedOn switches the device on or off, as a person does with its
// power button (or as it comes into range and leaves it). Switched off,
// a connected device drops its link (Device1.Disconnected reason
// org.bluez.Reason.Remote) and answers no page: Device1.Connect and
// ConnectProfile fail, once Options.PageTimeout has passed, with
// org.bluez.Error.Failed "br-connection-page-timeout", as bluetoothd
// fails them when the controller reports a page timeout. Switched on, it
// answers the next page; like a speaker, it does not connect by itself
// (Connect is the device connecting). Devices start switched on, and one
// switched off stays off when the BlueZ side restarts.
func (s *Sim) SetSwitchedOn(adapter, device string, on bool) error {
	if err := checkAddress(device); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.call(context.Background(), "SetSwitchedOn", adapter, device, on); err != nil {
		return err
	}
	key := [2]string{adapter, strings.ToUpper(device)}
	if on {
		delete(s.off, key)
		return nil
	}
	if s.off == nil {
		s.off = map[[2]string]bool{}
	}
	s.off[key] = true
	return nil
}

// ConnectCall is one Device1.Connect call a client made.
type ConnectCall struct {
	// Device is the device's object path; Sender the caller's unique
	// name.
	Device dbus.ObjectPath `json:"device"`
	Sender string          `json:"sender"`
	// At is when the call arrived, since the simulated bluetoothd
	// started (its monotonic clock).
	At time.Duration `json:"atNs"`
	// Pending is true until it is answered; Error is then "" for
	// success, else the D-Bus error name and message
	// ("org.bluez.Error.Failed: br-connection-page-timeout").
	Pending bool   `json:"pending"`
	Error   string `json:"error"`
}

// ConnectCalls returns the Device1.Connect calls clients made on the
// device of adapter, in arrival order, since the simulated bluetoothd
// started.
func (s *Sim) ConnectCalls(adapter, device string) ([]ConnectCall, error) {
	r, err := s.Registrations()
	if err != nil {
		return nil, err
	}
	want := DevicePath(adapter, device)
	var out []ConnectCall
	for _, c := range r.ConnectCalls {
		if c.Device == want {
			out = append(out, c)
		}
	}
	return out, nil
}

// Disconnect drops the device's link: ServicesResolved and Connected go
// false and Device1.Disconnected reports reason.
func (s *Sim) Disconnect(adapter, device string, reason DisconnectReason) error {
	return s.call(context.Background(), "DisconnectDevice", adapter, device, string(reason))
}

// LoseA2DP drops a connected speaker's A2DP channel while its link
// stays, as a bluetoothd or bus restart that brought back only its other
// profiles (HFP/HSP, AVRCP) leaves it: its transports close and its
// remote stream endpoints leave the bus. The next refusals
// Device1.ConnectProfile calls for the A2DP sink fail with
// org.bluez.Error.Failed; a new link (Device1.Disconnect, then Connect)
// brings A2DP back. It fails for a device that is not connected.
func (s *Sim) LoseA2DP(adapter, device string, refusals int32) error {
	return s.call(context.Background(), "LoseA2DP", adapter, device, refusals)
}

// SetBattery gives the device org.bluez.Battery1 with Percentage percent
// (0 to 100), as BlueZ's battery plugin does while a device that reports
// its charge is connected, or updates it; a negative percent takes
// Battery1 away, as the plugin does when the link goes down
// (profiles/battery).
func (s *Sim) SetBattery(adapter, device string, percent int) error {
	if err := checkAddress(device); err != nil {
		return err
	}
	return s.call(context.Background(), "SetBattery", adapter, device, int32(percent))
}

// RemoveDevice removes the device through BlueZ's own
// Adapter1.RemoveDevice: the link drops, the bond's directory is deleted,
// the cache keeps only the name, and InterfacesRemoved is emitted.
func (s *Sim) RemoveDevice(adapter, device string) error {
	if err := checkAddress(device); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), callTimeout)
	defer cancel()
	err := s.conn.Object(Service, AdapterPath(adapter)).CallWithContext(ctx, AdapterInterface+".RemoveDevice", 0, DevicePath(adapter, device)).Err
	if err != nil {
		return fmt.Errorf("bluezsim: RemoveDevice: %w", err)
	}
	return nil
}

// SetAdapterProperty changes an Adapter1 property as the controller would
// (read-only ones too: Powered going false on rfkill, a new Class), with a
// PropertiesChanged signal. value's Go type sets the D-Bus type: bool,
// string, uint32.
func (s *Sim) SetAdapterProperty(adapter, name string, value any) error {
	return s.update(AdapterPath(adapter), AdapterInterface, name, value)
}

// SetDeviceProperty changes a Device1 property as the radio would (a name
// learnt late, a new RSSI), adding it when absent, with a
// PropertiesChanged signal. Icon follows Class and Appearance.
func (s *Sim) SetDeviceProperty(adapter, device, name string, value any) error {
	return s.update(DevicePath(adapter, device), DeviceInterface, name, value)
}

func (s *Sim) update(path dbus.ObjectPath, iface, name string, value any) error {
	return s.call(context.Background(), "UpdateObject", path, iface, map[string]dbus.Variant{name: dbus.MakeVariant(value)})
}

// Registrations is what clients registered with the simulated bluetoothd;
// senders are unique bus names (":1.42").
type Registrations struct {
	Agents []struct {
		Sender, Path, Capability string
	} `json:"agents"`
	DefaultAgent *struct {
		Sender, Path string
	} `json:"defaultAgent"`
	// Endpoints are the media endpoints, in registration order (the
	// order bluetoothd tries them in when it configures a stream).
	Endpoints []struct {
		Adapter, Sender, Path, UUID string
		Codec                       int
	} `json:"endpoints"`
	Players []struct {
		Adapter, Sender, Path string
	} `json:"players"`
	Applications []struct {
		Adapter, Sender, Path string
		Endpoints             []string
	} `json:"applications"`
	// Discovery lists the discovery sessions running.
	Discovery []struct {
		Adapter, Sender string
	} `json:"discovery"`
	// AgentCalls are the Agent1 calls made by pairings, in order.
	AgentCalls []struct {
		Method, Device string
	} `json:"agentCalls"`
	// Transports are the configured streams, ordered by path.
	Transports []Transport `json:"transports"`
	// ConnectCalls are the Device1.Connect calls made, in arrival order.
	ConnectCalls []ConnectCall `json:"connectCalls"`
}

// Registrations returns the agents, media endpoints, players, applications
// and discovery sessions clients hold now. A client leaving the bus drops
// its own, as with bluetoothd.
func (s *Sim) Registrations() (Registrations, error) {
	var raw string
	var r Registrations
	if err := s.callStore(context.Background(), &raw, "State"); err != nil {
		return r, err
	}
	if err := json.Unmarshal([]byte(raw), &r); err != nil {
		return r, fmt.Errorf("bluezsim: State: %w", err)
	}
	return r, nil
}

// AdapterProperty reads an Adapter1 property of adapter as a client
// would (Properties.Get), as its Go value (bool, string, uint32).
func (s *Sim) AdapterProperty(adapter, name string) (any, error) {
	return s.property(AdapterPath(adapter), AdapterInterface, name)
}

// DeviceProperty reads a Device1 property of a device of adapter.
func (s *Sim) DeviceProperty(adapter, device, name string) (any, error) {
	return s.property(DevicePath(adapter, device), DeviceInterface, name)
}

func (s *Sim) property(path dbus.ObjectPath, iface, name string) (any, error) {
	ctx, cancel := context.WithTimeout(context.Background(), callTimeout)
	defer cancel()
	var v dbus.Variant
	if err := s.conn.Object(Service, path).CallWithContext(ctx, "org.freedesktop.DBus.Properties.Get", 0, iface, name).Store(&v); err != nil {
		return nil, fmt.Errorf("bluezsim: %s %s.%s: %w", path, iface, name, err)
	}
	return v.Value(), nil
}
