// SPDX-License-Identifier: Apache-2.0

package pairing

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	btv1 "github.com/liken-sh/operators/api/bluetooth/v1alpha1"
	"github.com/liken-sh/operators/internal/bdaddr"
	"github.com/liken-sh/operators/internal/bluez"
)

// syncRequests runs every PairingRequest's state machine, then opens or
// closes the radio's window: open while any of ours is Open, closed
// otherwise.
func (p *pass) syncRequests() {
	reqs, err := list[btv1.PairingRequest](p.c.store.requests)
	if err != nil {
		p.fail("reading PairingRequests: %v", err)
		return
	}
	adapters, _ := list[btv1.Adapter](p.c.store.adapters)
	slices.SortFunc(reqs, func(a, b btv1.PairingRequest) int {
		return cmp.Or(a.CreationTimestamp.Compare(b.CreationTimestamp.Time), cmp.Compare(a.Namespace+"/"+a.Name, b.Namespace+"/"+b.Name))
	})
	var open time.Time // the latest deadline of our open requests
	for i := range reqs {
		r := &reqs[i]
		if adapterName(r.Spec.Adapter) != p.c.cfg.Adapter.Key() {
			p.foreignRequest(r, adapters)
			continue
		}
		if r.DeletionTimestamp != nil {
			p.dropAttempt(key(r))
			continue
		}
		if closes := p.request(r); closes.After(open) {
			open = closes
		}
	}
	if p.radio == nil {
		return
	}
	if !open.IsZero() && p.radio.Powered {
		err := p.c.openWindow(p.ctx, p.radio, open, p.now)
		p.c.mu.Lock()
		p.c.windowErr = ""
		if err != nil {
			p.c.windowErr = err.Error()
		}
		p.c.mu.Unlock()
		if err != nil {
			p.fail("opening the pairing window on %s: %v", p.radio.Address, err)
		}
		p.after(open.Sub(p.now))
		return
	}
	if !open.IsZero() {
		// A radio that is off holds no window, but its requests still
		// expire when theirs closes.
		p.after(open.Sub(p.now))
	}
	if err := p.c.closeWindow(p.ctx, p.radio); err != nil {
		p.fail("closing the pairing window on %s: %v", p.radio.Address, err)
	}
}

func key(r *btv1.PairingRequest) string { return r.Namespace + "/" + r.Name }

// foreignRequest reports, on a request that no operator took, that its
// adapter does not exist or is absent. Every operator writes the same
// status, so their writes agree; the adapter's own operator, once there,
// takes the request over.
//
// A name no Adapter has fails the request (phase Failed, reason
// AdapterNotFound, and a Warning Event) once notFoundGrace has passed
// since its creation: operators keep an Adapter for every radio they have
// seen, absent ones included, so such a name is a mistake rather than a
// radio still to come, and the grace only covers an Adapter created just
// before the request that has not reached this operator's cache yet.
//
// An Adapter whose radio is on no node (AdapterAbsent) is waited for:
// a request no operator took before its window would have closed
// (creation plus windowSeconds) ends Expired with that reason, so a
// request naming a radio that never comes does not wait for ever. Either
// way it is deleted after its TTL like any finished request.
func (p *pass) foreignRequest(r *btv1.PairingRequest, adapters []btv1.Adapter) {
	if r.DeletionTimestamp != nil {
		return
	}
	var found *btv1.Adapter
	for i := range adapters {
		if adapters[i].Name == adapterName(r.Spec.Adapter) {
			found = &adapters[i]
		}
	}
	unserved := found == nil || !isTrue(found.Status.Conditions, btv1.ConditionPresent)
	if r.Status.Phase.Finished() {
		if unserved {
			p.expireForeign(r)
		}
		return
	}
	if r.Status.Phase != "" {
		return
	}
	next := r.DeepCopy()
	var reason, msg string
	switch {
	case found == nil:
		reason, msg = btv1.ReasonAdapterNotFound, fmt.Sprintf("no Adapter is named %s; the radios that operators report are: %s (kubectl get adapters)", truncate(r.Spec.Adapter, 64), reportedRadios(adapters))
	case unserved:
		reason, msg = btv1.ReasonAdapterAbsent, absentMessage(r.Spec.Adapter, found.Status.Node)
	default:
		return // its operator will take it
	}
	setCondition(&next.Status.Conditions, btv1.ConditionAccepted, false, reason, msg, r.Generation)
	window := time.Duration(cmp.Or(r.Spec.WindowSeconds, btv1.DefaultWindowSeconds)) * time.Second
	failed := false
	switch closes, failAt := r.CreationTimestamp.Add(window), r.CreationTimestamp.Add(notFoundGrace); {
	case found == nil && !p.now.Before(failAt):
		t := metav1.NewTime(p.now)
		next.Status.Phase, next.Status.FinishedAt = btv1.PhaseFailed, &t
		setCondition(&next.Status.Conditions, btv1.ConditionPaired, false, reason, msg, r.Generation)
		p.after(p.ttl(r) + time.Second)
		failed = true
	case found == nil:
		p.after(failAt.Sub(p.now))
	case p.now.Before(closes):
		p.after(closes.Sub(p.now))
	default:
		// The same time from every operator, so their writes agree.
		t := metav1.NewTime(closes)
		next.Status.Phase, next.Status.FinishedAt = btv1.PhaseExpired, &t
		msg += "; the request expired when its window would have closed"
		setCondition(&next.Status.Conditions, btv1.ConditionPaired, false, reason, msg, r.Generation)
		p.after(p.ttl(r) + time.Second)
	}
	if err := p.c.store.writeStatus(p.ctx, btv1.PairingRequestsResource, "PairingRequest", next, r.Status, next.Status, r.Namespace); err != nil {
		p.statusFailed("PairingRequest "+key(r), err)
		return
	}
	if failed {
		// The update carried the request's resourceVersion, so of the
		// operators that all saw it unanswered only one wrote Failed, and
		// only that one records the Event.
		p.c.event(r, true, btv1.ReasonAdapterNotFound, "Accept", "%s", msg)
	}
}

