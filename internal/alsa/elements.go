// SPDX-License-Identifier: Apache-2.0

package alsa

import (
	"bytes"
	"errors"
	"fmt"
	"regexp"
	"strconv"

	"github.com/liken-sh/operators/internal/alsa/eld"
	"golang.org/x/sys/unix"
)

// Names of the elements this package reads, as the kernel's drivers create
// them.
const (
	// ELDElemName is the HDMI/DP codec's ELD element: iface PCM, device =
	// the PCM device, type BYTES, count = the block's length (0 with no
	// valid block). sound/pci/hda/patch_hdmi.c, sound/soc/codecs/hdmi-codec.c.
	ELDElemName = "ELD"
	// PlaybackChannelMapName and CaptureChannelMapName are the channel-map
	// elements: iface PCM, device = the PCM device, index = the substream,
	// one INTEGER per channel holding SNDRV_CHMAP_* positions
	// (Documentation/sound/designs/channel-mapping-api.rst).
	PlaybackChannelMapName = "Playback Channel Map"
	CaptureChannelMapName  = "Capture Channel Map"
)

// ELDElemID names the ELD element of PCM device.
func ELDElemID(device int) ElemID {
	return ElemID{Iface: IfacePCM, Device: uint32(device), Name: ELDElemName}
}

// ChannelMapElemID names the channel-map element of one PCM substream.
func ChannelMapElemID(device, subdevice int, stream Stream) ElemID {
	name := PlaybackChannelMapName
	if stream == Capture {
		name = CaptureChannelMapName
	}
	return ElemID{Iface: IfacePCM, Device: uint32(device), Name: name, Index: uint32(subdevice)}
}

// IsELD reports whether id names an ELD element; its Device is the PCM.
func (id ElemID) IsELD() bool { return id.Iface == IfacePCM && id.Name == ELDElemName }

// PCMDevice tells which PCM device an element (say, the one an event names)
// belongs to: an iface PCM element's Device (ELD, channel map), or the N of
// an "HDMI/DP,pcm=N Jack". ok is false for card-wide elements (mixer
// controls, "Headphone Jack").
func (id ElemID) PCMDevice() (device int, ok bool) {
	if id.Iface == IfacePCM {
		return int(id.Device), true
	}
	if id.Iface == IfaceCard {
		if m := hdmiJackPCM.FindStringSubmatch(id.Name); m != nil {
			n, err := strconv.Atoi(m[1])
			return n, err == nil
		}
	}
	return 0, false
}

// ELDState is what a PCM's ELD element holds.
type ELDState struct {
	// Raw is the element's value; empty when the count is 0 (no monitor,
	// or a block the driver holds invalid).
	Raw []byte
	// ELD is the parsed block; nil when Err is set.
	ELD *eld.ELD
	// Err is why ELD is nil: eld.ErrEmpty for no monitor, an error
	// wrapping eld.ErrInvalid for a corrupt block, or the read's error.
	Err error
}

// Valid reports whether a monitor's block was read and parsed.
func (s ELDState) Valid() bool { return s.ELD != nil }

// ReadELD reads and parses the ELD element of PCM device. ok is false when
// the card has no such element (the PCM is not an HDMI/DP output); then
// the state is empty. Read failures and parse failures go in the state's
// Err, never in place of ok, so one bad block does not hide the output.
func ReadELD(c Control, device int) (state ELDState, ok bool) {
	v, err := c.Read(ELDElemID(device))
	if errors.Is(err, unix.ENOENT) {
		return ELDState{}, false
	}
	if err != nil {
		return ELDState{Err: err}, true
	}
	if v.Type != TypeBytes {
		return ELDState{Err: fmt.Errorf("ELD element of PCM %d is %s, not BYTES", device, v.Type)}, true
	}
	e, err := eld.Parse(v.Bytes)
	if err != nil {
		err = fmt.Errorf("ELD of PCM %d: %w", device, err)
	}
	return ELDState{Raw: v.Bytes, ELD: e, Err: err}, true
}

// ELDUnchanged reads the ELD element of PCM device again and reports
// whether it holds what was, an earlier ReadELD of it, read: the same
// bytes, or again no bytes for a read that failed. It parses nothing,
// since equal bytes parse alike, which keeps a poll of an unchanged block
// to the element's two ioctls. A card that no longer has the element has
// changed.
func ELDUnchanged(c Control, device int, was ELDState) bool {
	v, err := c.Read(ELDElemID(device))
	// A state with bytes read, parsed or not; otherwise its Err is the
	// read's (or the element's type).
	wasRead := was.Err == nil || errors.Is(was.Err, eld.ErrEmpty) || errors.Is(was.Err, eld.ErrInvalid)
	switch {
	case errors.Is(err, unix.ENOENT):
		return false
	case err != nil || v.Type != TypeBytes:
		return !wasRead
	default:
		return wasRead && bytes.Equal(v.Bytes, was.Raw)
	}
}

// ReadChannelMap reads the current channel map of a PCM substream: one
// SNDRV_CHMAP_* position per channel (0 = unknown, and all 0 while no
// stream has set one). nil, nil when the card has no such element.
func ReadChannelMap(c Control, device, subdevice int, stream Stream) ([]uint32, error) {
	v, err := c.Read(ChannelMapElemID(device, subdevice, stream))
	if errors.Is(err, unix.ENOENT) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	if v.Type != TypeInteger {
		return nil, fmt.Errorf("channel map of PCM %d is %s, not INTEGER", device, v.Type)
	}
	out := make([]uint32, len(v.Ints))
	for i, x := range v.Ints {
		if x < 0 || x > 0xffffffff {
			return nil, fmt.Errorf("channel map of PCM %d holds %d", device, x)
		}
		out[i] = uint32(x)
	}
	return out, nil
}

// Jack is a jack-detection element: iface CARD, BOOLEAN, read-only, named
// "<what> Jack" (sound/core/ctljack.c): "Headphone Jack", "HDMI/DP,pcm=3
// Jack" (the HDA HDMI driver names the PCM it serves), "Line Out Phantom
// Jack" (a fixed output, always on).
type Jack struct {
	ID ElemID
	// Plugged is the element's value: something is connected.
	Plugged bool
	// PCM is the PCM device an HDMI/DP jack serves; -1 for other jacks.
	PCM int
	// Phantom marks a jack without detection (always reports plugged).
	Phantom bool
}

var (
	jackName    = regexp.MustCompile(` Jack$`)
	hdmiJackPCM = regexp.MustCompile(`,pcm=([0-9]{1,3}) Jack$`)
	phantomJack = regexp.MustCompile(` Phantom Jack$`)
)

// ReadJacks reads every jack element in ids (from Control.Elements), in
// that order. An element that fails to read is left out and its error
// joined into the returned error, so one bad element hides no other jack.
func ReadJacks(c Control, ids []ElemID) ([]Jack, error) {
	var out []Jack
	var errs []error
	for _, id := range ids {
		if id.Iface != IfaceCard || !jackName.MatchString(id.Name) {
			continue
		}
		v, err := c.Read(id)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if v.Type != TypeBoolean || len(v.Ints) != 1 {
			continue // not a jack-detection element after all
		}
		j := Jack{ID: id, Plugged: v.Ints[0] != 0, PCM: -1, Phantom: phantomJack.MatchString(id.Name)}
		if m := hdmiJackPCM.FindStringSubmatch(id.Name); m != nil {
			j.PCM, _ = strconv.Atoi(m[1])
		}
		out = append(out, j)
	}
	return out, errors.Join(errs...)
}
