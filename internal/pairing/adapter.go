// SPDX-License-Identifier: Apache-2.0

package pairing

import (
	"fmt"
	"slices"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	btv1 "github.com/liken-sh/operators/api/bluetooth/v1alpha1"
	"github.com/liken-sh/operators/internal/bdaddr"
	"github.com/liken-sh/operators/internal/bluez"
	"github.com/liken-sh/operators/internal/bonds"
)

// syncAdapter creates or adopts the Adapter of our radio, writes its spec
// to BlueZ, and writes its status. A deletion is refused while the radio
// is present: the finalizer stays and the Present condition says why.
func (p *pass) syncAdapter() {
	key := p.c.cfg.Adapter.Key()
	var cur *btv1.Adapter
	adapters, err := list[btv1.Adapter](p.c.store.adapters)
	if err != nil {
		p.fail("reading Adapters: %v", err)
		return
	}
	for i := range adapters {
		if adapters[i].Name == key {
			cur = &adapters[i]
		}
	}
	p.releaseAbsentElsewhere(adapters, key)
	p.markAbsentHere(adapters, key)
	p.markUnserved(adapters, key)
	p.markHandmadePeripherals()
	if p.radio == nil {
		// The radio is not on the bus: nothing to create. An existing
		// object says so, and its deletion goes ahead.
		if cur != nil && cur.DeletionTimestamp != nil && (cur.Status.Node == p.c.cfg.Node || cur.Status.Node == "") {
			p.releaseAbsent(cur, fmt.Sprintf("bluetoothd on node %s does not report the radio", p.c.cfg.Node))
			return
		}
		if cur != nil && cur.Status.Node == p.c.cfg.Node {
			next := cur.DeepCopy()
			next.Status.Powered, next.Status.Discoverable, next.Status.Pairable, next.Status.Discovering = false, false, false, false
			setCondition(&next.Status.Conditions, btv1.ConditionPresent, false, btv1.ReasonAbsent,
				fmt.Sprintf("bluetoothd on node %s does not report the radio", p.c.cfg.Node), cur.Generation)
			if err := p.c.store.writeStatus(p.ctx, btv1.AdaptersResource, "Adapter", next, cur.Status, next.Status, ""); err != nil {
				p.statusFailed("Adapter "+key, err)
			}
		}
		return
	}
	if cur == nil {
		obj := &btv1.Adapter{ObjectMeta: metav1.ObjectMeta{
			Name:       key,
			Labels:     map[string]string{btv1.AdapterLabel: key},
			Finalizers: []string{btv1.AdapterFinalizer},
		}}
		if err := p.c.store.create(p.ctx, btv1.AdaptersResource, "Adapter", obj, ""); apierrors.IsAlreadyExists(err) {
			// Created by an earlier pass the informer has not caught up
			// with; the next pass reads it.
			p.after(time.Second)
			return
		} else if err != nil {
			p.fail("creating Adapter %s: %v", key, err)
			return
		}
		p.log.Info("Created the Adapter", "adapter", key)
		cur = obj
	}
	p.adapter = cur
	if !slices.Contains(cur.Finalizers, btv1.AdapterFinalizer) && cur.DeletionTimestamp == nil {
		if err := p.c.store.patchFinalizers(p.ctx, btv1.AdaptersResource, "", cur.Name, cur.ResourceVersion,
			append(slices.Clone(cur.Finalizers), btv1.AdapterFinalizer)); err != nil {
			p.fail("Adapter %s finalizer: %v", key, err)
		}
	}

	// The spec, written where it differs.
	r := p.radio
	if a := cur.Spec.Alias; a != "" && a != r.Alias {
		p.setAdapter(r, "Alias", a)
	}
	if pw := cur.Spec.Powered; pw != nil && *pw != r.Powered {
		p.setAdapter(r, "Powered", *pw)
	}

	next := cur.DeepCopy()
	st := &next.Status
	st.Address, st.Node = r.Address, p.c.cfg.Node
	st.Powered, st.Discoverable, st.Pairable, st.Discovering = r.Powered, r.Discoverable, r.Pairable, r.Discovering
	st.BluezVersion, st.KernelVersion = r.BlueZVersion(), p.c.kernel
	bonds := 0
	for _, d := range p.in.Objects.Devices {
		if d.Paired || d.Bonded {
			bonds++
		}
	}
	st.Bonds = int32(bonds)
	if cur.DeletionTimestamp != nil {
		msg := fmt.Sprintf("the radio at %s is present on node %s; deleting this Adapter would unpair every device under it, so the deletion waits until the radio is gone", r.Address, p.c.cfg.Node)
		if c := meta.FindStatusCondition(cur.Status.Conditions, btv1.ConditionPresent); c == nil || c.Reason != btv1.ReasonDeletionRefused {
			p.c.event(cur, true, btv1.ReasonDeletionRefused, "Delete", "%s", msg)
		}
		setCondition(&st.Conditions, btv1.ConditionPresent, true, btv1.ReasonDeletionRefused, msg, cur.Generation)
	} else {
		setCondition(&st.Conditions, btv1.ConditionPresent, true, btv1.ReasonPresent,
			fmt.Sprintf("registered with bluetoothd on node %s", p.c.cfg.Node), cur.Generation)
	}
	if bonds > 0 {
		setCondition(&st.Conditions, btv1.ConditionBondsRestored, true, btv1.ReasonRestored,
			bondsHeld(bonds), cur.Generation)
		p.c.metrics.previousBonds.Reset()
	} else {
		p.reportPreviousRadioBonds(cur, st, adapters, key)
	}
	p.pageScan(cur, st)
	if err := p.c.store.writeStatus(p.ctx, btv1.AdaptersResource, "Adapter", next, cur.Status, next.Status, ""); err != nil {
		p.statusFailed("Adapter "+key, err)
	}
}

