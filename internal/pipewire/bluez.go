// SPDX-License-Identifier: Apache-2.0

package pipewire

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
)

// Properties the bluez5 SPA plugin sets on the devices and nodes it makes
// for a Bluetooth peer (spa/plugins/bluez5/bluez5-device.c, and
// WirePlumber's monitors/bluez.lua which copies them onto each node).
const (
	// PropDeviceAPI is "bluez5" on a Bluetooth device and its nodes.
	PropDeviceAPI = "device.api"
	// PropDeviceID is the id of the Device object a node belongs to.
	PropDeviceID = "device.id"
	// PropBlueZAddress is the peer's address, "A0:AB:51:33:B7:12".
	PropBlueZAddress = "api.bluez5.address"
	// PropBlueZCodec is the codec a node's transport runs ("sbc",
	// "aac", "ldac", "aptx", "sbc_xq" ...).
	PropBlueZCodec = "api.bluez5.codec"
	// PropBlueZProfile is the node's profile ("a2dp-sink").
	PropBlueZProfile = "api.bluez5.profile"
	// DeviceAPIBlueZ is the device.api of Bluetooth devices.
	DeviceAPIBlueZ = "bluez5"
	// ParamCodec is the id, in a device's PropInfo and Props params, of
	// the codec the device runs (SPA_PROP_bluetoothAudioCodec).
	ParamCodec = "bluetoothAudioCodec"
)

// MaxCodecs bounds the codecs read from one device: BlueZ's own list is a
// dozen, and a device is any client's to describe.
const MaxCodecs = 64

// Device is one PipeWire:Interface:Device object. Only the parts the
// operator reads of a Bluetooth device are kept.
type Device struct {
	// ID is the global object id, valid within one Graph.
	ID uint32
	// Serial is object.serial; 0 when absent.
	Serial uint64
	// Props holds every property as text (as Node.Props does).
	Props map[string]string
	// Address is api.bluez5.address upper-cased, when it is a valid
	// Bluetooth address; "" otherwise.
	Address string
	// Codecs are the codecs the device offers (its PropInfo
	// bluetoothAudioCodec entry), in the device's order; nil when it
	// lists none.
	Codecs []Codec
	// Codec is the id of the codec it runs (its Props
	// bluetoothAudioCodec); -1 when absent.
	Codec int
	// Routes are the device's Route params: where volume and mute of a
	// Bluetooth device are set (AVRCP absolute volume where the peer
	// supports it, software gain otherwise, chosen by the bluez5 plugin).
	Routes []Route
}

// Codec is one codec a Bluetooth device offers.
type Codec struct {
	// ID is the SPA codec id (enum spa_bluetooth_audio_codec), the
	// value a Props write of bluetoothAudioCodec takes.
	ID int
	// Name is the label lowercased with '-' turned into '_', the
	// spelling of api.bluez5.codec: "sbc", "sbc_xq", "aptx_ll".
	Name string
}

// Route is one Route param of a device.
type Route struct {
	// Index and Device are the route's index and the card device it
	// serves, which a Route write names.
	Index, Device int
	// Direction is "Output" or "Input".
	Direction string
	// Volume is the route's props (channel volumes and mute); nil when
	// absent.
	Volume *Volume
}

// CodecName returns the name of the codec with id, or "".
func (d Device) CodecName(id int) string {
	for _, c := range d.Codecs {
		if c.ID == id {
			return c.Name
		}
	}
	return ""
}

// CodecNames returns the names of the codecs the device offers, in order.
func (d Device) CodecNames() []string {
	out := make([]string, 0, len(d.Codecs))
	for _, c := range d.Codecs {
		out = append(out, c.Name)
	}
	return out
}

// OutputRoute returns the device's first output route.
func (d Device) OutputRoute() (Route, bool) {
	for _, r := range d.Routes {
		if r.Direction == "Output" {
			return r, true
		}
	}
	return Route{}, false
}

var bdaddr = regexp.MustCompile(`^[0-9A-Fa-f]{2}(:[0-9A-Fa-f]{2}){5}$`)

// BlueZAddress returns v upper-cased when it is a Bluetooth address in
// BlueZ's spelling (six colon-separated hex octets), else "".
func BlueZAddress(v string) string {
	if !bdaddr.MatchString(v) {
		return ""
	}
	return strings.ToUpper(v)
}