// absentMessage is the condition message of a request whose Adapter's
// radio is on no node: node is the Adapter's status.node, the node it was
// last seen on, or "" for an Adapter no operator has reported (one a
// person created).
func absentMessage(adapter, node string) string {
	seen := "never seen on any node"
	if node != "" {
		seen = "last seen on " + node
	}
	return fmt.Sprintf("the radio %s is on no node now (%s); the request waits for it", truncate(adapter, 64), seen)
}

// notFoundGrace is how long after its creation a request naming no
// Adapter waits before it fails: long enough for an Adapter created just
// before it to reach every operator's informer.
const notFoundGrace = 10 * time.Second

// expireForeign deletes a request that ended unserved once its TTL has
// passed; any operator may, and a request already gone is no error.
func (p *pass) expireForeign(r *btv1.PairingRequest) {
	if r.Status.FinishedAt == nil {
		return
	}
	if left := r.Status.FinishedAt.Add(p.ttl(r)).Sub(p.now); left > 0 {
		p.after(left)
		return
	}
	if err := p.c.store.deleteRequest(p.ctx, r); err != nil {
		p.fail("deleting PairingRequest %s after its TTL: %v", key(r), err)
	}
}

// ttl is how long a finished request is kept.
func (p *pass) ttl(r *btv1.PairingRequest) time.Duration {
	if r.Spec.TTLSecondsAfterFinished != nil {
		return time.Duration(*r.Spec.TTLSecondsAfterFinished) * time.Second
	}
	return time.Duration(btv1.DefaultTTLSecondsAfterFinished) * time.Second
}

func isTrue(conds []metav1.Condition, typ string) bool {
	for _, c := range conds {
		if c.Type == typ {
			return c.Status == metav1.ConditionTrue
		}
	}
	return false
}

