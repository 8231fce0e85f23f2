// SPDX-License-Identifier: Apache-2.0

//go:build linux && (amd64 || arm64)

package inputrelay

import (
	"errors"
	"fmt"
	"maps"
	"os"
	"slices"
	"sync"
	"syscall"

	"github.com/liken-sh/operators/internal/evdev"
	"github.com/liken-sh/operators/internal/uinput"
)

// Stats counts what a relay did since it was made.
type Stats struct {
	// Events is how many events were copied from the controller.
	Events uint64
	// Attachments is how many times a controller node was attached.
	Attachments uint64
	// Released is how many keys, axes and touches were reset at detaches.
	Released uint64
	// PlaysDropped is how many force-feedback plays, gain and LED changes
	// arrived while no controller was attached.
	PlaysDropped uint64
	// UploadsRefused is how many force-feedback uploads failed, ENODEV
	// while no controller was attached included.
	UploadsRefused uint64
}

// Relay is one virtual input device standing for one input device of a
// controller (a pad, its touchpad, its motion sensors are three). It is
// safe for concurrent use.
type Relay struct {
	dev *uinput.Device

	mu       sync.Mutex
	caps     evdev.Capabilities // with each axis's resting value as its value
	src      *os.File           // the controller's event node now, or nil
	gen      uint64             // counts attachments; an effect's gen says which node holds it
	copying  sync.WaitGroup     // the copy loop of the attached node
	keys     map[uint16]bool    // keys down on the virtual device
	abs      map[uint16]int32   // non-multi-touch axes' values on the virtual device
	slot     int32              // the multi-touch slot events go to
	touches  map[int32]bool     // slots with a contact
	needRest bool               // learn resting values at the next SYN_REPORT
	dropping bool               // after SYN_DROPPED until the next SYN_REPORT
	effects  map[int16]*effect  // by the consumer's effect id
	settings map[setting]int32  // last LED, sound, FF_GAIN and FF_AUTOCENTER values asked for
	stats    Stats
	closed   bool
	served   chan struct{} // closed when the request loop ends
}

// setting is an event type and code whose last value a new node of the
// controller is given.
type setting struct{ typ, code uint16 }

// effect is a consumer's force-feedback effect: its definition, and the
// id the controller's node gen gave it.
type effect struct {
	def  evdev.FFEffect
	real int16
	gen  uint64
}

// isMT reports whether code is a multi-touch axis (ABS_MT_SLOT and up),
// whose values are per slot.
func isMT(code uint16) bool { return code >= evdev.AbsMTSlot }

// New makes the virtual device through the uinput node at uinputPath
// (uinput.DefaultPath in production) from caps, whose axis values are
// taken as resting values until a connection shows the real ones. It
// starts serving the device's force-feedback and LED requests. Errors
// are Create's.
func New(uinputPath string, caps evdev.Capabilities) (*Relay, error) {
	dev, err := uinput.Create(uinputPath, caps)
	if err != nil {
		return nil, err
	}
	r := newRelay(dev, caps)
	go r.serve()
	return r, nil
}

// newRelay is a relay's state for dev, made from caps, with nothing
// attached and nothing running.
func newRelay(dev *uinput.Device, caps evdev.Capabilities) *Relay {
	r := &Relay{
		dev: dev, caps: caps,
		keys: map[uint16]bool{}, abs: map[uint16]int32{}, touches: map[int32]bool{},
		effects: map[int16]*effect{}, settings: map[setting]int32{},
		served: make(chan struct{}),
	}
	for _, a := range caps.Abs {
		if !isMT(a.Code) {
			r.abs[a.Code] = a.Value
		}
	}
	return r
}

// Device returns the virtual device.
func (r *Relay) Device() *uinput.Device { return r.dev }

// Capabilities returns the device's snapshot with each axis's resting
// value (learned from the latest connection's first frame) as its value:
// the form to keep with the controller's bond.
func (r *Relay) Capabilities() evdev.Capabilities {
	r.mu.Lock()
	defer r.mu.Unlock()
	c := r.caps
	c.Abs = slices.Clone(c.Abs)
	return c
}

