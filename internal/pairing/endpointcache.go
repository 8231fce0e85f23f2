// SPDX-License-Identifier: Apache-2.0

package pairing

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	btv1 "github.com/liken-sh/operators/api/bluetooth/v1alpha1"
	"github.com/liken-sh/operators/internal/atomicfile"
	"github.com/liken-sh/operators/internal/bdaddr"
	"github.com/liken-sh/operators/internal/bluez"
	"github.com/liken-sh/operators/internal/bonds"
	"github.com/liken-sh/operators/internal/regularfile"
)

// a2dpSinkUUID is the Audio Sink service class (Bluetooth SIG Assigned
// Numbers, 0x110B), the role of a speaker's stream endpoints.
const a2dpSinkUUID = "0000110b-0000-1000-8000-00805f9b34fb"

// endpointCache sets a speaker's EndpointCache condition: whether
// BlueZ's cache of its A2DP stream endpoints (cache/<device>,
// [Endpoints], which bluetoothd loads at a connection instead of
// discovering them, profiles/audio/a2dp.c) agrees with the endpoints
// bluetoothd exports for it now (MediaEndpoint1 under the device, while
// it is connected). When they disagree (the cache was restored from a
// bond Secret written before the speaker's firmware gained a codec, or
// bluetoothd discovered afresh without storing it), the cache would hide
// the difference at the next connection: the condition says so (False,
// Stale), and once the speaker is disconnected the [Endpoints] group is
// removed (logged, with an Event), so that its next connection discovers
// its endpoints again and a codec it gained appears. While it is
// disconnected there is nothing to compare, and the condition stays.
// A device with neither cached nor exported endpoints has no condition.
func (p *pass) endpointCache(per *btv1.Peripheral, st *btv1.PeripheralStatus, d *bluez.Device) {
	if p.c.cfg.BondsRoot == "" || d == nil {
		return
	}
	addr, err := bdaddr.Parse(d.Address)
	if err != nil {
		return
	}
	path := filepath.Join(bonds.AdapterDir(p.c.cfg.BondsRoot, p.c.cfg.Adapter), "cache", addr.String())
	data, err := regularfile.Read(path, bonds.MaxCacheSize)
	if errors.Is(err, fs.ErrNotExist) {
		data, err = nil, nil
	}
	var cached []bonds.CachedEndpoint
	if err == nil {
		cached, err = bonds.ParseEndpoints(data)
	}
	gen := per.Generation
	if err != nil {
		meta.SetStatusCondition(&st.Conditions, metav1.Condition{Type: btv1.ConditionEndpointCache, Status: metav1.ConditionUnknown,
			Reason: btv1.ReasonCacheUnreadable, ObservedGeneration: gen,
			Message: truncate(fmt.Sprintf("BlueZ's cache of the speaker's stream endpoints cannot be read: %v", err), 1024)})
		return
	}
	cachedSinks := describeEndpoints(cached, func(e bonds.CachedEndpoint) (bool, byte, []byte) {
		return e.Type == bonds.SEPSink, e.Codec, e.Capabilities
	})
	live := describeEndpoints(d.Endpoints, func(e bluez.RemoteEndpoint) (bool, byte, []byte) {
		return e.UUID == a2dpSinkUUID, e.Codec, e.Capabilities
	})
	prev := meta.FindStatusCondition(per.Status.Conditions, btv1.ConditionEndpointCache)
	switch {
	case len(cachedSinks) == 0 && len(live) == 0 && prev == nil:
		return
	case d.Connected && len(live) > 0 && (len(cachedSinks) == 0 || slices.Equal(cachedSinks, live)):
		setCondition(&st.Conditions, btv1.ConditionEndpointCache, true, btv1.ReasonCacheCurrent,
			fmt.Sprintf("the speaker offers %s, as BlueZ's cache of its stream endpoints says", codecList(live)), gen)
	case d.Connected && len(live) > 0:
		msg := fmt.Sprintf("BlueZ's cache of the speaker's stream endpoints (%s, [%s]) lists %s, while the speaker offers %s now; "+
			"bluetoothd loads the cache instead of asking the speaker, so the cache is cleared when the speaker next disconnects, and its next connection asks it afresh",
			path, bonds.EndpointsGroup, codecList(cachedSinks), codecList(live))
		if prev == nil || prev.Reason != btv1.ReasonCacheStale {
			p.log.Info("A speaker's cached stream endpoints disagree with what it offers now; clearing them at its next disconnection",
				"peripheral", per.Name, "cached", cachedSinks, "offered", live)
		}
		setCondition(&st.Conditions, btv1.ConditionEndpointCache, false, btv1.ReasonCacheStale, msg, gen)
	case !d.Connected && prev != nil && prev.Reason == btv1.ReasonCacheStale:
		out, removed, err := bonds.WithoutEndpoints(data)
		if err == nil && removed && !bytes.Equal(out, data) {
			err = atomicfile.WriteFile(path, out, bonds.FileMode)
		}
		if err != nil {
			p.fail("Peripheral %s: clearing BlueZ's stale endpoint cache %s: %v", per.Name, path, err)
			return
		}
		p.log.Info("Cleared a speaker's stale cached stream endpoints; its next connection discovers them afresh", "peripheral", per.Name, "path", path)
		p.c.event(per, false, btv1.ReasonCacheCleared, "ClearEndpointCache",
			"cleared the [%s] group of %s, which listed %s while the speaker offered other codecs; its next connection discovers them afresh",
			bonds.EndpointsGroup, path, codecList(cachedSinks))
		setCondition(&st.Conditions, btv1.ConditionEndpointCache, true, btv1.ReasonCacheCleared,
			"the stale cache of the speaker's stream endpoints was cleared; its next connection discovers them afresh", gen)
	}
}

// describeEndpoints names each endpoint keep accepts by codec and
// capabilities ("sbc ffff0235", "vendor 0x0000012d/0x00aa 3c07"),
// sorted, so that two lists compare as multisets.
func describeEndpoints[E any](eps []E, keep func(E) (bool, byte, []byte)) []string {
	var out []string
	for _, e := range eps {
		ok, codec, caps := keep(e)
		if ok {
			out = append(out, describeCodec(codec, caps))
		}
	}
	slices.Sort(out)
	return out
}

// describeCodec names an A2DP codec (A2DP 1.3, 4.2; a vendor codec by its
// vendor and codec IDs, little-endian at the start of its capabilities),
// followed by its capabilities in hex.
func describeCodec(codec byte, caps []byte) string {
	name := fmt.Sprintf("codec 0x%02x", codec)
	switch codec {
	case 0x00:
		name = "sbc"
	case 0x01:
		name = "mpeg12"
	case 0x02:
		name = "aac"
	case 0xff:
		if len(caps) >= 6 {
			vendor := uint32(caps[0]) | uint32(caps[1])<<8 | uint32(caps[2])<<16 | uint32(caps[3])<<24
			id := uint16(caps[4]) | uint16(caps[5])<<8
			name = fmt.Sprintf("vendor 0x%08x/0x%04x", vendor, id)
		}
	}
	return fmt.Sprintf("%s %x", name, caps)
}

// codecList is a list of describeCodec names for a message, without the
// capabilities, "none" when empty.
func codecList(described []string) string {
	if len(described) == 0 {
		return "none"
	}
	names := make([]string, 0, len(described))
	for _, d := range described {
		names = append(names, d[:strings.LastIndexByte(d, ' ')])
	}
	return strings.Join(names, ", ")
}
