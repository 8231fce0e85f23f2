// SPDX-License-Identifier: Apache-2.0

package bluezsim

import (
	"context"
	"fmt"
	"os"
	"slices"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/godbus/dbus/v5"

	"github.com/liken-sh/operators/test/poll"
)

const speakerAddr = "A0:AB:51:33:B7:12"

// sourceEndpoint is a client's A2DP source endpoint, as a sound server
// exports it: it answers SelectConfiguration with one fixed choice and
// records the transports it is given and cleared.
type sourceEndpoint struct {
	path   dbus.ObjectPath
	choice []byte

	mu      sync.Mutex
	set     []dbus.ObjectPath
	cleared []dbus.ObjectPath
	props   map[string]dbus.Variant
}

func (e *sourceEndpoint) SelectConfiguration(caps []byte) ([]byte, *dbus.Error) {
	return e.choice, nil
}

func (e *sourceEndpoint) SetConfiguration(transport dbus.ObjectPath, props map[string]dbus.Variant) *dbus.Error {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.set = append(e.set, transport)
	e.props = props
	return nil
}

func (e *sourceEndpoint) ClearConfiguration(transport dbus.ObjectPath) *dbus.Error {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.cleared = append(e.cleared, transport)
	return nil
}

func (e *sourceEndpoint) Release() *dbus.Error { return nil }

func (e *sourceEndpoint) snapshot() (set, cleared []dbus.ObjectPath, props map[string]dbus.Variant) {
	e.mu.Lock()
	defer e.mu.Unlock()
	return slices.Clone(e.set), slices.Clone(e.cleared), e.props
}

// register exports e on c's connection and registers it on hci0.
func (e *sourceEndpoint) register(t *testing.T, c *client, codec byte, caps []byte) {
	t.Helper()
	if err := c.conn.Export(e, e.path, MediaEndpointInterface); err != nil {
		t.Fatal(err)
	}
	props := map[string]dbus.Variant{"UUID": dbus.MakeVariant(A2DPSourceUUID), "Codec": dbus.MakeVariant(codec),
		"Capabilities": dbus.MakeVariant(caps)}
	if err := c.conn.Object(Service, AdapterPath("hci0")).Call(MediaInterface+".RegisterEndpoint", 0, e.path, props).Err; err != nil {
		t.Fatal(err)
	}
}

// waitTimeout bounds every wait of these tests for something the
// simulator does on its own time; it only matters when that never comes.
const waitTimeout = 30 * time.Second

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	t.Cleanup(cancel)
	return ctx
}