// Stats returns the counters.
func (r *Relay) Stats() Stats {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.stats
}

// Source returns the path of the attached node, or "" when none is.
func (r *Relay) Source() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.src == nil {
		return ""
	}
	return r.src.Name()
}

// Attached reports whether a controller node is attached now.
func (r *Relay) Attached() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.src != nil
}

// Attach makes src, an event node of the controller opened with
// evdev.Open, the relay's source: its events are copied into the virtual
// device until a read fails (ENODEV when the controller goes), Detach, or
// Close. The relay owns src from here and closes it. A node already
// attached is detached first. LED, gain and autocenter values a consumer
// set earlier are sent to src. It fails when the relay is closed or src
// is not the same kind of device (evdev.SameDevice).
func (r *Relay) Attach(src *os.File) error {
	caps, err := evdev.ReadCapabilities(src)
	if err != nil {
		src.Close()
		return err
	}
	if !evdev.SameDevice(r.caps, caps) {
		src.Close()
		return fmt.Errorf("inputrelay: %s is %q %04x:%04x with other capabilities than %q", src.Name(), caps.Name, caps.ID.Vendor, caps.ID.Product, r.caps.Name)
	}
	r.Detach()
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		src.Close()
		return errors.New("inputrelay: relay is closed")
	}
	r.src, r.needRest, r.dropping = src, true, false
	r.gen++
	r.stats.Attachments++
	var replay []evdev.Event
	for _, k := range slices.SortedFunc(maps.Keys(r.settings), func(a, b setting) int {
		return int(a.typ)<<16 + int(a.code) - (int(b.typ)<<16 + int(b.code))
	}) {
		replay = append(replay, evdev.Event{Type: k.typ, Code: k.code, Value: r.settings[k]})
	}
	if len(replay) > 0 {
		r.sendLocked(append(replay, evdev.Event{Type: evdev.EvSyn, Code: evdev.SynReport}))
	}
	r.copying.Add(1)
	go r.copy(src, r.gen)
	return nil
}

// Detach lets go of the attached node, if any, releasing what it held
// down. It waits for the copy loop to end.
func (r *Relay) Detach() {
	r.mu.Lock()
	src := r.src
	if src != nil {
		r.releaseLocked()
		r.src = nil
	}
	r.mu.Unlock()
	if src != nil {
		src.Close()
	}
	r.copying.Wait()
}

// Close detaches, destroys the virtual device (its readers then read
// ENODEV) and waits for the relay's goroutines.
func (r *Relay) Close() error {
	r.Detach()
	r.mu.Lock()
	r.closed = true
	r.mu.Unlock()
	err := r.dev.Close()
	<-r.served
	return err
}

// copy reads src until it fails and copies its events in.
func (r *Relay) copy(src *os.File, gen uint64) {
	defer r.copying.Done()
	buf := make([]byte, 64*evdev.EventSize)
	var in, out []evdev.Event
	for {
		n, err := src.Read(buf)
		r.mu.Lock()
		if r.gen != gen || r.src != src {
			r.mu.Unlock()
			return
		}
		if err != nil {
			// ENODEV: the controller's device is gone. Anything else
			// (the node closed under us) ends this attachment too.
			r.releaseLocked()
			r.src = nil
			r.mu.Unlock()
			src.Close()
			return
		}
		in, _ = evdev.DecodeEvents(in[:0], buf[:n])
		out = out[:0]
		for _, e := range in {
			out = r.trackLocked(out, e)
		}
		if len(out) > 0 {
			r.writeLocked(out)
		}
		r.mu.Unlock()
	}
}