// pageScan sets the PageScan condition from the kernel's flag. A bonded
// device that pages the host (a gamepad's PS button) is answered only
// while the controller page-scans, and BlueZ 5.66 offers no
// Adapter1.Connectable to ask for that. It needs none: bluetoothd adds
// every bonded BR/EDR device it loads from its storage to the kernel's
// accept list (src/device.c, btd_device_set_temporary ->
// adapter_accept_list_add, MGMT_OP_ADD_DEVICE with action 0x01), and the
// kernel page-scans while any device on that list is disconnected,
// whatever the management interface's Connectable setting says
// (net/bluetooth/hci_sync.c, hci_update_scan_sync), and accepts its
// connection (hci_event.c, hci_conn_request_evt). bluetoothd sends that
// from its own container, which holds CAP_NET_ADMIN; the operator holds
// no capability and only reads the flag (HCIGETDEVINFO). This is why the
// bonds must be in the tree before bluetoothd starts: it loads them once,
// when it registers the adapter. A Warning Event marks the change to
// PageScanOff, the state in which a bonded device cannot reconnect.
func (p *pass) pageScan(cur *btv1.Adapter, st *btv1.AdapterStatus) {
	var waiting []string
	for _, d := range p.in.Objects.Devices {
		if (d.Paired || d.Bonded) && !d.Connected {
			waiting = append(waiting, d.Address)
		}
	}
	gen := cur.Generation
	switch {
	case p.in.PageScan == nil:
		msg := "the kernel's scan state of the radio could not be read"
		if p.in.PageScanErr != nil {
			msg += ": " + p.in.PageScanErr.Error()
		}
		meta.SetStatusCondition(&st.Conditions, metav1.Condition{Type: btv1.ConditionPageScan, Status: metav1.ConditionUnknown,
			Reason: btv1.ReasonUnreadable, Message: truncate(msg, 1024), ObservedGeneration: gen})
	case *p.in.PageScan:
		setCondition(&st.Conditions, btv1.ConditionPageScan, true, btv1.ReasonPageScanOn,
			fmt.Sprintf("the radio answers pages: %d disconnected bonded devices can reconnect", len(waiting)), gen)
	case len(waiting) == 0:
		setCondition(&st.Conditions, btv1.ConditionPageScan, false, btv1.ReasonNothingToReconnect,
			"page scan is off, and no bonded device is disconnected (the kernel scans for bonded devices only while one is)", gen)
	default:
		msg := fmt.Sprintf("page scan is off while %d bonded devices are disconnected (%s): they cannot reconnect; were the bonds restored after bluetoothd started?",
			len(waiting), truncate(strings.Join(waiting, ", "), 200))
		if c := meta.FindStatusCondition(cur.Status.Conditions, btv1.ConditionPageScan); c == nil || c.Reason != btv1.ReasonPageScanOff {
			p.c.event(cur, true, btv1.ReasonPageScanOff, "PageScan", "%s", msg)
			p.log.Info("Page scan is off while bonded devices are disconnected", "adapter", st.Address, "devices", waiting)
		}
		setCondition(&st.Conditions, btv1.ConditionPageScan, false, btv1.ReasonPageScanOff, msg, gen)
	}
}