// request runs one request's state machine and writes its status. It
// returns the window's deadline while the request holds the window open,
// else the zero time.
func (p *pass) request(r *btv1.PairingRequest) (closes time.Time) {
	next := r.DeepCopy()
	st := &next.Status
	gen := r.Generation
	st.ObservedGeneration = gen
	defer func() {
		if err := p.c.store.writeStatus(p.ctx, btv1.PairingRequestsResource, "PairingRequest", next, r.Status, next.Status, r.Namespace); err != nil {
			p.statusFailed("PairingRequest "+key(r), err)
		}
	}()

	if st.Phase.Finished() {
		p.dropAttempt(key(r))
		if st.FinishedAt == nil {
			t := metav1.NewTime(p.now)
			st.FinishedAt = &t
		}
		ttl := time.Duration(btv1.DefaultTTLSecondsAfterFinished) * time.Second
		if r.Spec.TTLSecondsAfterFinished != nil {
			ttl = time.Duration(*r.Spec.TTLSecondsAfterFinished) * time.Second
		}
		if left := st.FinishedAt.Add(ttl).Sub(p.now); left > 0 {
			p.after(left)
			return time.Time{}
		}
		if err := p.c.store.deleteRequest(p.ctx, r); err != nil {
			p.fail("deleting PairingRequest %s after its TTL: %v", key(r), err)
		} else {
			p.log.Info("Deleted a finished PairingRequest after its TTL", "request", key(r), "phase", st.Phase)
		}
		next = r // nothing to write
		return time.Time{}
	}

	window := time.Duration(cmp.Or(r.Spec.WindowSeconds, btv1.DefaultWindowSeconds)) * time.Second
	if err := ValidateSpec(r.Spec); err != nil {
		// The schema refuses such a spec; a CRD served without it does
		// not.
		p.finish(r, next, btv1.PhaseFailed, btv1.ConditionAccepted, btv1.ReasonInvalidSpec, err.Error())
		return time.Time{}
	}
	if st.Phase == "" || st.WindowClosesAt == nil {
		st.Phase = btv1.PhaseOpen
		t := metav1.NewTime(p.now.Add(window))
		st.WindowClosesAt = &t
		if p.radio != nil && !p.radio.Powered {
			p.c.event(r, true, btv1.ReasonPoweredOff, "Open", "the radio %s on node %s is powered off; the window opens when it is powered on, until %s", p.c.cfg.Adapter, p.c.cfg.Node, t.UTC().Format(time.RFC3339))
		} else {
			p.c.event(r, false, "WindowOpened", "Open", "the radio %s on node %s is discoverable until %s", p.c.cfg.Adapter, p.c.cfg.Node, t.UTC().Format(time.RFC3339))
		}
	}
	setCondition(&st.Conditions, btv1.ConditionAccepted, true, btv1.ReasonAccepted,
		fmt.Sprintf("the operator of %s on node %s holds the window", p.c.cfg.Adapter, p.c.cfg.Node), gen)
	if p.radio == nil {
		setCondition(&st.Conditions, btv1.ConditionWindowOpen, false, btv1.ReasonRadioRefused, "bluetoothd does not report the radio", gen)
	}

	a := p.currentAttempt(key(r))
	deadline := st.WindowClosesAt.Time
	if !p.now.Before(deadline) && a == nil {
		p.finish(r, next, btv1.PhaseExpired, btv1.ConditionPaired, btv1.ReasonExpired,
			"the window closed before a device was approved and paired")
		setCondition(&st.Conditions, btv1.ConditionWindowOpen, false, btv1.ReasonClosed, "the window has closed", gen)
		return time.Time{}
	}
	switch {
	case p.radio != nil && !p.radio.Powered:
		// pass opens no window on a radio that is off.
		setCondition(&st.Conditions, btv1.ConditionWindowOpen, false, btv1.ReasonPoweredOff,
			fmt.Sprintf("the radio %s is powered off, so no device can find it; set spec.powered of Adapter %s to true and the window opens until %s",
				p.c.cfg.Adapter, p.c.cfg.Adapter.Key(), deadline.UTC().Format(time.RFC3339)), gen)
	case p.radio != nil:
		setCondition(&st.Conditions, btv1.ConditionWindowOpen, true, btv1.ReasonOpen,
			fmt.Sprintf("discoverable, pairable and scanning until %s", deadline.UTC().Format(time.RFC3339)), gen)
		p.c.mu.Lock()
		refused := p.c.windowErr
		p.c.mu.Unlock()
		if refused != "" {
			setCondition(&st.Conditions, btv1.ConditionWindowOpen, false, btv1.ReasonRadioRefused, "the radio refused the window: "+refused, gen)
		}
	}
	p.mergeSeen(st)
	p.approval(r, next, a)
	if next.Status.Phase.Finished() {
		return time.Time{}
	}
	if a != nil && deadline.Before(p.now.Add(time.Second)) {
		// A pairing started in the window may finish after it.
		return p.now.Add(time.Second)
	}
	return deadline
}

