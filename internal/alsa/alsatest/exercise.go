// SPDX-License-Identifier: Apache-2.0

package alsatest

import (
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/liken-sh/operators/internal/alsa"
	"github.com/liken-sh/operators/internal/alsa/eld"
)

// The real-kernel checks. This machine has no sound card, so the ioctls
// of HWControl run only in the VM tier (hack/vm-test.sh), which boots a kernel with
// snd-dummy, snd-aloop and snd-hda-intel and calls ExerciseDevSnd from a
// test of its own. Everything here goes through the Control interface, so
// the package's tests run the same checks against recorded cards.

// ExerciseReport is what Exercise saw on one card.
type ExerciseReport struct {
	Card alsa.CardInfo
	// Elements is the element count; Read and TLVs how many were read
	// and how many TLVs.
	Elements, Read, TLVs int
	// PCMs are the PCM substreams' infos.
	PCMs []alsa.PCMInfo
	// ELDs counts the ELD elements read (valid or empty).
	ELDs int
	// Wrote is the element written to provoke an event, Event the event
	// the second handle read for it.
	Wrote alsa.ElemID
	Event alsa.Event
	// Log has one line per step, for the test's output.
	Log []string
}

// EventTimeout bounds the wait for the event a write causes.
var EventTimeout = 30 * time.Second

