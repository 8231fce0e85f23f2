// SPDX-License-Identifier: Apache-2.0

package audio

import (
	"context"
	"testing"

	"github.com/liken-sh/operators/internal/alsa"
)

// countingOpener counts control opens by card.
type countingOpener struct {
	alsa.Opener
	opens map[int]int
}

func (c *countingOpener) Open(card int) (alsa.Control, error) {
	c.opens[card]++
	return c.Opener.Open(card)
}

// A pass reads a card's mixer only after that card's controls changed
// (or a backstop tick), not on every graph change.
func TestMixersAreReadAgainOnlyWhenChanged(t *testing.T) {
	hw := xpsHardware(t)
	opener := &countingOpener{Opener: hw.opener(), opens: map[int]int{}}
	hw.Opener = opener
	cards, _, err := hw.Cards()
	if err != nil {
		t.Fatal(err)
	}
	eps, _ := Endpoints("n", cards)
	for k := range opener.opens {
		delete(opener.opens, k)
	}
	o := &operator{cfg: Config{Hardware: hw}, mixDirty: map[int]bool{}, objProblems: map[string]string{}}
	ctx := context.Background()
	first := o.readMixers(ctx, eps)
	if len(first) != len(cards) || first[0] == nil || opener.opens[0] != 1 {
		t.Fatalf("first read: %d mixers, opens %v", len(first), opener.opens)
	}
	again := o.readMixers(ctx, eps)
	if opener.opens[0] != 1 || again[0] != first[0] {
		t.Errorf("a pass with no change read the mixers again: opens %v", opener.opens)
	}
	o.mixerChanged(0)
	o.readMixers(ctx, eps)
	if opener.opens[0] != 2 || opener.opens[1] != 1 {
		t.Errorf("after card 0's event: opens %v, want card 0 read again alone", opener.opens)
	}
	o.mixerChanged(-1)
	o.readMixers(ctx, eps)
	for card := range first {
		if opener.opens[card] < 2 {
			t.Errorf("after a backstop tick card %d was not read again: opens %v", card, opener.opens)
		}
	}
}