// A speaker connecting gets a stream configured with the first
// registered endpoint it shares a codec with, the transport carries what
// the endpoint chose, Acquire passes a socket whose other end the
// simulator reads, a codec switch through the remote endpoint replaces
// the transport, and a disconnect clears it.
func TestSpeakerStream(t *testing.T) {
	requireRoot(t)
	s := New(t, Options{})
	if _, err := s.AddAdapter("hci0", adapterAddr); err != nil {
		t.Fatal(err)
	}
	c := newClient(t, s)
	sbc := &sourceEndpoint{path: "/ep/sbc", choice: []byte{0x21, 0x15, 2, 53}} // 44.1 kHz joint stereo, 16 blocks, 8 subbands, loudness
	_, sbcCaps, _ := SBC.Capabilities()
	sbc.register(t, c, 0x00, sbcCaps)
	_, aptxInfo, _ := AptX.Capabilities()
	aptxChoice := append(slices.Clone(aptxInfo[:6]), 0x12) // 48 kHz stereo
	aptx := &sourceEndpoint{path: "/ep/aptx", choice: aptxChoice}
	aptx.register(t, c, 0xff, aptxInfo)

	dev, err := s.AddSpeaker("hci0", speakerAddr, Speaker{Name: "Living Room", Codecs: []Codec{AptX, SBC}, AbsoluteVolume: true, Volume: 100})
	if err != nil {
		t.Fatal(err)
	}
	objs := c.managedObjects()
	if got := objs[dev][DeviceInterface]["Paired"].Value(); got != true {
		t.Fatalf("speaker Paired = %v", got)
	}
	if uuids := variantStrings(t, objs[dev][DeviceInterface]["UUIDs"]); !slices.Contains(uuids, A2DPSinkUUID) {
		t.Fatalf("speaker UUIDs %v lack the A2DP sink", uuids)
	}
	if err := s.Connect("hci0", speakerAddr); err != nil {
		t.Fatal(err)
	}
	// The SBC endpoint was registered first, so it is the one configured.
	tr, err := s.WaitTransport(ctxT(t), "hci0", speakerAddr, waitTimeout, nil)
	if err != nil {
		t.Fatal(err)
	}
	if tr.Endpoint != sbc.path || tr.Codec != 0 || tr.State != "idle" || tr.Volume != 100 {
		t.Fatalf("transport %+v, want SBC from %s, idle, volume 100", tr, sbc.path)
	}
	cfg, err := tr.Configuration()
	if err != nil {
		t.Fatal(err)
	}
	if cfg.RateHz != 44100 || cfg.ChannelMode != "joint" || cfg.Blocks != 16 || cfg.MaxBitpool != 53 {
		t.Fatalf("configuration %+v", cfg)
	}
	// The simulator creates the transport and then calls SetConfiguration
	// without waiting for it, so the call may still be on its way when
	// the transport is listed.
	poll.Until(t, "SetConfiguration on the SBC endpoint", waitTimeout, func() bool {
		set, _, _ := sbc.snapshot()
		return len(set) > 0
	})
	set, _, props := sbc.snapshot()
	if len(set) != 1 || set[0] != tr.Path || props["Device"].Value() != dev || props["UUID"].Value() != A2DPSourceUUID {
		t.Fatalf("SetConfiguration calls %v props %v", set, props)
	}
	objs = c.managedObjects()
	for _, sep := range []dbus.ObjectPath{dev + "/sep1", dev + "/sep2"} {
		if _, ok := objs[sep][MediaEndpointInterface]; !ok {
			t.Fatalf("remote endpoint %s not exported", sep)
		}
	}

	// Acquire: a socket, and what is written arrives.
	var fd dbus.UnixFD
	var readMTU, writeMTU uint16
	if err := c.conn.Object(Service, tr.Path).Call(MediaTransportInterface+".Acquire", 0).Store(&fd, &readMTU, &writeMTU); err != nil {
		t.Fatal(err)
	}
	f := os.NewFile(uintptr(fd), "transport")
	defer f.Close()
	if typ, err := syscall.GetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_TYPE); err != nil || typ != syscall.SOCK_SEQPACKET {
		t.Fatalf("acquired fd: SO_TYPE %d, %v; want a SOCK_SEQPACKET socket", typ, err)
	}
	packet := make([]byte, writeMTU)
	for range 3 {
		if _, err := f.Write(packet); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := s.WaitTransport(ctxT(t), "hci0", speakerAddr, waitTimeout, func(t Transport) bool {
		return t.Packets == 3 && t.Bytes == 3*int64(writeMTU) && t.State == "active" && t.Owner != ""
	}); err != nil {
		t.Fatal(err)
	}
	if err := c.conn.Object(Service, tr.Path).Call(MediaTransportInterface+".Acquire", 0).Err; errorName(err) != "org.bluez.Error.NotAuthorized" {
		t.Fatalf("second Acquire: %v, want NotAuthorized", err)
	}
	if err := c.set(tr.Path, MediaTransportInterface, "Volume", uint16(30)); err != nil {
		t.Fatal(err)
	}
	if err := c.conn.Object(Service, tr.Path).Call(MediaTransportInterface+".Release", 0).Err; err != nil {
		t.Fatal(err)
	}
	if _, err := s.WaitTransport(ctxT(t), "hci0", speakerAddr, waitTimeout, func(t Transport) bool {
		return t.State == "idle" && t.Owner == "" && t.Volume == 30
	}); err != nil {
		t.Fatal(err)
	}

	// A codec switch: SetConfiguration on the speaker's aptX endpoint.
	err = c.conn.Object(Service, dev+"/sep1").Call(MediaEndpointInterface+".SetConfiguration", 0, aptx.path,
		map[string]dbus.Variant{"Capabilities": dbus.MakeVariant(aptxChoice)}).Err
	if err != nil {
		t.Fatal(err)
	}
	tr2, err := s.WaitTransport(ctxT(t), "hci0", speakerAddr, waitTimeout, func(t Transport) bool { return t.Codec == 0xff })
	if err != nil {
		t.Fatal(err)
	}
	if cfg, err := tr2.Configuration(); err != nil || cfg.Codec != AptX || cfg.RateHz != 48000 || cfg.Channels != 2 {
		t.Fatalf("aptX configuration %+v, %v", cfg, err)
	}
	// ClearConfiguration, like SetConfiguration, is sent without waiting.
	poll.WaitFor(t, context.Background(), "ClearConfiguration of the SBC transport on the switch", waitTimeout, func() (bool, string) {
		_, cleared, _ := sbc.snapshot()
		return slices.Contains(cleared, tr.Path), fmt.Sprintf("cleared %v", cleared)
	})
	if all, _ := s.Transports(); len(all) != 1 {
		t.Fatalf("transports after the switch: %+v", all)
	}
	// A configuration the speaker does not offer is refused.
	err = c.conn.Object(Service, dev+"/sep2").Call(MediaEndpointInterface+".SetConfiguration", 0, sbc.path,
		map[string]dbus.Variant{"Capabilities": dbus.MakeVariant([]byte{0x21, 0x15, 2, 200})}).Err
	if errorName(err) != "org.bluez.Error.Failed" {
		t.Fatalf("bitpool 200 on a speaker offering 53: %v", err)
	}

	// Disconnect: the transport is cleared and the remote endpoints go.
	if err := s.Disconnect("hci0", speakerAddr, ReasonRemote); err != nil {
		t.Fatal(err)
	}
	if all, _ := s.Transports(); len(all) != 0 {
		t.Fatalf("transports after disconnect: %+v", all)
	}
	objs = c.managedObjects()
	if _, ok := objs[dev+"/sep1"]; ok {
		t.Fatal("remote endpoint still exported after disconnect")
	}
	poll.WaitFor(t, context.Background(), "ClearConfiguration of the aptX transport on disconnect", waitTimeout, func() (bool, string) {
		_, cleared, _ := aptx.snapshot()
		return slices.Contains(cleared, tr2.Path), fmt.Sprintf("cleared %v", cleared)
	})
}

