// SPDX-License-Identifier: Apache-2.0

package pairing

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/godbus/dbus/v5"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	btv1 "github.com/liken-sh/operators/api/bluetooth/v1alpha1"
	"github.com/liken-sh/operators/internal/bdaddr"
	"github.com/liken-sh/operators/internal/bluez"
	"github.com/liken-sh/operators/internal/bonds"
)

// Labels and annotations on Peripherals.
const (
	// DeviceLabel carries the peer's address in key spelling.
	DeviceLabel = "bluetooth.liken.sh/device"
	// RequestAnnotation names the PairingRequest (namespace/name) that
	// made the bond; status.bond.request is read from it, because a
	// create cannot write status.
	RequestAnnotation = "bluetooth.liken.sh/request"
)

// hidUUID is the HID profile's service class (Bluetooth SIG Assigned
// Numbers 3.3: 0x1124); a device without it has no input nodes to wait
// for. hogUUID is HID over GATT (0x1812).
const (
	hidUUID = "00001124-0000-1000-8000-00805f9b34fb"
	hogUUID = "00001812-0000-1000-8000-00805f9b34fb"
)

// peripherals returns ours by peer key.
func (p *pass) peripherals() map[string]*btv1.Peripheral {
	all, err := list[btv1.Peripheral](p.c.store.peripherals)
	if err != nil {
		p.fail("reading Peripherals: %v", err)
		return nil
	}
	out := map[string]*btv1.Peripheral{}
	for i := range all {
		if k := all[i].Labels[DeviceLabel]; k != "" {
			out[k] = &all[i]
		}
	}
	return out
}

// syncPeripherals adopts every bond BlueZ holds, writes spec to BlueZ,
// status from it, and runs the unpair of deleted Peripherals.
func (p *pass) syncPeripherals() {
	if p.radio == nil || p.adapter == nil {
		return
	}
	have := p.peripherals()
	devices := map[string]bluez.Device{}
	for _, d := range p.in.Objects.Devices {
		addr, err := bdaddr.Parse(d.Address)
		if err != nil {
			continue
		}
		devices[addr.Key()] = d
		if (d.Paired || d.Bonded) && have[addr.Key()] == nil && !p.pairing(d.Path) {
			per, err := p.createPeripheral(addr, d, d.Trusted, "")
			if err != nil {
				p.fail("adopting the bond of %s: %v", d.Address, err)
				continue
			}
			p.log.Info("Adopted a bond BlueZ holds", "peripheral", per.Name, "device", d.Address)
			p.c.event(per, false, "Adopted", "Adopt", "BlueZ holds a bond with %s (%s); adopted it", d.Address, truncate(d.DisplayName(), 64))
			have[addr.Key()] = per
		}
	}
	p.res.Owners = map[bdaddr.Address]metav1.OwnerReference{}
	for key, per := range have {
		if addr, err := bdaddr.Parse(strings.ReplaceAll(key, "-", ":")); err == nil && per.UID != "" {
			p.res.Owners[addr] = metav1.OwnerReference{APIVersion: btv1.GroupVersion.String(), Kind: "Peripheral", Name: per.Name, UID: per.UID}
		}
		d, ok := devices[key]
		var dev *bluez.Device
		if ok {
			dev = &d
		}
		if per.DeletionTimestamp != nil {
			p.unpair(key, per, dev)
			continue
		}
		p.syncPeripheral(key, per, dev)
	}
}

// markHandmadePeripherals reports, on every Peripheral without the
// adapter label that has no status condition yet, that no operator made
// it and none serves it: conditions Connected and Ready False, reason
// NotServed. An operator creates a Peripheral only for a bond, with that
// label in the create itself, so a Peripheral without it was made by a
// person (or a tool) and names no radio and no bond. Every operator
// writes the same status from the same object, once: the write carries
// the resourceVersion, so one lands, and the others then see the
// condition and leave it, as later passes do.
func (p *pass) markHandmadePeripherals() {
	handmade, err := list[btv1.Peripheral](p.c.store.handmade)
	if err != nil {
		p.fail("reading Peripherals: %v", err)
		return
	}
	for i := range handmade {
		per := &handmade[i]
		if per.DeletionTimestamp != nil || meta.FindStatusCondition(per.Status.Conditions, btv1.ConditionConnected) != nil {
			continue
		}
		next := per.DeepCopy()
		msg := fmt.Sprintf("no bluetooth operator made this Peripheral, so none serves it: an operator makes the Peripheral of each device "+
			"that pairs with its radio (create a PairingRequest) or whose bond BlueZ already holds, labelled %s with its Adapter, "+
			"and this one has no such label", btv1.AdapterLabel)
		setCondition(&next.Status.Conditions, btv1.ConditionConnected, false, btv1.ReasonNotServed, msg, per.Generation)
		setCondition(&next.Status.Conditions, btv1.ConditionReady, false, btv1.ReasonNotServed, msg, per.Generation)
		if err := p.c.store.writeStatus(p.ctx, btv1.PeripheralsResource, "Peripheral", next, per.Status, next.Status, ""); err != nil {
			p.statusFailed("Peripheral "+per.Name, err)
			continue
		}
		p.log.Info("No operator made this Peripheral", "peripheral", per.Name)
	}
}

