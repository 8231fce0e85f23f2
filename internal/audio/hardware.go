// SPDX-License-Identifier: Apache-2.0

package audio

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/liken-sh/operators/internal/alsa"
)

// Hardware is where the claimed cards are read from: the /dev/snd the
// claim delivered, the control interfaces behind it, and sysfs for each
// card's place in the machine. The zero value reads the real machine.
type Hardware struct {
	// DevSnd is the /dev/snd directory; "" means alsa.DevSndRoot.
	DevSnd string
	// Sysfs is the sysfs root; "" means /sys.
	Sysfs string
	// Opener opens control interfaces; nil means the kernel's nodes under
	// DevSnd. The demo and tests serve recorded cards instead.
	Opener alsa.Opener
	// Proc is the proc root; "" means /proc. Its asound directory says
	// who holds a PCM (alsa.ReadSubstreams), and <pid>/comm names them.
	Proc string
}

func (h Hardware) opener() alsa.Opener {
	if h.Opener != nil {
		return h.Opener
	}
	return alsa.DevOpener{Root: h.DevSnd}
}

// Cards reads every card with a node in DevSnd. A missing DevSnd holds no
// cards (a claim that delivered none). A card that cannot be read is left
// out with a problem naming it and the playback PCMs /dev/snd shows for it
// (the outputs it takes with it), so one broken card never hides the
// others; only an unreadable DevSnd is an error.
func (h Hardware) Cards() ([]CardState, []error, error) {
	root := h.DevSnd
	if root == "" {
		root = alsa.DevSndRoot
	}
	nodes, err := alsa.ScanDevSnd(root)
	if err != nil {
		return nil, nil, err
	}
	sysfs := h.Sysfs
	if sysfs == "" {
		sysfs = "/sys"
	}
	var cards []CardState
	var problems []error
	for _, n := range nodes.Cards() {
		ctl, err := h.opener().Open(n)
		if err != nil {
			problems = append(problems, fmt.Errorf("%s: control interface: %w", leftOut(nodes, n), err))
			continue
		}
		card, err := alsa.ReadCard(ctl)
		ctl.Close()
		if err != nil {
			problems = append(problems, fmt.Errorf("%s: %w", leftOut(nodes, n), err))
			continue
		}
		id, err := alsa.ReadCardIdentity(sysfs, n)
		if err != nil {
			problems = append(problems, fmt.Errorf("card %d: sysfs identity: %w", n, err))
		}
		cards = append(cards, CardState{Card: card, Identity: id})
	}
	return cards, problems, nil
}

// leftOut names a card that could not be read and the playback PCMs its
// nodes in /dev/snd stand for: "card 1 (playback PCMs 0, 3 left out)".
// Their ids are unknown without the control interface, so the PCM numbers
// are what a person can match with aplay -l.
func leftOut(nodes alsa.DevSnd, card int) string {
	var pcms []string
	for _, p := range nodes.Playback(card) {
		pcms = append(pcms, strconv.Itoa(p.Device))
	}
	switch len(pcms) {
	case 0:
		return fmt.Sprintf("card %d (no playback PCM)", card)
	case 1:
		return fmt.Sprintf("card %d (playback PCM %s left out)", card, pcms[0])
	}
	return fmt.Sprintf("card %d (playback PCMs %s left out)", card, strings.Join(pcms, ", "))
}