// finish ends the request in phase with a condition.
func (p *pass) finish(r, next *btv1.PairingRequest, phase btv1.Phase, cond, reason, msg string) {
	st := &next.Status
	st.Phase = phase
	t := metav1.NewTime(p.now)
	st.FinishedAt = &t
	st.Passkey = nil
	setCondition(&st.Conditions, cond, phase == btv1.PhasePaired, reason, msg, r.Generation)
	if cond != btv1.ConditionPaired {
		setCondition(&st.Conditions, btv1.ConditionPaired, false, reason, msg, r.Generation)
	}
	p.c.metrics.outcomes.WithLabelValues(string(phase)).Inc()
	p.c.event(r, phase != btv1.PhasePaired, string(phase), "Pair", "%s", msg)
	p.log.Info("PairingRequest finished", "request", key(r), "phase", phase, "reason", reason, "message", msg)
	ttl := int32(btv1.DefaultTTLSecondsAfterFinished)
	if r.Spec.TTLSecondsAfterFinished != nil {
		ttl = *r.Spec.TTLSecondsAfterFinished
	}
	p.after(time.Duration(ttl)*time.Second + time.Second)
}

// mergeSeen adds the unpaired devices of the snapshot to status.seen:
// entries keep their order and firstSeen and take the latest name, class
// and RSSI; new ones are appended, nearest first, until MaxSeen.
func (p *pass) mergeSeen(st *btv1.PairingRequestStatus) {
	var fresh []bluez.Device
	for _, d := range p.in.Objects.Devices {
		if d.Paired || d.Bonded {
			continue
		}
		i := slices.IndexFunc(st.Seen, func(s btv1.SeenDevice) bool { return strings.EqualFold(s.Address, d.Address) })
		if i >= 0 {
			fill(&st.Seen[i], d)
			continue
		}
		fresh = append(fresh, d)
	}
	slices.SortStableFunc(fresh, func(a, b bluez.Device) int { return cmp.Compare(b.RSSI, a.RSSI) })
	for _, d := range fresh {
		if len(st.Seen) >= btv1.MaxSeen {
			break
		}
		s := btv1.SeenDevice{Address: d.Address, FirstSeen: metav1.NewTime(p.now)}
		fill(&s, d)
		st.Seen = append(st.Seen, s)
	}
}

func fill(s *btv1.SeenDevice, d bluez.Device) {
	s.Name = truncate(cmp.Or(d.Alias, d.Name), btv1.MaxNameBytes)
	if d.Alias == strings.ReplaceAll(d.Address, ":", "-") && d.Name == "" {
		s.Name = "" // BlueZ's alias of a nameless device is its address
	}
	s.Class, s.Icon = int32(d.Class&0xffffff), d.Icon
	if d.HasRSSI {
		s.RSSI = new(int32(d.RSSI))
	}
}

