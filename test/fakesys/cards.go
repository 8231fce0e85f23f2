// SPDX-License-Identifier: Apache-2.0

package fakesys

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/liken-sh/operators/internal/alsa"
)

// SoundCards is a node's sound hardware laid out from recordings: the
// /dev/snd the claim would deliver (stand-in nodes), the cards' control
// interfaces (recorded dumps, served by Cards, which the caller may change
// to play a monitor being unplugged), and the sysfs that places them.
type SoundCards struct {
	DevSnd, Sysfs string
	Cards         *alsa.DumpDir
}

// XPS17 lays out under dir the Dell XPS 17 9700 recorded in
// internal/alsa/testdata (a SOF soundwire card with three DP-MST outputs,
// one with a Samsung U28E590 attached; a Razer USB headset; a Dell WD19
// dock). moduleRoot is the repository's root. The dumps are copied, so
// changing the hardware never touches the recording.
func XPS17(moduleRoot, dir string) (SoundCards, error) {
	src := filepath.Join(moduleRoot, "internal", "alsa", "testdata")
	out := SoundCards{DevSnd: filepath.Join(dir, "snd"), Sysfs: filepath.Join(dir, "sys")}
	manifest, err := os.ReadFile(filepath.Join(src, "sysfs", "xps9700.tree"))
	if err != nil {
		return out, err
	}
	if err := BuildTree(manifest, out.Sysfs); err != nil {
		return out, err
	}
	cards := filepath.Join(dir, "cards")
	if err := os.MkdirAll(cards, 0o755); err != nil {
		return out, err
	}
	var dumps []*alsa.Dump
	for card := range 3 {
		name := fmt.Sprintf("card%d.json", card)
		data, err := os.ReadFile(filepath.Join(src, "xps9700", name))
		if err != nil {
			return out, err
		}
		d, err := alsa.DecodeDump(data)
		if err != nil {
			return out, fmt.Errorf("fakesys: %s: %w", name, err)
		}
		dumps = append(dumps, d)
		if err := os.WriteFile(filepath.Join(cards, name), data, 0o644); err != nil {
			return out, err
		}
	}
	if err := alsa.WriteDevSnd(out.DevSnd, dumps...); err != nil {
		return out, err
	}
	out.Cards = alsa.NewDumpDir(cards)
	return out, nil
}