// The bus restarts: the socket is recreated at the same path, clients must
// reconnect and register again, and the speaker comes back paired with
// its stream endpoints from the cache.
func TestRestartBusKeepsSpeaker(t *testing.T) {
	requireRoot(t)
	s := New(t, Options{})
	if _, err := s.AddAdapter("hci0", adapterAddr); err != nil {
		t.Fatal(err)
	}
	if _, err := s.AddSpeaker("hci0", speakerAddr, Speaker{Name: "Kitchen", Codecs: []Codec{LDAC, SBC}}); err != nil {
		t.Fatal(err)
	}
	c := newClient(t, s)
	sbc := &sourceEndpoint{path: "/ep/sbc", choice: []byte{0x21, 0x15, 2, 53}}
	_, caps, _ := SBC.Capabilities()
	sbc.register(t, c, 0, caps)
	if eps, err := s.Endpoints("hci0"); err != nil || len(eps) != 1 || eps[0].UUID != A2DPSourceUUID {
		t.Fatalf("endpoints %+v, %v", eps, err)
	}
	if err := s.RestartBus(ctxT(t)); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(s.SocketPath()); err != nil {
		t.Fatalf("no socket after the restart: %v", err)
	}
	if c.conn.Object(Service, "/").Call("org.freedesktop.DBus.Peer.Ping", 0).Err == nil {
		t.Fatal("a connection to the old bus still answers")
	}
	if eps, err := s.Endpoints("hci0"); err != nil || len(eps) != 0 {
		t.Fatalf("endpoints after the restart %+v, %v; want none", eps, err)
	}
	c2 := newClient(t, s)
	sbc2 := &sourceEndpoint{path: "/ep/sbc", choice: sbc.choice}
	sbc2.register(t, c2, 0, caps)
	dev := DevicePath("hci0", speakerAddr)
	if got := c2.managedObjects()[dev][DeviceInterface]["Paired"].Value(); got != true {
		t.Fatalf("speaker after the restart: Paired %v", got)
	}
	if err := s.Connect("hci0", speakerAddr); err != nil {
		t.Fatal(err)
	}
	if _, err := s.WaitTransport(ctxT(t), "hci0", speakerAddr, waitTimeout, nil); err != nil {
		t.Fatal(err)
	}
	if _, ok := c2.managedObjects()[dev+"/sep2"][MediaEndpointInterface]; !ok {
		t.Fatal("the speaker's second stream endpoint did not come back from the cache")
	}
}