// trackLocked follows one event from the controller and appends what
// the virtual device is to get.
func (r *Relay) trackLocked(out []evdev.Event, e evdev.Event) []evdev.Event {
	if e.Type == evdev.EvSyn {
		switch {
		case e.Code == evdev.SynDropped:
			// The kernel's buffer for this reader overflowed; events up to
			// the next SYN_REPORT are incomplete (Documentation/input/
			// event-codes.rst). The state is read back at that report.
			r.dropping = true
			return out
		case e.Code == evdev.SynReport && r.dropping:
			r.dropping = false
			return r.resyncLocked(out)
		case e.Code == evdev.SynReport && r.needRest:
			r.needRest = false
			r.learnRestLocked()
		}
		return append(out, e)
	}
	if r.dropping {
		return out
	}
	r.stats.Events++
	switch e.Type {
	case evdev.EvKey:
		if e.Value != 0 {
			r.keys[e.Code] = true
		} else {
			delete(r.keys, e.Code)
		}
	case evdev.EvAbs:
		switch {
		case e.Code == evdev.AbsMTSlot:
			r.slot = e.Value
		case e.Code == evdev.AbsMTTrackingID:
			if e.Value >= 0 {
				r.touches[r.slot] = true
			} else {
				delete(r.touches, r.slot)
			}
		case !isMT(e.Code):
			r.abs[e.Code] = e.Value
		}
	}
	return append(out, e)
}

// learnRestLocked reads every axis of the attached node after the
// connection's first frame, when the controller has reported its whole
// state once and nobody is touching it yet: those are the resting values.
func (r *Relay) learnRestLocked() {
	for i, a := range r.caps.Abs {
		if isMT(a.Code) {
			continue
		}
		info, err := evdev.ReadAbs(r.src, a.Code)
		if err != nil {
			return
		}
		r.caps.Abs[i].Value = min(max(info.Value, a.Minimum), a.Maximum)
	}
}

// resyncLocked reads the attached node's keys and axes back after
// dropped events and appends what differs from the virtual device.
func (r *Relay) resyncLocked(out []evdev.Event) []evdev.Event {
	down, err := evdev.ReadKeys(r.src)
	if err == nil {
		now := map[uint16]bool{}
		for _, k := range down {
			now[k] = true
		}
		for _, k := range r.caps.Keys {
			if now[k] != r.keys[k] {
				out = r.trackLocked(out, evdev.Event{Type: evdev.EvKey, Code: k, Value: b2i(now[k])})
			}
		}
	}
	for _, a := range r.caps.Abs {
		if isMT(a.Code) {
			continue
		}
		if info, err := evdev.ReadAbs(r.src, a.Code); err == nil && info.Value != r.abs[a.Code] {
			out = r.trackLocked(out, evdev.Event{Type: evdev.EvAbs, Code: a.Code, Value: info.Value})
		}
	}
	return append(out, evdev.Event{Type: evdev.EvSyn, Code: evdev.SynReport})
}

func b2i(b bool) int32 {
	if b {
		return 1
	}
	return 0
}

// releaseLocked lifts every touch, releases every key and returns every
// axis to rest on the virtual device, in one frame.
func (r *Relay) releaseLocked() {
	var out []evdev.Event
	for _, s := range slices.Sorted(maps.Keys(r.touches)) {
		out = append(out,
			evdev.Event{Type: evdev.EvAbs, Code: evdev.AbsMTSlot, Value: s},
			evdev.Event{Type: evdev.EvAbs, Code: evdev.AbsMTTrackingID, Value: -1})
	}
	clear(r.touches)
	for _, k := range slices.Sorted(maps.Keys(r.keys)) {
		out = append(out, evdev.Event{Type: evdev.EvKey, Code: k, Value: 0})
	}
	clear(r.keys)
	for _, a := range r.caps.Abs {
		if !isMT(a.Code) && r.abs[a.Code] != a.Value {
			out = append(out, evdev.Event{Type: evdev.EvAbs, Code: a.Code, Value: a.Value})
			r.abs[a.Code] = a.Value
		}
	}
	r.dropping = false
	if len(out) == 0 {
		return
	}
	r.stats.Released += uint64(len(out))
	r.writeLocked(append(out, evdev.Event{Type: evdev.EvSyn, Code: evdev.SynReport}))
}

// writeLocked writes to the virtual device. A failed write means the
// device is being destroyed; there is nobody left to tell.
func (r *Relay) writeLocked(events []evdev.Event) {
	_ = r.dev.Write(events...)
}