// SpeakerNode returns the Audio/Sink node of the Bluetooth peer at
// address (upper case) and the device it belongs to: the node must carry
// the address and name, by device.id, a bluez5 device with the same
// address, so a client's node that only claims the address is not taken
// for the speaker. With several, the lowest id wins.
func (g *Graph) SpeakerNode(address string) (Node, Device, bool) {
	for _, n := range g.Nodes {
		if n.MediaClass != MediaClassSink || BlueZAddress(n.Props[PropBlueZAddress]) != address || n.Name == "" {
			continue
		}
		id, err := strconv.ParseUint(n.Props[PropDeviceID], 10, 32)
		if err != nil {
			continue
		}
		d, ok := g.Device(uint32(id))
		if !ok || d.Address != address || d.Props[PropDeviceAPI] != DeviceAPIBlueZ {
			continue
		}
		return n, d, true
	}
	return Node{}, Device{}, false
}

// BlueZDevice returns the bluez5 device of the peer at address (upper
// case), the lowest id of several.
func (g *Graph) BlueZDevice(address string) (Device, bool) {
	for _, d := range g.Devices {
		if d.Address == address && d.Props[PropDeviceAPI] == DeviceAPIBlueZ {
			return d, true
		}
	}
	return Device{}, false
}

// Device returns the device with the given id.
func (g *Graph) Device(id uint32) (Device, bool) {
	for _, d := range g.Devices {
		if d.ID == id {
			return d, true
		}
	}
	return Device{}, false
}

func parseDevice(id uint32, rawInfo json.RawMessage) (*Device, error) {
	d := &Device{ID: id, Codec: -1}
	info, err := decodeInfo(rawInfo)
	if err != nil || info == nil {
		return d, err
	}
	if d.Props, err = propsText(info.Props); err != nil {
		return d, err
	}
	if v, err := strconv.ParseUint(d.Props[PropObjectSerial], 10, 64); err == nil {
		d.Serial = v
	}
	d.Address = BlueZAddress(d.Props[PropBlueZAddress])
	for _, e := range info.Params["PropInfo"] {
		if codecs, ok, _ := ParseCodecs(e); ok {
			d.Codecs = codecs
			break
		}
	}
	for _, e := range info.Params["Props"] {
		var p map[string]json.RawMessage
		if json.Unmarshal(e, &p) != nil {
			continue
		}
		var c int
		if raw, ok := p[ParamCodec]; ok && json.Unmarshal(raw, &c) == nil {
			d.Codec = c
			break
		}
	}
	for _, e := range info.Params["Route"] {
		var r struct {
			Index     *int            `json:"index"`
			Device    *int            `json:"device"`
			Direction string          `json:"direction"`
			Props     json.RawMessage `json:"props"`
		}
		if json.Unmarshal(e, &r) != nil || r.Index == nil || r.Device == nil {
			continue
		}
		route := Route{Index: *r.Index, Device: *r.Device, Direction: r.Direction}
		if len(r.Props) > 0 {
			route.Volume = parseVolume([]json.RawMessage{r.Props})
		}
		d.Routes = append(d.Routes, route)
	}
	return d, nil
}

