// SPDX-License-Identifier: Apache-2.0

package audio

import (
	"context"
	"time"

	"k8s.io/klog/v2"

	"github.com/liken-sh/operators/internal/alsa"
)

// ELDPoll is how often the ELD elements of the outputs the latest pass
// published are read again between passes.
//
// The HDA driver refreshes its copy of a monitor's ELD from the codec
// (sound/pci/hda/patch_hdmi.c, hdmi_present_sense and the audio
// component's pin_eld_notify) and notifies only when it sees a change
// itself; an ELD that becomes readable late after a hot plug, or that the
// graphics driver hands over again after a runtime resume, can change the
// element with no event reaching user space. Reading an ELD element copies
// the driver's cached block (hdmi_eld_ctl_get) and touches no hardware,
// so each output's block is read every ELDPoll and compared, byte for
// byte and unparsed (alsa.ELDUnchanged), with what the latest pass
// published; only a difference wakes a pass, whose slice is then written
// within the settle window.
const ELDPoll = 2 * time.Second

// watchELDs wakes a pass (eldWake) whenever an output's ELD differs from
// what the latest pass read, until ctx ends.
func (o *operator) watchELDs(ctx context.Context) {
	go func() {
		tick := time.NewTicker(ELDPoll)
		defer tick.Stop()
		logged := map[int]bool{} // cards whose control could not be opened
		for {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
			if o.eldsChanged(ctx, logged) {
				select {
				case o.eldWake <- struct{}{}:
				default:
				}
			}
		}
	}()
}

// eldsChanged reads the ELD of every output of the latest pass that has
// one and reports whether any block (or whether it could be read) differs
// from what that pass read.
func (o *operator) eldsChanged(ctx context.Context, logged map[int]bool) bool {
	byCard := map[int][]Endpoint{}
	o.mu.Lock()
	for _, e := range o.known {
		if !e.Capture() && e.PCM.HasELD {
			byCard[e.PCM.Card()] = append(byCard[e.PCM.Card()], e)
		}
	}
	o.mu.Unlock()
	changed := false
	for card, eps := range byCard {
		ctl, err := o.cfg.Hardware.opener().Open(card)
		if err != nil {
			// The card went (its pass will say so) or cannot be opened
			// now: one line until it can again.
			if !logged[card] {
				logged[card] = true
				klog.FromContext(ctx).V(2).Info("ELD poll: control interface unavailable", "card", card, "err", err)
			}
			continue
		}
		delete(logged, card)
		for _, e := range eps {
			if !alsa.ELDUnchanged(ctl, e.PCM.Device(), e.PCM.ELD) {
				klog.FromContext(ctx).V(2).Info("ELD changed with no control event", "output", e.Name, "card", card, "pcm", e.PCM.Device(),
					"was", len(e.PCM.ELD.Raw))
				changed = true
			}
		}
		ctl.Close()
	}
	return changed
}