// releaseAbsentElsewhere lets the deletion of another radio's Adapter go
// ahead when that radio was last on this node and bluetoothd here no
// longer reports it: no operator serves it, so none would ever release it.
func (p *pass) releaseAbsentElsewhere(adapters []btv1.Adapter, key string) {
	if p.in.NodeAdapters == nil {
		return
	}
	for i := range adapters {
		a := &adapters[i]
		if a.Name == key || a.DeletionTimestamp == nil || a.Status.Node != p.c.cfg.Node ||
			!slices.Contains(a.Finalizers, btv1.AdapterFinalizer) {
			continue
		}
		present := slices.ContainsFunc(p.in.NodeAdapters, func(addr string) bool {
			b, err := bdaddr.Parse(addr)
			return err == nil && b.Key() == a.Name
		})
		if !present {
			p.releaseAbsent(a, fmt.Sprintf("bluetoothd on node %s, where the radio was last, does not report it", p.c.cfg.Node))
		}
	}
}

// markUnserved reports, on every Adapter other than ours that no
// operator has ever written a status for, that no operator serves it:
// condition Present False, reason NotServed, once notFoundGrace has
// passed since its creation. Operators create the Adapter of each radio
// they find and write its status in the same pass, so such an Adapter
// was made by a person, under a name no radio answers to now: a misspelt
// address, or a radio not plugged in yet, whose operator then takes the
// object over and sets Present itself. Every operator writes the same
// status from the same objects; the write carries the resourceVersion,
// so one lands and the others see the condition and leave it.
func (p *pass) markUnserved(adapters []btv1.Adapter, key string) {
	served := reportedRadios(adapters)
	for i := range adapters {
		a := &adapters[i]
		if a.Name == key || a.DeletionTimestamp != nil || a.Status.Node != "" ||
			meta.FindStatusCondition(a.Status.Conditions, btv1.ConditionPresent) != nil {
			continue
		}
		if at := a.CreationTimestamp.Add(notFoundGrace); p.now.Before(at) {
			p.after(at.Sub(p.now))
			continue
		}
		next := a.DeepCopy()
		setCondition(&next.Status.Conditions, btv1.ConditionPresent, false, btv1.ReasonNotServed,
			fmt.Sprintf("no bluetooth operator has a radio with the address %s; the radios that operators report are: %s (kubectl get adapters). "+
				"An operator creates the Adapter of each radio it finds, so this name is likely misspelt, or its radio is not plugged in yet",
				a.Name, served), a.Generation)
		if err := p.c.store.writeStatus(p.ctx, btv1.AdaptersResource, "Adapter", next, a.Status, next.Status, ""); err != nil {
			p.statusFailed("Adapter "+a.Name, err)
			continue
		}
		p.log.Info("No operator serves this Adapter", "adapter", a.Name)
	}
}

// reportedRadios lists, for a message, the Adapters whose radio an
// operator has reported (status.node set), sorted by name, each as
// "name (node N)", or "name (absent, last on node N)" when its radio is
// on no node now; at most maxListed, then "and N more"; "none" when there
// is none. An Adapter no operator has reported (made by hand, NotServed
// or not yet written) is left out: naming it beside the real radios would
// offer a name no radio answers to.
func reportedRadios(adapters []btv1.Adapter) string {
	var served []string
	for _, a := range adapters {
		switch {
		case a.Status.Node == "":
		case isTrue(a.Status.Conditions, btv1.ConditionPresent):
			served = append(served, fmt.Sprintf("%s (node %s)", a.Name, a.Status.Node))
		default:
			served = append(served, fmt.Sprintf("%s (absent, last on node %s)", a.Name, a.Status.Node))
		}
	}
	slices.Sort(served)
	switch {
	case len(served) == 0:
		return "none"
	case len(served) > maxListed:
		served = append(served[:maxListed], fmt.Sprintf("and %d more", len(served)-maxListed))
	}
	return strings.Join(served, ", ")
}

// maxListed bounds how many radios a message names.
const maxListed = 8

