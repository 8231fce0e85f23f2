// SPDX-License-Identifier: Apache-2.0

package alsa

import (
	"encoding/binary"
	"fmt"
	"os"
	"slices"
	"sync"

	"golang.org/x/sys/unix"
)

// Recorded is a card served from a [Dump]: the recorded backend of the
// control interface, for tests and the demo. It answers as the kernel
// does, through the same structure layouts and decoders as [HWControl], and
// it changes the way hardware changes: [Recorded.Update] (a jack flips, a
// monitor's ELD arrives or goes) and [Recorded.Replace] (a new recording)
// notify every subscribed handle with the events the kernel would send.
//
// A Recorded is safe for concurrent use; each [Recorded.Open] is one handle.
type Recorded struct {
	mu      sync.Mutex
	card    *recCard
	handles map[*RecordedControl]struct{}
}

// NewRecorded serves d. The dump is validated first (Dump.Validate).
func NewRecorded(d *Dump) (*Recorded, error) {
	c, err := d.build()
	if err != nil {
		return nil, err
	}
	return &Recorded{card: c, handles: map[*RecordedControl]struct{}{}}, nil
}

// Card is the card number served.
func (r *Recorded) Card() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.card.info.Card
}

// Snapshot returns the card's current state as a dump.
func (r *Recorded) Snapshot() *Dump {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.card.dump()
}

// Open returns a new handle, as opening the control node does.
func (r *Recorded) Open() *RecordedControl {
	h := &RecordedControl{r: r, wake: make(chan struct{}, 1), done: make(chan struct{})}
	r.mu.Lock()
	r.handles[h] = struct{}{}
	r.mu.Unlock()
	return h
}

// Update changes an element from the hardware's side: v replaces its value
// whatever the access bits say, and for a BYTES element (an ELD) the
// element's count becomes len(v.Bytes). Subscribers get a VALUE event if
// the value changed, with INFO too if the count did, as the HDA driver
// sends for an ELD. An unknown element wraps unix.ENOENT; a value that
// does not fit the element is an error naming it.
func (r *Recorded) Update(id ElemID, v Value) error {
	return r.update(id, v, true)
}

// UpdateQuietly is Update with no event: a driver that changes an element
// without snd_ctl_notify, as an HDA codec can refresh its cached ELD (an
// ELD read late after a hot plug, or again after the GPU's runtime
// resume) with no notification reaching user space.
func (r *Recorded) UpdateQuietly(id ElemID, v Value) error {
	return r.update(id, v, false)
}

func (r *Recorded) update(id ElemID, v Value, notify bool) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	e, err := r.card.find(id)
	if err != nil {
		return err
	}
	count := e.info.Count
	if e.info.Type == TypeBytes {
		count = len(v.Bytes)
	}
	var raw [1024]byte
	if err := encodeValue(v, e.info.Type, count, &raw); err != nil {
		return fmt.Errorf("update %s: %w", e.info.ID, err)
	}
	if err := e.checkRange(v); err != nil {
		return fmt.Errorf("update %s: %w", e.info.ID, err)
	}
	var mask EventMask
	if count != e.info.Count {
		mask |= EventInfo
		e.info.Count = count
	}
	if !equalValue(e.value, v) {
		mask |= EventValue
		e.value = cloneValue(v)
	}
	if mask != 0 && notify {
		r.notifyLocked(Event{Type: EventElem, Mask: mask, ID: e.info.ID})
	}
	return nil
}

// SetELD sets the ELD element of PCM device to block (nil or empty: the
// monitor left), with Update's events. A device with no ELD element wraps
// unix.ENOENT.
func (r *Recorded) SetELD(device int, block []byte) error {
	return r.Update(ELDElemID(device), Value{Type: TypeBytes, Bytes: slices.Clone(block)})
}