// pairing reports whether a request's attempt holds the device: its
// Peripheral is the request's to make, with the request named.
func (p *pass) pairing(device dbus.ObjectPath) bool {
	p.c.mu.Lock()
	defer p.c.mu.Unlock()
	for _, a := range p.c.attempts {
		if a.device == device {
			return true
		}
	}
	return false
}

// createPeripheral creates the Peripheral of a bond, owned by our
// Adapter. Its name is the peer's key; when that name is taken by a
// Peripheral of another adapter (a speaker bonded to two hosts), it is
// "<peer key>.<adapter key>".
func (p *pass) createPeripheral(addr bdaddr.Address, d bluez.Device, trusted bool, request string) (*btv1.Peripheral, error) {
	yes := true
	mk := func(name string) *btv1.Peripheral {
		per := &btv1.Peripheral{ObjectMeta: metav1.ObjectMeta{
			Name: name,
			Labels: map[string]string{
				btv1.AdapterLabel: p.c.cfg.Adapter.Key(),
				DeviceLabel:       addr.Key(),
			},
			Finalizers: []string{btv1.PeripheralFinalizer},
			OwnerReferences: []metav1.OwnerReference{{
				APIVersion: btv1.GroupVersion.String(), Kind: "Adapter",
				Name: p.adapter.Name, UID: p.adapter.UID, BlockOwnerDeletion: &yes,
			}},
		}}
		if request != "" {
			per.Annotations = map[string]string{RequestAnnotation: request}
		}
		per.Spec.Trusted = &trusted
		return per
	}
	for _, name := range []string{addr.Key(), addr.Key() + "." + p.c.cfg.Adapter.Key()} {
		per := mk(name)
		err := p.c.store.create(p.ctx, btv1.PeripheralsResource, "Peripheral", per, "")
		if !apierrors.IsAlreadyExists(err) {
			return per, err
		}
		// Ours, made by an earlier pass the informer has not caught up
		// with, or another adapter's bond with the same device.
		got, gerr := getPeripheral(p, name)
		if gerr != nil {
			return nil, gerr
		}
		if got.Labels[btv1.AdapterLabel] == p.c.cfg.Adapter.Key() {
			return got, nil
		}
	}
	return nil, fmt.Errorf("Peripherals %s and %s.%s belong to other adapters", addr.Key(), addr.Key(), p.c.cfg.Adapter.Key())
}

// getPeripheral reads a Peripheral from the API server.
func getPeripheral(p *pass, name string) (*btv1.Peripheral, error) {
	ctx, cancel := context.WithTimeout(p.ctx, requestTimeout)
	defer cancel()
	u, err := p.c.store.client.Resource(btv1.PeripheralsResource).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return nil, err
	}
	var out btv1.Peripheral
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// syncPeripheral writes a live Peripheral's spec to BlueZ and its status.
func (p *pass) syncPeripheral(key string, per *btv1.Peripheral, d *bluez.Device) {
	if d != nil && (d.Paired || d.Bonded) {
		if a := per.Spec.Alias; a != "" && a != d.Alias {
			p.setDevice(d, "Alias", a)
		}
		if t := per.Spec.Trusted; t != nil && *t != d.Trusted {
			p.setDevice(d, "Trusted", *t)
		}
	}
	next := per.DeepCopy()
	p.peripheralStatus(key, next, d)
	if err := p.c.store.writeStatus(p.ctx, btv1.PeripheralsResource, "Peripheral", next, per.Status, next.Status, ""); err != nil {
		p.statusFailed("Peripheral "+per.Name, err)
	}
}

func (p *pass) setDevice(d *bluez.Device, name string, value any) {
	if err := p.c.cfg.Radio.SetProperty(p.ctx, d.Path, bluez.DeviceInterface, name, value); err != nil {
		p.fail("setting %s of %s: %v", name, d.Address, err)
	}
}