// releaseAbsent lets the deletion of an Adapter whose radio is not
// present go ahead, and keeps its bonds: the bond Secrets lose their
// owner references first (so garbage collection does not take them with
// the Peripherals), then the Peripherals their unpair finalizer (there is
// no radio to unpair on, and they go with the Adapter), then the Adapter
// its own. bondfetch restores those Secrets when the radio comes back,
// and the operator then adopts the bonds again. A step that fails leaves
// the finalizer for the next pass.
func (p *pass) releaseAbsent(a *btv1.Adapter, why string) {
	if !slices.Contains(a.Finalizers, btv1.AdapterFinalizer) {
		return
	}
	sel := metav1.ListOptions{LabelSelector: bonds.AdapterLabel + "=" + a.Name}
	secrets, err := p.c.cfg.Kube.CoreV1().Secrets(p.c.cfg.Namespace).List(p.ctx, sel)
	if err != nil {
		p.fail("Adapter %s: listing its bond Secrets: %v", a.Name, err)
		return
	}
	for i := range secrets.Items {
		s := &secrets.Items[i]
		refs := slices.DeleteFunc(slices.Clone(s.OwnerReferences), func(r metav1.OwnerReference) bool {
			return r.APIVersion == btv1.GroupVersion.String() && r.Kind == "Peripheral"
		})
		if len(refs) == len(s.OwnerReferences) {
			continue
		}
		s.OwnerReferences = refs
		if _, err := p.c.cfg.Kube.CoreV1().Secrets(p.c.cfg.Namespace).Update(p.ctx, s, metav1.UpdateOptions{}); err != nil {
			p.fail("Adapter %s: keeping bond Secret %s: %v", a.Name, s.Name, err)
			return
		}
	}
	pers, err := p.c.cfg.Client.Resource(btv1.PeripheralsResource).List(p.ctx, metav1.ListOptions{LabelSelector: btv1.AdapterLabel + "=" + a.Name})
	if err != nil {
		p.fail("Adapter %s: listing its Peripherals: %v", a.Name, err)
		return
	}
	for _, u := range pers.Items {
		if !slices.Contains(u.GetFinalizers(), btv1.PeripheralFinalizer) {
			continue
		}
		fin := slices.DeleteFunc(slices.Clone(u.GetFinalizers()), func(f string) bool { return f == btv1.PeripheralFinalizer })
		if err := p.c.store.patchFinalizers(p.ctx, btv1.PeripheralsResource, "", u.GetName(), u.GetResourceVersion(), fin); err != nil {
			p.fail("Adapter %s: releasing Peripheral %s: %v", a.Name, u.GetName(), err)
			return
		}
	}
	fin := slices.DeleteFunc(slices.Clone(a.Finalizers), func(f string) bool { return f == btv1.AdapterFinalizer })
	if err := p.c.store.patchFinalizers(p.ctx, btv1.AdaptersResource, "", a.Name, a.ResourceVersion, fin); err != nil {
		p.fail("Adapter %s: releasing the finalizer: %v", a.Name, err)
		return
	}
	p.log.Info("Released the deletion of an Adapter whose radio is not present; its bond Secrets stay", "adapter", a.Name, "why", why, "secrets", len(secrets.Items))
	p.c.event(a, false, "Released", "Delete", "%s, so the deletion goes ahead; its %d bond Secrets stay, and bondfetch restores them if the radio comes back", why, len(secrets.Items))
}

func (p *pass) otherAdapterHasBonds(adapters []btv1.Adapter, key string) bool {
	for _, a := range adapters {
		if a.Name != key && a.Status.Bonds > 0 {
			return true
		}
	}
	return false
}

func (p *pass) setAdapter(r *bluez.Adapter, name string, value any) {
	if err := p.c.cfg.Radio.SetProperty(p.ctx, r.Path, bluez.AdapterInterface, name, value); err != nil {
		p.fail("setting %s of %s: %v", name, r.Address, err)
	}
}

// setCondition sets a condition, keeping its lastTransitionTime while its
// status stays.
func setCondition(conds *[]metav1.Condition, typ string, status bool, reason, msg string, gen int64) {
	s := metav1.ConditionFalse
	if status {
		s = metav1.ConditionTrue
	}
	if len(msg) > 32768 {
		msg = msg[:32768]
	}
	meta.SetStatusCondition(conds, metav1.Condition{Type: typ, Status: s, Reason: reason, Message: msg, ObservedGeneration: gen})
}

// bondsHeld is the BondsRestored message for n > 0 bonds.
func bondsHeld(n int) string {
	if n == 1 {
		return "BlueZ holds 1 bond for this radio"
	}
	return fmt.Sprintf("BlueZ holds %d bonds for this radio", n)
}