// sendLocked writes events to the attached node (force feedback plays,
// gain, LEDs), or counts them dropped when none is attached.
func (r *Relay) sendLocked(events []evdev.Event) {
	if r.src == nil {
		r.stats.PlaysDropped++
		return
	}
	var b []byte
	for _, e := range events {
		b = evdev.AppendEvent(b, e)
	}
	if _, err := r.src.Write(b); err != nil {
		r.stats.PlaysDropped++
	}
}

// serve answers the virtual device's requests until Close.
func (r *Relay) serve() {
	defer close(r.served)
	buf := make([]byte, 16*evdev.EventSize)
	var events []evdev.Event
	for {
		var err error
		events, err = r.dev.Read(events[:0], buf)
		if err != nil {
			// os.ErrClosed after Close; uinput reports nothing else on a
			// device it made.
			return
		}
		for _, e := range events {
			r.request(e)
		}
	}
}

// request handles one event a reader of the virtual device sent.
func (r *Relay) request(e evdev.Event) {
	switch {
	case uinput.IsUpload(e):
		u, err := r.dev.BeginUpload(uint32(e.Value))
		if err != nil {
			return
		}
		_ = r.dev.EndUpload(u, r.upload(u))
	case uinput.IsErase(e):
		x, err := r.dev.BeginErase(uint32(e.Value))
		if err != nil {
			return
		}
		r.erase(x.EffectID)
		_ = r.dev.EndErase(x, 0)
	case e.Type == evdev.EvFF:
		r.play(e.Code, e.Value)
	case e.Type == evdev.EvLed || e.Type == evdev.EvSnd:
		r.mu.Lock()
		r.settings[setting{e.Type, e.Code}] = e.Value
		r.sendLocked([]evdev.Event{e, {Type: evdev.EvSyn, Code: evdev.SynReport}})
		r.mu.Unlock()
	}
}

// upload passes a consumer's effect to the attached node and returns the
// errno to answer with.
func (r *Relay) upload(u uinput.Upload) int32 {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.src == nil {
		r.stats.UploadsRefused++
		return int32(syscall.ENODEV)
	}
	if err := u.Effect.CheckPortable(); err != nil {
		r.stats.UploadsRefused++
		return int32(syscall.EINVAL)
	}
	id := u.Effect.ID()
	def := u.Effect
	if x := r.effects[id]; x != nil && x.gen == r.gen {
		def.SetID(x.real)
	} else {
		def.SetID(-1)
	}
	real, err := evdev.UploadEffect(r.src, def)
	if err != nil {
		r.stats.UploadsRefused++
		var errno syscall.Errno
		if errors.As(err, &errno) {
			return int32(errno)
		}
		return int32(syscall.EIO)
	}
	r.effects[id] = &effect{def: u.Effect, real: real, gen: r.gen}
	return 0
}

// erase forgets a consumer's effect and removes it from the attached
// node when that node holds it.
func (r *Relay) erase(id int16) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if x := r.effects[id]; x != nil && x.gen == r.gen && r.src != nil {
		_ = evdev.RemoveEffect(r.src, x.real)
	}
	delete(r.effects, id)
}

// play passes a play, stop, gain or autocenter request on. An effect
// uploaded to an earlier node of the controller is uploaded again first.
func (r *Relay) play(code uint16, value int32) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if code >= evdev.FFGain {
		r.settings[setting{evdev.EvFF, code}] = value
		r.sendLocked([]evdev.Event{{Type: evdev.EvFF, Code: code, Value: value}})
		return
	}
	x := r.effects[int16(code)]
	if x == nil {
		return
	}
	if r.src == nil {
		r.stats.PlaysDropped++
		return
	}
	if x.gen != r.gen {
		def := x.def
		def.SetID(-1)
		real, err := evdev.UploadEffect(r.src, def)
		if err != nil {
			r.stats.PlaysDropped++
			return
		}
		x.real, x.gen = real, r.gen
	}
	r.sendLocked([]evdev.Event{{Type: evdev.EvFF, Code: uint16(x.real), Value: value}})
}
