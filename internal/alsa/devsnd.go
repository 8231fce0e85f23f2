// SPDX-License-Identifier: Apache-2.0

package alsa

import (
	"cmp"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
)

// DevSndRoot is where the kernel's ALSA nodes are (and where a claim's CDI
// edits put them in a container).
const DevSndRoot = "/dev/snd"

// PCMNode is one PCM node, /dev/snd/pcmC<card>D<device><p|c>.
type PCMNode struct {
	Card, Device int
	Stream       Stream
	// Path is the node's path under the scanned root.
	Path string
}

// DevSnd is what a /dev/snd directory holds.
type DevSnd struct {
	// Root is the directory scanned.
	Root string
	// Controls are the card numbers with a controlC<N> node, ascending.
	Controls []int
	// PCMs are the PCM nodes, by card, device, then playback before
	// capture.
	PCMs []PCMNode
}

var (
	pcmNodeName     = regexp.MustCompile(`^pcmC([0-9]{1,3})D([0-9]{1,3})([pc])$`)
	controlNodeName = regexp.MustCompile(`^controlC([0-9]{1,3})$`)
)

// ScanDevSnd lists the control and PCM nodes in root (normally
// DevSndRoot). Any non-directory entry with a node's name counts, so tests
// stand empty files in for device nodes; other entries (timer, seq, hwC*,
// by-id/) are ignored. A root that does not exist is an empty result, not
// an error: a container that was delivered no card has no /dev/snd. Any
// other read error is returned.
func ScanDevSnd(root string) (DevSnd, error) {
	out := DevSnd{Root: root}
	entries, err := os.ReadDir(root)
	if errors.Is(err, fs.ErrNotExist) {
		return out, nil
	}
	if err != nil {
		return out, fmt.Errorf("list ALSA nodes in %s: %w", root, err)
	}
	for _, e := range entries {
		if e.IsDir() {
			continue
		}
		if m := pcmNodeName.FindStringSubmatch(e.Name()); m != nil {
			card, _ := strconv.Atoi(m[1])
			dev, _ := strconv.Atoi(m[2])
			stream := Playback
			if m[3] == "c" {
				stream = Capture
			}
			out.PCMs = append(out.PCMs, PCMNode{Card: card, Device: dev, Stream: stream, Path: filepath.Join(root, e.Name())})
		} else if m := controlNodeName.FindStringSubmatch(e.Name()); m != nil {
			card, _ := strconv.Atoi(m[1])
			out.Controls = append(out.Controls, card)
		}
	}
	slices.Sort(out.Controls)
	slices.SortFunc(out.PCMs, func(a, b PCMNode) int {
		return cmp.Or(cmp.Compare(a.Card, b.Card), cmp.Compare(a.Device, b.Device), cmp.Compare(a.Stream, b.Stream))
	})
	return out, nil
}

// Cards lists every card number that has a control or a PCM node,
// ascending.
func (d DevSnd) Cards() []int {
	cards := slices.Clone(d.Controls)
	for _, p := range d.PCMs {
		cards = append(cards, p.Card)
	}
	slices.Sort(cards)
	return slices.Compact(cards)
}

// Playback lists the playback PCM nodes of one card.
func (d DevSnd) Playback(card int) []PCMNode {
	var out []PCMNode
	for _, p := range d.PCMs {
		if p.Card == card && p.Stream == Playback {
			out = append(out, p)
		}
	}
	return out
}

// ControlPath is the path of card's control node under root.
func ControlPath(root string, card int) string {
	return filepath.Join(root, "controlC"+strconv.Itoa(card))
}

// PCMPath is the path of a PCM node under root.
func PCMPath(root string, card, device int, stream Stream) string {
	return filepath.Join(root, fmt.Sprintf("pcmC%dD%d%c", card, device, stream.Suffix()))
}

// WriteDevSnd creates, under root, an empty regular file for the control
// node and every PCM node of each dump: a stand-in /dev/snd for tests and
// the demo, where ScanDevSnd finds what the recorded cards serve. Files
// already there are left alone.
func WriteDevSnd(root string, dumps ...*Dump) error {
	if err := os.MkdirAll(root, 0o755); err != nil {
		return err
	}
	for _, d := range dumps {
		paths := []string{ControlPath(root, d.Card)}
		for _, p := range d.PCMs {
			stream, err := ParseStream(p.Stream)
			if err != nil {
				return fmt.Errorf("card %d PCM %d: %w", d.Card, p.Device, err)
			}
			paths = append(paths, PCMPath(root, d.Card, p.Device, stream))
		}
		for _, path := range paths {
			f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY, 0o644)
			if err != nil {
				return err
			}
			if err := f.Close(); err != nil {
				return err
			}
		}
	}
	return nil
}