// Exercise runs every call of the control interface on one card through
// two handles from open (OpenControl for a real node) and checks the
// answers hang together: CARD_INFO names the card; ELEM_LIST lists
// elements that ELEM_INFO finds both by numid and by name; every readable
// element reads its count of values; every TLV-readable element's TLV is
// well formed; PCM_NEXT_DEVICE walks devices in order and PCM_INFO
// describes each; every ELD element reads and parses (or is empty); and a
// write through the first handle of a changed value to a writable element
// is read back as a VALUE event by the second, subscribed handle, after
// which the old value is restored. card is the card number the node
// should report. The first failure is returned with the report so far.
func Exercise(open func() (alsa.Control, error), card int) (*ExerciseReport, error) {
	r := &ExerciseReport{}
	logf := func(format string, args ...any) { r.Log = append(r.Log, fmt.Sprintf(format, args...)) }
	a, err := open()
	if err != nil {
		return r, err
	}
	defer a.Close()
	b, err := open()
	if err != nil {
		return r, err
	}
	defer b.Close()

	if r.Card, err = a.CardInfo(); err != nil {
		return r, err
	}
	if r.Card.Card != card || r.Card.ID == "" || r.Card.Driver == "" {
		return r, fmt.Errorf("CARD_INFO: card %d id %q driver %q, want card %d with an id and a driver", r.Card.Card, r.Card.ID, r.Card.Driver, card)
	}
	logf("card %d: id %q driver %q name %q mixer %q components %q", r.Card.Card, r.Card.ID, r.Card.Driver, r.Card.Name, r.Card.MixerName, r.Card.Components)

	ids, err := a.Elements()
	if err != nil {
		return r, err
	}
	r.Elements = len(ids)
	if len(ids) == 0 {
		return r, errors.New("ELEM_LIST: no elements")
	}
	var writable *alsa.ElemInfo
	for _, id := range ids {
		byNum, err := a.ElemInfo(alsa.ElemID{NumID: id.NumID})
		if err != nil {
			return r, err
		}
		byName, err := a.ElemInfo(alsa.ElemID{Iface: id.Iface, Device: id.Device, Subdevice: id.Subdevice, Name: id.Name, Index: id.Index})
		if err != nil {
			return r, err
		}
		if byNum.ID != id || byName.ID != id {
			return r, fmt.Errorf("ELEM_INFO of %s answers %s by numid and %s by name", id, byNum.ID, byName.ID)
		}
		if byNum.Type == alsa.TypeEnumerated && len(byNum.Items) == 0 {
			return r, fmt.Errorf("ELEM_INFO of %s: ENUMERATED with no items", id)
		}
		if byNum.Access&alsa.AccessRead != 0 {
			v, err := a.Read(id)
			if err != nil {
				return r, err
			}
			if n := len(v.Ints) + len(v.Bytes); v.Type != byNum.Type || n != byNum.Count && byNum.Type != alsa.TypeIEC958 {
				return r, fmt.Errorf("ELEM_READ of %s: %d %s values, info says %d %s", id, n, v.Type, byNum.Count, byNum.Type)
			}
			r.Read++
		}
		if byNum.Access&alsa.AccessTLVRead != 0 {
			tlv, err := a.TLV(id)
			if err != nil {
				return r, err
			}
			if len(tlv) < 2 || int(tlv[1]) != 4*(len(tlv)-2) {
				return r, fmt.Errorf("TLV_READ of %s: malformed %v", id, tlv)
			}
			r.TLVs++
			logf("TLV %s: type %d, %d bytes", id, tlv[0], tlv[1])
		}
		if id.IsELD() {
			st, ok := alsa.ReadELD(a, int(id.Device))
			if !ok || st.Err != nil && !errors.Is(st.Err, eld.ErrEmpty) {
				return r, fmt.Errorf("ELD of PCM %d: %v", id.Device, st.Err)
			}
			r.ELDs++
		}
		if writable == nil && canToggle(byNum) {
			info := byNum
			writable = &info
		}
	}
	logf("%d elements, %d read, %d TLVs, %d ELDs", r.Elements, r.Read, r.TLVs, r.ELDs)

	dev := -1
	for range alsa.MaxPCMDevices {
		next, err := a.NextPCMDevice(dev)
		if err != nil {
			return r, err
		}
		if next < 0 {
			break
		}
		if next <= dev {
			return r, fmt.Errorf("PCM_NEXT_DEVICE after %d answered %d", dev, next)
		}
		dev = next
		found := false
		for _, s := range []alsa.Stream{alsa.Playback, alsa.Capture} {
			pi, err := a.PCMInfo(dev, 0, s)
			if err != nil {
				continue
			}
			if pi.Card != card || pi.Device != dev || pi.Stream != s || pi.Subdevices < 1 {
				return r, fmt.Errorf("PCM_INFO %d %s answers %+v", dev, s, pi)
			}
			found = true
			r.PCMs = append(r.PCMs, pi)
			logf("PCM %d %s: id %q name %q, %d/%d subdevices free", dev, s, pi.ID, pi.Name, pi.SubdevicesAvail, pi.Subdevices)
		}
		if !found {
			return r, fmt.Errorf("PCM %d has neither a playback nor a capture stream", dev)
		}
	}

	if writable == nil {
		return r, errors.New("no writable BOOLEAN, INTEGER or ENUMERATED element to provoke an event with")
	}
	if err := b.Subscribe(); err != nil {
		return r, err
	}
	old, err := a.Read(writable.ID)
	if err != nil {
		return r, err
	}
	changed := toggled(*writable, old)
	if err := a.Write(writable.ID, changed); err != nil {
		return r, err
	}
	r.Wrote = writable.ID
	ev, err := awaitEvent(b, writable.ID.NumID)
	restore := a.Write(writable.ID, old)
	if err != nil {
		return r, err
	}
	if restore != nil {
		return r, fmt.Errorf("restore %s: %w", writable.ID, restore)
	}
	r.Event = ev
	logf("wrote %s %v -> %v; event %s on %s", writable.ID, old.Ints, changed.Ints, ev.Mask, ev.ID)
	return r, nil
}

// canToggle picks elements a write can change and change back.
func canToggle(info alsa.ElemInfo) bool {
	if info.Access&(alsa.AccessRead|alsa.AccessWrite) != alsa.AccessRead|alsa.AccessWrite ||
		info.Access&(alsa.AccessInactive|alsa.AccessLock|alsa.AccessVolatile) != 0 || info.Count < 1 {
		return false
	}
	switch info.Type {
	case alsa.TypeBoolean:
		return true
	case alsa.TypeInteger:
		return info.Max > info.Min
	case alsa.TypeEnumerated:
		return len(info.Items) >= 2
	}
	return false
}

