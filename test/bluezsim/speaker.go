// SPDX-License-Identifier: Apache-2.0

package bluezsim

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/godbus/dbus/v5"

	"github.com/liken-sh/operators/internal/dbusd"
)

// BlueZ's media interfaces (BlueZ doc/org.bluez.MediaEndpoint.rst,
// org.bluez.MediaTransport.rst).
const (
	MediaEndpointInterface  = "org.bluez.MediaEndpoint1"
	MediaTransportInterface = "org.bluez.MediaTransport1"
)

// Service class UUIDs of an A2DP speaker (Bluetooth Assigned Numbers,
// Service Class).
const (
	// A2DPSourceUUID is the Audio Source role: what a host that plays to
	// speakers registers its endpoints as.
	A2DPSourceUUID = "0000110a-0000-1000-8000-00805f9b34fb"
	// A2DPSinkUUID is the Audio Sink role a speaker offers.
	A2DPSinkUUID = "0000110b-0000-1000-8000-00805f9b34fb"
	// AVRCPTargetUUID and AVRCPControllerUUID are the remote control
	// roles; absolute volume travels over them.
	AVRCPTargetUUID     = "0000110c-0000-1000-8000-00805f9b34fb"
	AVRCPControllerUUID = "0000110e-0000-1000-8000-00805f9b34fb"
)

// SpeakerClass is the class of device of a loudspeaker: services
// Rendering and Audio, major class Audio/Video, minor class Loudspeaker
// (Bluetooth Assigned Numbers, Baseband).
const SpeakerClass = 0x240414

// Speaker describes a Bluetooth speaker (A2DP sink) for AddSpeaker.
type Speaker struct {
	// Name is the speaker's remote name, and so its Alias.
	Name string
	// Codecs are its stream endpoints, in SEID order (sep1, sep2, ...):
	// the codecs it can receive. Empty means SBC alone, the one codec
	// every A2DP sink has.
	Codecs []Codec
	// AbsoluteVolume gives the speaker AVRCP absolute volume: its
	// transports carry a writable Volume (0 to 127) starting at Volume.
	// Without it, a transport has no Volume and the host scales the
	// samples itself.
	AbsoluteVolume bool
	Volume         uint8
	// DelayReporting makes its endpoints report delay: transports carry
	// Delay (150 ms, in units of 1/10 ms).
	DelayReporting bool
}

// device is the Device that AddSpeaker adds for sp.
func (sp Speaker) device() (Device, error) {
	codecs := sp.Codecs
	if len(codecs) == 0 {
		codecs = []Codec{SBC}
	}
	d := Device{
		Name:           sp.Name,
		Class:          SpeakerClass,
		UUIDs:          []string{A2DPSinkUUID, AVRCPTargetUUID, AVRCPControllerUUID},
		Trusted:        true,
		DelayReporting: sp.DelayReporting,
	}
	for _, c := range codecs {
		t, caps, err := c.Capabilities()
		if err != nil {
			return d, err
		}
		d.Endpoints = append(d.Endpoints, RemoteEndpoint{Codec: t, Capabilities: caps})
	}
	if sp.AbsoluteVolume {
		if sp.Volume > 127 {
			return d, fmt.Errorf("bluezsim: AVRCP volume %d is over 127", sp.Volume)
		}
		v := sp.Volume
		d.Volume = &v
	}
	return d, nil
}

// RemoteEndpoint is one stream endpoint of a speaker: an A2DP codec type
// (0x00 SBC, 0xff vendor) and its codec information element.
type RemoteEndpoint struct {
	Codec        byte
	Capabilities []byte
}

// AddSpeaker makes a speaker come into range of adapter and pairs it, as
// a person does with bluetoothctl (pair, trust): the device is paired,
// bonded and trusted, its UUIDs are the A2DP sink and the two AVRCP
// roles, its class is SpeakerClass, and its bond is stored with its
// stream endpoints in the cache's [Endpoints], so it comes back with them
// when the BlueZ side restarts. It is not connected: Connect brings its
// link up, and then, as bluetoothd does for a bonded audio sink, the
// simulator configures a stream with the first registered A2DP source
// endpoint (in registration order) whose codec the speaker offers
// (SelectConfiguration on that endpoint, a MediaTransport1 at
// <device>/sep<N>/fd<M>, SetConfiguration). Disconnect closes the stream
// (ClearConfiguration, the transport and the remote endpoints leave the
// bus) before the link goes; RemoveDevice unpairs it. Errors name a bad
// address, an unknown codec or adapter, or a device that exists.
func (s *Sim) AddSpeaker(adapter, address string, sp Speaker) (dbus.ObjectPath, error) {
	d, err := sp.device()
	if err != nil {
		return "", err
	}
	path, err := s.AddDevice(adapter, address, d)
	if err != nil {
		return "", err
	}
	if err := s.Pair(adapter, address); err != nil {
		return "", err
	}
	return path, nil
}

