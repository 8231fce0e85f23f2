// SPDX-License-Identifier: Apache-2.0

package guest

import (
	"fmt"
	"os"
	"strings"
	"time"
)

// SoundModules are the ALSA drivers of the guest's three cards, in the
// order they are loaded and so numbered: snd-dummy (card 0), snd-aloop
// (card 1), and snd-hda-intel over qemu's intel-hda controller with its
// hda-duplex codec (card 2; the codec driver, snd-hda-codec-generic, is
// loaded by the kernel through the modprobe the guest's /init names).
var SoundModules = []string{"snd-dummy", "snd-aloop", "snd-hda-intel"}

// SoundCards is how many cards SoundModules make.
const SoundCards = 3

// LoadSoundCards loads SoundModules and waits, up to 20 s, until every
// card has its control node and the HDA card has probed its codec (its
// PCM node exists: the controller registers the card only after the
// codec probe, which runs in a work queue).
func LoadSoundCards() error {
	if err := Modprobe(SoundModules...); err != nil {
		return err
	}
	ok := WaitFor(20*time.Second, func() bool {
		return len(Glob("/dev/snd/controlC*")) >= SoundCards && Exists("/dev/snd/pcmC2D0p")
	})
	if !ok {
		cards, _ := os.ReadFile("/proc/asound/cards")
		return fmt.Errorf("after modprobe %s: /dev/snd has %q; /proc/asound/cards:\n%s",
			strings.Join(SoundModules, " "), Glob("/dev/snd/*"), cards)
	}
	return nil
}