// Replace swaps in a new recording of the same card and notifies the
// differences element by element: ADD for a new element, REMOVE for a
// gone one, VALUE, INFO and TLV for what changed. Card and PCM information
// change silently, as the kernel has no event for them. A dump of another
// card number, or one that does not validate, changes nothing.
func (r *Recorded) Replace(d *Dump) error {
	c, err := d.build()
	if err != nil {
		return err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if c.info.Card != r.card.info.Card {
		return fmt.Errorf("replace card %d with a dump of card %d", r.card.info.Card, c.info.Card)
	}
	old := map[uint32]*recElem{}
	for _, e := range r.card.elems {
		old[e.info.ID.NumID] = e
	}
	var events []Event
	for _, e := range c.elems {
		o, ok := old[e.info.ID.NumID]
		delete(old, e.info.ID.NumID)
		var mask EventMask
		switch {
		case !ok:
			mask = EventAdd
		case !o.info.ID.sameElement(e.info.ID):
			// Same numid, another element: the old one went away.
			events = append(events, Event{Type: EventElem, Mask: EventRemove, ID: o.info.ID})
			mask = EventAdd
		default:
			if !equalValue(o.value, e.value) {
				mask |= EventValue
			}
			if !equalInfo(o.info, e.info) {
				mask |= EventInfo
			}
			if !slices.Equal(o.tlv, e.tlv) {
				mask |= EventTLV
			}
		}
		if mask != 0 {
			events = append(events, Event{Type: EventElem, Mask: mask, ID: e.info.ID})
		}
	}
	for _, o := range r.card.elems {
		if _, gone := old[o.info.ID.NumID]; gone {
			events = append(events, Event{Type: EventElem, Mask: EventRemove, ID: o.info.ID})
		}
	}
	r.card = c
	for _, e := range events {
		r.notifyLocked(e)
	}
	return nil
}

// notifyLocked queues e on every subscribed handle. Like the kernel, a
// pending event of the same element absorbs the new mask.
func (r *Recorded) notifyLocked(e Event) {
	for h := range r.handles {
		if !h.subscribed {
			continue
		}
		merged := false
		for i := range h.pending {
			if h.pending[i].ID.NumID == e.ID.NumID {
				h.pending[i].Mask |= e.Mask
				merged = true
				break
			}
		}
		if !merged {
			h.pending = append(h.pending, e)
		}
		select {
		case h.wake <- struct{}{}:
		default:
		}
	}
}

func (c *recCard) find(id ElemID) (*recElem, error) {
	for _, e := range c.elems {
		if id.NumID != 0 && e.info.ID.NumID == id.NumID || id.NumID == 0 && e.info.ID.sameElement(id) {
			return e, nil
		}
	}
	return nil, fmt.Errorf("card %d: no element %s: %w", c.info.Card, id, unix.ENOENT)
}

// checkRange refuses values a driver's put callback would refuse.
func (e *recElem) checkRange(v Value) error {
	switch e.info.Type {
	case TypeInteger, TypeInteger64:
		for _, x := range v.Ints {
			if x < e.info.Min || x > e.info.Max {
				return fmt.Errorf("value %d outside %d..%d: %w", x, e.info.Min, e.info.Max, unix.EINVAL)
			}
		}
	case TypeEnumerated:
		for _, x := range v.Ints {
			if x >= int64(len(e.info.Items)) {
				return fmt.Errorf("item %d of %d: %w", x, len(e.info.Items), unix.EINVAL)
			}
		}
	}
	return nil
}

func equalValue(a, b Value) bool {
	return a.Type == b.Type && slices.Equal(a.Ints, b.Ints) && slices.Equal(a.Bytes, b.Bytes)
}

func cloneValue(v Value) Value {
	return Value{Type: v.Type, Ints: slices.Clone(v.Ints), Bytes: slices.Clone(v.Bytes)}
}

func equalInfo(a, b ElemInfo) bool {
	return a.Type == b.Type && a.Access == b.Access && a.Count == b.Count && a.Min == b.Min &&
		a.Max == b.Max && a.Step == b.Step && slices.Equal(a.Items, b.Items)
}

// RecordedControl is one handle on a [Recorded] card; it implements
// [Control].
type RecordedControl struct {
	r          *Recorded
	wake       chan struct{}
	done       chan struct{}
	subscribed bool    // guarded by r.mu
	closed     bool    // guarded by r.mu
	pending    []Event // guarded by r.mu
}

// lock takes the card's lock for one call; a closed handle fails as a
// closed file does.
func (h *RecordedControl) lock() (*recCard, error) {
	h.r.mu.Lock()
	if h.closed {
		h.r.mu.Unlock()
		return nil, fmt.Errorf("recorded control: %w", os.ErrClosed)
	}
	return h.r.card, nil
}

func (h *RecordedControl) unlock() { h.r.mu.Unlock() }

// CardInfo implements Control.
func (h *RecordedControl) CardInfo() (CardInfo, error) {
	c, err := h.lock()
	if err != nil {
		return CardInfo{}, err
	}
	defer h.unlock()
	raw := encodeCardInfo(c.info)
	return decodeCardInfo(&raw), nil
}

// Elements implements Control, in numid order.
func (h *RecordedControl) Elements() ([]ElemID, error) {
	c, err := h.lock()
	if err != nil {
		return nil, err
	}
	defer h.unlock()
	out := make([]ElemID, 0, len(c.elems))
	for _, e := range c.elems {
		raw := fromID(e.info.ID)
		out = append(out, raw.toID())
	}
	return out, nil
}

// ElemInfo implements Control.
func (h *RecordedControl) ElemInfo(id ElemID) (ElemInfo, error) {
	c, err := h.lock()
	if err != nil {
		return ElemInfo{}, err
	}
	defer h.unlock()
	e, err := c.find(id)
	if err != nil {
		return ElemInfo{}, err
	}
	raw := encodeElemInfo(e.info, 0)
	info := decodeElemInfo(&raw)
	if info.Type == TypeEnumerated {
		for i := range enumItems(&raw) {
			q := encodeElemInfo(e.info, i)
			info.Items = append(info.Items, enumItemName(&q))
		}
	}
	return info, nil
}

// Read implements Control; an element without the read access bit fails
// with unix.EPERM.
func (h *RecordedControl) Read(id ElemID) (Value, error) {
	c, err := h.lock()
	if err != nil {
		return Value{}, err
	}
	defer h.unlock()
	e, err := c.find(id)
	if err != nil {
		return Value{}, err
	}
	if e.info.Access&AccessRead == 0 {
		return Value{}, fmt.Errorf("card %d: read %s: %w", c.info.Card, e.info.ID, unix.EPERM)
	}
	var raw [1024]byte
	if err := encodeValue(e.value, e.info.Type, e.info.Count, &raw); err != nil {
		return Value{}, fmt.Errorf("card %d: read %s: %w", c.info.Card, e.info.ID, err)
	}
	return decodeValue(e.info.Type, e.info.Count, &raw)
}

// Write implements Control; an element without the write access bit fails
// with unix.EPERM, a value out of range with unix.EINVAL. A change
// notifies every subscribed handle, this one included, as the kernel does.
func (h *RecordedControl) Write(id ElemID, v Value) error {
	c, err := h.lock()
	if err != nil {
		return err
	}
	defer h.unlock()
	e, err := c.find(id)
	if err != nil {
		return err
	}
	if e.info.Access&AccessWrite == 0 {
		return fmt.Errorf("card %d: write %s: %w", c.info.Card, e.info.ID, unix.EPERM)
	}
	var raw [1024]byte
	if err := encodeValue(v, e.info.Type, e.info.Count, &raw); err != nil {
		return fmt.Errorf("card %d: write %s: %w", c.info.Card, e.info.ID, err)
	}
	nv, err := decodeValue(e.info.Type, e.info.Count, &raw)
	if err != nil {
		return err
	}
	if err := e.checkRange(nv); err != nil {
		return fmt.Errorf("card %d: write %s: %w", c.info.Card, e.info.ID, err)
	}
	if !equalValue(e.value, nv) {
		e.value = nv
		h.r.notifyLocked(Event{Type: EventElem, Mask: EventValue, ID: e.info.ID})
	}
	return nil
}

// TLV implements Control; an element without TLV data fails with
// unix.ENXIO, as the kernel answers.
func (h *RecordedControl) TLV(id ElemID) ([]uint32, error) {
	c, err := h.lock()
	if err != nil {
		return nil, err
	}
	defer h.unlock()
	e, err := c.find(id)
	if err != nil {
		return nil, err
	}
	if e.info.Access&AccessTLVRead == 0 || len(e.tlv) == 0 {
		return nil, fmt.Errorf("card %d: TLV %s: %w", c.info.Card, e.info.ID, unix.ENXIO)
	}
	buf := make([]byte, 4*len(e.tlv))
	for i, w := range e.tlv {
		binary.NativeEndian.PutUint32(buf[4*i:], w)
	}
	return tlvWords(buf)
}

// NextPCMDevice implements Control.
func (h *RecordedControl) NextPCMDevice(after int) (int, error) {
	c, err := h.lock()
	if err != nil {
		return -1, err
	}
	defer h.unlock()
	for _, p := range c.pcms {
		if p.Device > after {
			return p.Device, nil
		}
	}
	return -1, nil
}

// PCMInfo implements Control: unix.ENXIO for a device or subdevice that
// does not exist, unix.ENOENT for a device with no stream that way.
func (h *RecordedControl) PCMInfo(device, subdevice int, stream Stream) (PCMInfo, error) {
	c, err := h.lock()
	if err != nil {
		return PCMInfo{}, err
	}
	defer h.unlock()
	found := false
	for _, p := range c.pcms {
		if p.Device != device {
			continue
		}
		found = true
		if p.Stream != stream {
			continue
		}
		if subdevice < 0 || subdevice >= p.Subdevices {
			return PCMInfo{}, fmt.Errorf("card %d: PCM %d %s subdevice %d: %w", c.info.Card, device, stream, subdevice, unix.ENXIO)
		}
		p.Subdevice = subdevice
		if p.Subname == "" {
			p.Subname = fmt.Sprintf("subdevice #%d", subdevice)
		}
		raw := encodePCMInfo(p)
		return decodePCMInfo(&raw), nil
	}
	errno := unix.ENXIO
	if found {
		errno = unix.ENOENT
	}
	return PCMInfo{}, fmt.Errorf("card %d: PCM %d %s: %w", c.info.Card, device, stream, errno)
}

// Subscribe implements Control.
func (h *RecordedControl) Subscribe() error {
	if _, err := h.lock(); err != nil {
		return err
	}
	defer h.unlock()
	h.subscribed = true
	return nil
}

// ReadEvents implements Control. Without a subscription it fails with
// unix.EBADFD, as the kernel's read does.
func (h *RecordedControl) ReadEvents() ([]Event, error) {
	for {
		if _, err := h.lock(); err != nil {
			return nil, err
		}
		if !h.subscribed {
			h.unlock()
			return nil, fmt.Errorf("recorded control: read events: %w", unix.EBADFD)
		}
		if len(h.pending) > 0 {
			// Through the wire format, as a read() delivers them.
			var buf []byte
			for _, e := range h.pending {
				buf = appendEvent(buf, e)
			}
			h.pending = nil
			h.unlock()
			return ParseEvents(buf)
		}
		h.unlock()
		select {
		case <-h.wake:
		case <-h.done:
		}
	}
}

// Close implements Control.
func (h *RecordedControl) Close() error {
	h.r.mu.Lock()
	defer h.r.mu.Unlock()
	if h.closed {
		return fmt.Errorf("recorded control: %w", os.ErrClosed)
	}
	h.closed = true
	delete(h.r.handles, h)
	close(h.done)
	return nil
}