// Endpoint is a media endpoint a client registered with the simulated
// bluetoothd (Media1.RegisterEndpoint, or one object of a
// RegisterApplication).
type Endpoint struct {
	// Adapter is the adapter's object path, /org/bluez/hciN.
	Adapter dbus.ObjectPath
	// Sender is the client's unique bus name (":1.42").
	Sender string
	// Path is the endpoint's object path in the client
	// (/MediaEndpoint/A2DPSource/sbc for PipeWire).
	Path dbus.ObjectPath
	// UUID is the role, lowercase: A2DPSourceUUID or A2DPSinkUUID.
	UUID string
	// Codec is the A2DP codec type (0x00 SBC, 0xff vendor).
	Codec byte
}

// Endpoints returns the media endpoints registered on adapter ("hci0"),
// in registration order; "" means every adapter's.
func (s *Sim) Endpoints(adapter string) ([]Endpoint, error) {
	r, err := s.Registrations()
	if err != nil {
		return nil, err
	}
	var out []Endpoint
	for _, e := range r.Endpoints {
		if adapter != "" && e.Adapter != string(AdapterPath(adapter)) {
			continue
		}
		out = append(out, Endpoint{Adapter: dbus.ObjectPath(e.Adapter), Sender: e.Sender,
			Path: dbus.ObjectPath(e.Path), UUID: strings.ToLower(e.UUID), Codec: byte(e.Codec)})
	}
	return out, nil
}

// WaitEndpoints waits, up to timeout, until at least one endpoint with
// role uuid is registered on adapter, and returns every endpoint there.
func (s *Sim) WaitEndpoints(ctx context.Context, adapter, uuid string, timeout time.Duration) ([]Endpoint, error) {
	var last []Endpoint
	err := s.poll(ctx, timeout, func() (bool, error) {
		eps, err := s.Endpoints(adapter)
		last = eps
		return slices.ContainsFunc(eps, func(e Endpoint) bool { return e.UUID == uuid }), err
	})
	if err != nil {
		return last, fmt.Errorf("bluezsim: no %s endpoint on %s (have %d): %w", uuid, adapter, len(last), err)
	}
	return last, nil
}

// Transport is a configured stream (org.bluez.MediaTransport1) as the
// simulated bluetoothd holds it.
type Transport struct {
	// Path is the transport's object path, <device>/sep<N>/fd<M>.
	Path dbus.ObjectPath `json:"path"`
	// Device is the speaker's object path; Adapter the adapter's.
	Device  dbus.ObjectPath `json:"device"`
	Adapter dbus.ObjectPath `json:"adapter"`
	// Sender and Endpoint name the local endpoint it was configured
	// with; RemoteEndpoint is the speaker's stream endpoint.
	Sender         string          `json:"sender"`
	Endpoint       dbus.ObjectPath `json:"endpoint"`
	RemoteEndpoint dbus.ObjectPath `json:"remoteEndpoint"`
	// UUID is the local endpoint's role (A2DPSourceUUID).
	UUID string `json:"uuid"`
	// Codec is the A2DP codec type and ConfigurationHex the codec
	// configuration, in hex; Configuration decodes it.
	Codec            byte   `json:"codec"`
	ConfigurationHex string `json:"configuration"`
	// State is "idle", "pending" or "active" (MediaTransport1.State).
	State string `json:"state"`
	// Volume is the AVRCP absolute volume, 0 to 127, or -1 when the
	// speaker has none.
	Volume int `json:"volume"`
	// Owner is the unique name that acquired it, "" when released.
	Owner string `json:"owner"`
	// Acquires counts successful Acquire and TryAcquire calls.
	Acquires int `json:"acquires"`
	// Bytes and Packets count what the speaker's end of the socket has
	// received: the encoded stream.
	Bytes   int64 `json:"bytes"`
	Packets int64 `json:"packets"`
}

// Configuration decodes the transport's codec configuration.
func (t Transport) Configuration() (Configuration, error) {
	b, err := hex.DecodeString(t.ConfigurationHex)
	if err != nil {
		return Configuration{}, fmt.Errorf("bluezsim: transport %s configuration %q: %w", t.Path, t.ConfigurationHex, err)
	}
	return ParseConfiguration(t.Codec, b)
}