// peripheralStatus fills per.Status from the device (nil: BlueZ has no
// object for it).
func (p *pass) peripheralStatus(key string, per *btv1.Peripheral, d *bluez.Device) {
	st := &per.Status
	addr, _ := bdaddr.Parse(strings.ReplaceAll(key, "-", ":"))
	st.Adapter, st.Node = p.c.cfg.Adapter.Key(), p.c.cfg.Node
	st.Address = addr.String()
	if st.Bond == nil {
		st.Bond = &btv1.Bond{}
	}
	st.Bond.Secret = p.c.cfg.Namespace + "/" + bonds.SecretName(p.c.cfg.Adapter, addr)
	st.Bond.Request = per.Annotations[RequestAnnotation]
	if st.Bond.PairedAt == nil {
		t := metav1.NewTime(p.now)
		st.Bond.PairedAt = &t
	}
	gen := per.Generation
	connected, ready := false, false
	var connReason, connMsg, readyReason, readyMsg string
	switch {
	case d == nil || !(d.Paired || d.Bonded):
		st.Bond.Held = false
		connReason, connMsg = btv1.ReasonNotBonded, "BlueZ no longer holds a bond with this device; pair it again with a PairingRequest"
	default:
		st.Bond.Held = true
		st.Name, st.Icon = truncate(d.DisplayName(), btv1.MaxNameBytes), d.Icon
		switch {
		case d.Connected:
			connected, connReason, connMsg = true, btv1.ReasonConnected, "the link is up"
		case per.DeletionTimestamp != nil:
			// Not asleep: the unpair disconnected it, and its bond goes.
			connReason, connMsg = btv1.ReasonUnpairing, "disconnected for the unpair; the bond is removed once no claim holds the device"
		case d.Trusted && p.radio.Powered:
			connReason, connMsg = btv1.ReasonAsleep, "off the air; it reconnects when woken (for a gamepad, its home button)"
		case !d.Trusted:
			connReason, connMsg = btv1.ReasonNotConnected, "not connected, and not trusted: BlueZ will not accept its reconnection without an agent (set spec.trusted: true)"
		default:
			connReason, connMsg = btv1.ReasonNotConnected, "not connected: the adapter is powered off"
		}
	}
	if d != nil {
		p.battery(st, d)
	}
	nodes := []string(nil)
	if d != nil && p.in.InputNodes != nil {
		nodes = p.in.InputNodes(d.Address)
	}
	switch {
	case !connected:
		readyReason, readyMsg = connReason, connMsg
	case len(nodes) > 0:
		ready, readyReason, readyMsg = true, btv1.ReasonInputNodes, "input nodes "+strings.Join(nodes, ", ")
	case d != nil && !slices.Contains(d.UUIDs, hidUUID) && !slices.Contains(d.UUIDs, hogUUID):
		ready, readyReason, readyMsg = true, btv1.ReasonLinkUp, "connected; the device offers no HID service, so there are no input nodes to wait for"
	default:
		readyReason, readyMsg = btv1.ReasonNoInputNodes, "connected, and the kernel has registered no input node yet"
	}
	if h, ok := p.in.Holders[key]; ok {
		st.Claim = &btv1.ClaimReference{Namespace: h.Namespace, Name: h.Name}
	} else {
		st.Claim = nil
	}
	setCondition(&st.Conditions, btv1.ConditionConnected, connected, connReason, connMsg, gen)
	setCondition(&st.Conditions, btv1.ConditionReady, ready, readyReason, readyMsg, gen)
	if d != nil && (d.Paired || d.Bonded) {
		p.endpointCache(per, st, d)
		p.a2dpProfile(per, st, d)
	}
	p.c.metrics.connected.WithLabelValues(per.Name).Set(b2f(connected))
	p.c.metrics.claimed.WithLabelValues(per.Name).Set(b2f(st.Claim != nil))
	if st.Battery != nil && st.Battery.Percentage != nil {
		p.c.metrics.battery.WithLabelValues(per.Name).Set(float64(*st.Battery.Percentage))
	}
}

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