// approval pairs the device in spec.device once it answers the scan.
func (p *pass) approval(r, next *btv1.PairingRequest, a *attempt) {
	st := &next.Status
	gen := r.Generation
	if r.Spec.Device == "" {
		setCondition(&st.Conditions, btv1.ConditionPaired, false, btv1.ReasonAwaitingApproval,
			"waiting for spec.device: set it to the address of one of status.seen", gen)
		return
	}
	want, err := bdaddr.Parse(r.Spec.Device)
	if err != nil {
		setCondition(&st.Conditions, btv1.ConditionPaired, false, btv1.ReasonInvalidSpec,
			fmt.Sprintf("spec.device %q is not a Bluetooth address", r.Spec.Device), gen)
		return
	}
	if a != nil && !strings.EqualFold(a.address, want.String()) {
		// The approval moved to another device: give up the old one.
		p.dropAttempt(key(r))
		_ = p.c.cfg.Radio.CancelPairing(p.ctx, a.device)
		a = nil
	}
	var dev *bluez.Device
	for i := range p.in.Objects.Devices {
		if d := p.in.Objects.Devices[i]; strings.EqualFold(d.Address, want.String()) {
			dev = &d
		}
	}
	if a == nil {
		switch {
		case dev == nil:
			setCondition(&st.Conditions, btv1.ConditionPaired, false, btv1.ReasonAwaitingDevice,
				fmt.Sprintf("waiting for %s to answer the scan: put it in pairing mode", want), gen)
			return
		case dev.Paired || dev.Bonded:
			// Paired already (by an earlier request, or by hand): trust it
			// and finish with its Peripheral.
			p.paired(r, next, *dev, want, btv1.ReasonAlreadyPaired)
			return
		}
		p.startAttempt(key(r), *dev)
		setCondition(&st.Conditions, btv1.ConditionPaired, false, btv1.ReasonPairing, fmt.Sprintf("pairing with %s", want), gen)
		p.after(time.Second)
		return
	}
	p.c.mu.Lock()
	done, perr, prompt, waiting, refusal := a.done, a.err, a.prompt, a.waiting, a.refusal
	p.c.mu.Unlock()
	st.Passkey = prompt
	if !done {
		msg, reason := fmt.Sprintf("pairing with %s", want), btv1.ReasonPairing
		switch waiting {
		case btv1.ReasonAwaitingPasskey:
			reason, msg = waiting, fmt.Sprintf("type %s on the device, then Enter", prompt.Value)
		case btv1.ReasonAwaitingConfirmation:
			reason, msg = waiting, fmt.Sprintf("does the device show %s? Set spec.passkeyConfirmed to true or false", prompt.Value)
		case btv1.ReasonAwaitingPIN:
			reason, msg = waiting, "the device asks for a PIN code: set spec.pin (a device that shows a number takes those digits)"
		}
		setCondition(&st.Conditions, btv1.ConditionPaired, false, reason, msg, gen)
		p.after(time.Second)
		return
	}
	p.dropAttempt(key(r))
	if perr != nil {
		msg := fmt.Sprintf("pairing with %s failed: %v", want, perr)
		if name := bluez.ErrorName(perr); name != "" {
			msg = fmt.Sprintf("pairing with %s failed: BlueZ answered %s", want, name)
		}
		if refusal != "" {
			msg += "; the agent refused: " + refusal
		}
		p.finish(r, next, btv1.PhaseFailed, btv1.ConditionPaired, btv1.ReasonPairingFailed, msg)
		return
	}
	if dev == nil {
		dev = &bluez.Device{Address: want.String()}
	}
	p.paired(r, next, *dev, want, btv1.ReasonPaired)
}

// paired trusts the device, makes its Peripheral and finishes the
// request Paired.
func (p *pass) paired(r, next *btv1.PairingRequest, d bluez.Device, addr bdaddr.Address, reason string) {
	if d.Path != "" && !d.Trusted {
		p.setDevice(&d, "Trusted", true)
	}
	have := p.peripherals()
	per := have[addr.Key()]
	if per == nil {
		if p.adapter == nil {
			p.fail("PairingRequest %s: no Adapter object yet for its Peripheral", key(r))
			p.after(time.Second)
			return
		}
		var err error
		if per, err = p.createPeripheral(addr, d, true, key(r)); err != nil {
			p.fail("PairingRequest %s: creating the Peripheral: %v", key(r), err)
			p.after(time.Second)
			return
		}
	}
	next.Status.Peripheral = per.Name
	p.finish(r, next, btv1.PhasePaired, btv1.ConditionPaired, reason,
		fmt.Sprintf("paired with %s (%s) and trusted it: Peripheral %s", addr, truncate(d.DisplayName(), 64), per.Name))
}

// currentAttempt returns the request's attempt, if one exists.
func (p *pass) currentAttempt(k string) *attempt {
	p.c.mu.Lock()
	defer p.c.mu.Unlock()
	return p.c.attempts[k]
}

// startAttempt runs Device1.Pair for the request in the background; the
// pass that sees it done reads the result.
func (p *pass) startAttempt(k string, d bluez.Device) {
	a := &attempt{key: k, device: d.Path, address: d.Address, spec: make(chan struct{}, 1)}
	p.c.mu.Lock()
	p.c.attempts[k] = a
	p.c.mu.Unlock()
	// The agent must be registered before Pair asks it; the window
	// itself opens at the end of the pass.
	if err := p.c.cfg.Radio.RegisterAgent(p.ctx, p.c); err != nil {
		p.fail("registering the pairing agent: %v", err)
	}
	go func() {
		ctx, cancel := context.WithTimeout(context.WithoutCancel(p.ctx), bluez.PairTimeout)
		defer cancel()
		err := p.c.cfg.Radio.Pair(ctx, d.Path)
		p.c.mu.Lock()
		a.done, a.err = true, err
		p.c.mu.Unlock()
		p.c.poke()
	}()
}

func (p *pass) dropAttempt(k string) {
	p.c.mu.Lock()
	defer p.c.mu.Unlock()
	delete(p.c.attempts, k)
}
