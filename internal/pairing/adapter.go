package pairing

import (
	"fmt"
	"slices"

	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	btv1 "github.com/liken-sh/operators/api/bluetooth/v1alpha1"
	"github.com/liken-sh/operators/internal/bluez"
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
	if p.radio == nil {
		// The radio is not on the bus: nothing to create. An existing
		// object says so.
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
	switch {
	case bonds > 0:
		setCondition(&st.Conditions, btv1.ConditionBondsRestored, true, btv1.ReasonRestored,
			fmt.Sprintf("BlueZ holds %d bonds for this radio", bonds), cur.Generation)
	case p.otherAdapterHasBonds(adapters, key):
		setCondition(&st.Conditions, btv1.ConditionBondsRestored, false, btv1.ReasonNewAdapter,
			"this radio holds no bonds while another radio does: a new dongle? A link key belongs to one adapter address, so its devices must be paired again with a PairingRequest", cur.Generation)
	default:
		setCondition(&st.Conditions, btv1.ConditionBondsRestored, true, btv1.ReasonNoBonds,
			"nothing has been paired with this radio yet", cur.Generation)
	}
	if err := p.c.store.writeStatus(p.ctx, btv1.AdaptersResource, "Adapter", next, cur.Status, next.Status, ""); err != nil {
		p.statusFailed("Adapter "+key, err)
	}
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