// toggled changes the first value of v within the element's range.
func toggled(info alsa.ElemInfo, v alsa.Value) alsa.Value {
	out := alsa.Value{Type: v.Type, Ints: slices.Clone(v.Ints), Bytes: slices.Clone(v.Bytes)}
	x := out.Ints[0]
	switch info.Type {
	case alsa.TypeBoolean:
		x = 1 - x
	case alsa.TypeInteger:
		step := max(info.Step, 1)
		if x+step <= info.Max {
			x += step
		} else {
			x -= step
		}
	case alsa.TypeEnumerated:
		x = (x + 1) % int64(len(info.Items))
	}
	out.Ints[0] = x
	return out
}

// awaitEvent reads events on c until one for numid carries VALUE, within
// EventTimeout; on timeout the handle is closed to end the read.
func awaitEvent(c alsa.Control, numid uint32) (alsa.Event, error) {
	type result struct {
		ev  alsa.Event
		err error
	}
	done := make(chan result, 1)
	go func() {
		for {
			evs, err := c.ReadEvents()
			if err != nil {
				done <- result{err: err}
				return
			}
			for _, e := range evs {
				if e.ID.NumID == numid && e.Mask != alsa.EventRemove && e.Mask&alsa.EventValue != 0 {
					done <- result{ev: e}
					return
				}
			}
		}
	}()
	select {
	case r := <-done:
		return r.ev, r.err
	case <-time.After(EventTimeout):
		c.Close()
		<-done
		return alsa.Event{}, fmt.Errorf("no VALUE event for numid %d within %s", numid, EventTimeout)
	}
}

// ExerciseDevSnd runs Exercise on every control node under root (normally
// DevSndRoot) with OpenControl, reads each card with ReadCard, checks that
// the card's PCMs are exactly the PCM nodes under root, and reads each
// card's identity from the sysfs tree at sysfs. No control node at all is
// an error: the caller expects cards. It is the VM tier's entry point.
func ExerciseDevSnd(root, sysfs string) ([]*ExerciseReport, error) {
	nodes, err := alsa.ScanDevSnd(root)
	if err != nil {
		return nil, err
	}
	if len(nodes.Controls) == 0 {
		return nil, fmt.Errorf("no control node under %s", root)
	}
	return exerciseCards(nodes, alsa.DevOpener{Root: root}, sysfs)
}

func exerciseCards(nodes alsa.DevSnd, opener alsa.Opener, sysfs string) ([]*ExerciseReport, error) {
	var reports []*ExerciseReport
	for _, card := range nodes.Controls {
		r, err := Exercise(func() (alsa.Control, error) { return opener.Open(card) }, card)
		reports = append(reports, r)
		if err != nil {
			return reports, fmt.Errorf("card %d (%s): %w", card, alsa.ControlPath(nodes.Root, card), err)
		}
		c, err := opener.Open(card)
		if err != nil {
			return reports, err
		}
		read, err := alsa.ReadCard(c)
		c.Close()
		if err != nil {
			return reports, fmt.Errorf("card %d: ReadCard: %w", card, err)
		}
		var fromCard, fromNodes []string
		for _, p := range read.PCMs {
			fromCard = append(fromCard, filepath.Base(alsa.PCMPath("", card, p.Device(), p.Stream())))
		}
		for _, p := range nodes.PCMs {
			if p.Card == card {
				fromNodes = append(fromNodes, filepath.Base(p.Path))
			}
		}
		slices.Sort(fromCard)
		slices.Sort(fromNodes)
		if !slices.Equal(fromCard, fromNodes) {
			return reports, fmt.Errorf("card %d: the control interface has PCMs %v, %s has %v", card, fromCard, nodes.Root, fromNodes)
		}
		if sysfs != "" {
			id, err := alsa.ReadCardIdentity(sysfs, card)
			if err != nil {
				return reports, err
			}
			if id.Bus == "" || id.Location == "" || id.ID != read.Info.ID {
				return reports, fmt.Errorf("card %d: sysfs identity %+v does not place card id %q", card, id, read.Info.ID)
			}
			r.Log = append(r.Log, "sysfs: "+strings.Join([]string{id.Bus, id.Location, id.Driver}, " ")+", card id "+strconv.Quote(id.ID))
		}
	}
	return reports, nil
}