// Transports returns every configured stream, ordered by path.
func (s *Sim) Transports() ([]Transport, error) {
	r, err := s.Registrations()
	return r.Transports, err
}

// WaitTransport waits, up to timeout, until the device of adapter has a
// transport for which ok returns true (nil accepts any), and returns it.
func (s *Sim) WaitTransport(ctx context.Context, adapter, device string, timeout time.Duration, ok func(Transport) bool) (Transport, error) {
	want := DevicePath(adapter, device)
	var found Transport
	var last []Transport
	err := s.poll(ctx, timeout, func() (bool, error) {
		ts, err := s.Transports()
		last = ts
		for _, t := range ts {
			if t.Device == want && (ok == nil || ok(t)) {
				found = t
				return true, nil
			}
		}
		return false, err
	})
	if err != nil {
		return found, fmt.Errorf("bluezsim: no matching transport for %s (have %+v): %w", want, last, err)
	}
	return found, nil
}

// poll calls check every 50 ms until it returns true, or the bound or
// ctx ends; a check error ends nothing but is reported if time runs out.
func (s *Sim) poll(ctx context.Context, timeout time.Duration, check func() (bool, error)) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var lastErr error
	for {
		done, err := check()
		if done {
			return nil
		}
		lastErr = err
		select {
		case <-ctx.Done():
			return errors.Join(ctx.Err(), lastErr)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// SetVolume changes the transport's AVRCP absolute volume as the speaker
// does when a person presses its buttons: Volume changes, with a
// PropertiesChanged signal. It fails for a speaker without absolute
// volume and for a value over 127.
func (s *Sim) SetVolume(transport dbus.ObjectPath, volume uint8) error {
	if volume > 127 {
		return fmt.Errorf("bluezsim: AVRCP volume %d is over 127", volume)
	}
	return s.call(context.Background(), "UpdateObject", transport, MediaTransportInterface,
		map[string]dbus.Variant{"Volume": dbus.MakeVariant(uint16(volume))})
}

// RestartBus restarts the whole bus as a restart of the bluetoothd
// container does: the simulated bluetoothd stops, dbus-daemon stops (its
// socket file is unlinked), a new dbus-daemon creates a new socket at
// the same path, and the simulated bluetoothd starts on it again with
// its adapters and the bonds stored under them. Every client's
// connection ends; the speakers come back paired and disconnected. An
// attached Sim cannot restart.
func (s *Sim) RestartBus(ctx context.Context) error {
	if err := s.StopBus(); err != nil {
		return err
	}
	return s.StartBus(ctx)
}

// StopBus stops the simulated bluetoothd and then dbus-daemon, which
// removes the socket file; the directory stays. StartBus brings both
// back.
func (s *Sim) StopBus() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.stopped {
		return errors.New("bluezsim: stopped")
	}
	if s.bus == nil {
		return errors.New("bluezsim: an attached simulator has no bus of its own")
	}
	err := s.stopBlueZLocked()
	if s.conn != nil {
		s.conn.Close()
		s.conn = nil
	}
	if s.busDown {
		return err
	}
	s.busDown = true
	return errors.Join(err, s.bus.Stop())
}

// StartBus starts dbus-daemon on the same socket path and then the
// simulated bluetoothd, after StopBus. It fails if the bus is running.
func (s *Sim) StartBus(ctx context.Context) error {
	s.mu.Lock()
	if s.stopped {
		s.mu.Unlock()
		return errors.New("bluezsim: stopped")
	}
	if !s.busDown {
		s.mu.Unlock()
		return errors.New("bluezsim: the bus is running")
	}
	busLog, err := os.OpenFile(filepath.Join(s.dir, "dbus-daemon.log"), os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		s.mu.Unlock()
		return fmt.Errorf("bluezsim: %w", err)
	}
	defer busLog.Close()
	bus, err := dbusd.Start(ctx, s.busOptions(busLog))
	if err != nil {
		s.mu.Unlock()
		return fmt.Errorf("bluezsim: restart the bus: %w", err)
	}
	s.bus, s.busDown = bus, false
	if s.conn, err = dbus.Connect(s.bus.Address()); err != nil {
		s.mu.Unlock()
		return fmt.Errorf("bluezsim: control connection: %w", err)
	}
	s.mu.Unlock()
	return s.StartBlueZ(ctx)
}