// ParseCodecs reads the codec list of one PropInfo param entry, the form
// pw-dump prints (a property's alternatives as "alt1".."altN" of its
// "type" choice, and "labels" as [id, label, id, label ...]):
//
//	{"id": "bluetoothAudioCodec", "name": "Air codec",
//	 "type": {"default": 1, "alt1": 1, "alt2": 2},
//	 "labels": [1, "SBC", 2, "SBC-XQ"]}
//
// ok is false when the entry is not the bluetoothAudioCodec one. The
// codecs come in the order of the alternatives; an alternative with no
// label, a label that is not a codec name (empty, longer than 32 bytes,
// other than letters, digits, '-' and '_'), and an id or name seen before
// are left out, each with a problem saying so. At most MaxCodecs are
// read. An entry whose type or labels are of the wrong JSON shape is ok
// with no codecs and a problem.
func ParseCodecs(entry json.RawMessage) (codecs []Codec, ok bool, problems []error) {
	var e struct {
		ID     string          `json:"id"`
		Type   json.RawMessage `json:"type"`
		Labels json.RawMessage `json:"labels"`
	}
	if json.Unmarshal(entry, &e) != nil || e.ID != ParamCodec {
		return nil, false, nil
	}
	var labels []json.RawMessage
	if len(e.Labels) > 0 && json.Unmarshal(e.Labels, &labels) != nil {
		return nil, true, []error{fmt.Errorf("%s labels are not a list", ParamCodec)}
	}
	names := map[int]string{}
	for i := 0; i+1 < len(labels); i += 2 {
		var id int
		var label string
		if json.Unmarshal(labels[i], &id) != nil || json.Unmarshal(labels[i+1], &label) != nil {
			problems = append(problems, fmt.Errorf("%s label %d is not an id and a name", ParamCodec, i/2))
			continue
		}
		if _, dup := names[id]; !dup {
			names[id] = label
		}
	}
	var alts map[string]json.RawMessage
	if len(e.Type) > 0 && e.Type[0] == '{' {
		if json.Unmarshal(e.Type, &alts) != nil {
			return nil, true, []error{fmt.Errorf("%s type is not a choice", ParamCodec)}
		}
	}
	seenID, seenName := map[int]bool{}, map[string]bool{}
	for i := 1; len(codecs) < MaxCodecs; i++ {
		raw, found := alts["alt"+strconv.Itoa(i)]
		if !found {
			break
		}
		var id int
		if json.Unmarshal(raw, &id) != nil {
			problems = append(problems, fmt.Errorf("%s alt%d is not an integer", ParamCodec, i))
			continue
		}
		label, found := names[id]
		name := codecName(label)
		switch {
		case !found:
			problems = append(problems, fmt.Errorf("%s codec %d has no label", ParamCodec, id))
			continue
		case name == "":
			problems = append(problems, fmt.Errorf("%s codec %d: label %q is not a codec name", ParamCodec, id, label))
			continue
		case seenID[id] || seenName[name]:
			continue
		}
		seenID[id], seenName[name] = true, true
		codecs = append(codecs, Codec{ID: id, Name: name})
	}
	return codecs, true, problems
}

var codecLabel = regexp.MustCompile(`^[A-Za-z0-9_-]{1,32}$`)

// codecName is a label in api.bluez5.codec's spelling, or "" when the
// label is not a codec name.
func codecName(label string) string {
	if !codecLabel.MatchString(label) {
		return ""
	}
	return strings.ReplaceAll(strings.ToLower(label), "-", "_")
}

// CodecNameValid reports whether s is spelt as a codec name: 1 to 32
// lower-case letters, digits and '_'.
func CodecNameValid(s string) bool {
	return codecLabel.MatchString(s) && s == codecName(s)
}

// SetCodec switches the Bluetooth device with id device (from a Graph of
// the same PipeWire) to the codec with id codec, by writing
// bluetoothAudioCodec into its Props (pw-cli takes the numeric id, not
// the label). The bluez5 plugin then reconfigures the transport and
// rebuilds the node under a new id; a nil error means PipeWire took the
// write, not that the node runs the codec yet. Errors as SetVolume's.
func (r Remote) SetCodec(ctx context.Context, device uint32, codec int) error {
	if device == 0 {
		return errors.New("codec write: id 0 is PipeWire's core, not a device")
	}
	return r.setParam(ctx, device, "Props", fmt.Sprintf("{ %s: %d }", ParamCodec, codec))
}

// SetRouteVolume writes w to route of the device with id device: the
// route's props, which the bluez5 plugin turns into AVRCP absolute volume
// when the peer supports it and into software gain otherwise. Errors as
// SetVolume's.
func (r Remote) SetRouteVolume(ctx context.Context, device uint32, route Route, w VolumeWrite) error {
	if device == 0 {
		return errors.New("route write: id 0 is PipeWire's core, not a device")
	}
	lit, err := w.literal()
	if err != nil {
		return err
	}
	return r.setParam(ctx, device, "Route", fmt.Sprintf("{ index: %d, device: %d, props: %s, save: false }", route.Index, route.Device, lit))
}