// battery reads the kernel's power_supply under the HID device first
// (drivers/hid/hid-sony.c, hid-playstation.c and others register one:
// capacity in percent, status Charging/Discharging/Full), then BlueZ's
// Battery1.
func (p *pass) battery(st *btv1.PeripheralStatus, d *bluez.Device) {
	st.Battery = nil
	if p.in.HIDDevPath != nil {
		if dev := p.in.HIDDevPath(d.Address); dev != "" {
			supplies, _ := filepath.Glob(filepath.Join(p.c.cfg.SysRoot, dev, "power_supply", "*"))
			for _, s := range supplies {
				raw, err := os.ReadFile(filepath.Join(s, "capacity"))
				if err != nil {
					continue
				}
				n, err := strconv.Atoi(strings.TrimSpace(string(raw)))
				if err != nil || n < 0 || n > 100 {
					continue
				}
				pct := int32(n)
				b := &btv1.Battery{Percentage: &pct, Source: btv1.BatteryFromKernel}
				if raw, err := os.ReadFile(filepath.Join(s, "status")); err == nil {
					switch strings.TrimSpace(string(raw)) {
					case "Charging":
						b.Charging = new(true)
					case "Discharging", "Not charging", "Full":
						b.Charging = new(false)
					}
				}
				st.Battery = b
				return
			}
		}
	}
	if d.HasBattery && d.Battery <= 100 {
		pct := int32(d.Battery)
		st.Battery = &btv1.Battery{Percentage: &pct, Source: btv1.BatteryFromBlueZ}
	}
}

// unpair runs one step of a deleted Peripheral's unpair per pass:
// disconnect; wait while a prepared claim holds the device; retire it
// from the slice; Adapter1.RemoveDevice; release the finalizer, after
// which garbage collection removes the bond Secret it owns.
func (p *pass) unpair(key string, per *btv1.Peripheral, d *bluez.Device) {
	if !slices.Contains(per.Finalizers, btv1.PeripheralFinalizer) {
		return
	}
	addr, _ := bdaddr.Parse(strings.ReplaceAll(key, "-", ":"))
	p.res.SkipBonds = append(p.res.SkipBonds, addr)
	status := func(msg string) {
		next := per.DeepCopy()
		p.peripheralStatus(key, next, d)
		setCondition(&next.Status.Conditions, btv1.ConditionReady, false, btv1.ReasonUnpairing, msg, per.Generation)
		if err := p.c.store.writeStatus(p.ctx, btv1.PeripheralsResource, "Peripheral", next, per.Status, next.Status, ""); err != nil {
			p.statusFailed("Peripheral "+per.Name, err)
		}
		p.after(2 * 1e9)
	}
	if d != nil && d.Connected {
		if err := p.c.cfg.Radio.Disconnect(p.ctx, d.Path); err != nil {
			p.fail("unpairing %s: disconnecting: %v", per.Name, err)
		}
		status("unpairing: disconnecting")
		return
	}
	if h, ok := p.in.Holders[key]; ok {
		p.c.logOnce(p.log, "unpair-held/"+key, "Unpair waits for a claim to let go", "peripheral", per.Name, "claim", h.Namespace+"/"+h.Name)
		status(fmt.Sprintf("unpairing: waiting for ResourceClaim %s/%s, which holds the device, to be released", h.Namespace, h.Name))
		return
	}
	p.c.mu.Lock()
	p.c.retiring[key] = true
	retired := p.c.retired[key]
	p.c.mu.Unlock()
	p.res.KeepOut = append(p.res.KeepOut, key)
	if !retired {
		status("unpairing: retiring the device from the ResourceSlice")
		return
	}
	if d != nil {
		if err := p.c.cfg.Radio.RemoveDevice(p.ctx, d.Adapter, d.Path); err != nil {
			p.fail("unpairing %s: removing it from BlueZ: %v", per.Name, err)
			status("unpairing: BlueZ refused to remove the device: " + err.Error())
			return
		}
	}
	fin := slices.DeleteFunc(slices.Clone(per.Finalizers), func(f string) bool { return f == btv1.PeripheralFinalizer })
	if err := p.c.store.patchFinalizers(p.ctx, btv1.PeripheralsResource, "", per.Name, per.ResourceVersion, fin); err != nil {
		p.fail("unpairing %s: releasing the finalizer: %v", per.Name, err)
		return
	}
	p.log.Info("Unpaired", "peripheral", per.Name, "device", addr)
	p.c.event(per, false, "Unpaired", "Unpair", "removed the bond with %s from BlueZ; its Secret goes with this Peripheral", addr)
	p.c.metrics.connected.DeleteLabelValues(per.Name)
	p.c.metrics.claimed.DeleteLabelValues(per.Name)
	p.c.metrics.battery.DeleteLabelValues(per.Name)
	p.c.mu.Lock()
	delete(p.c.retiring, key)
	delete(p.c.retired, key)
	p.c.mu.Unlock()
}

// truncate cleans s, a name that came from the radio and is untrusted,
// as bluez.DisplayText does (no control or format character, no invalid
// UTF-8, single spaces) and cuts it to at most n bytes on a rune
// boundary.
func truncate(s string, n int) string {
	return bluez.DisplayText(s, n)
}
