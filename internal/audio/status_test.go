// SPDX-License-Identifier: Apache-2.0

package audio

import (
	"testing"

	"github.com/liken-sh/operators/internal/alsa"
	"github.com/liken-sh/operators/internal/alsa/eld"
)

// An HDMI/DP port whose monitor went away keeps the connection type its
// monitor gave; every other endpoint says what it says now.
func TestKeptConnection(t *testing.T) {
	port := Endpoint{PCM: alsa.PCM{HasELD: true, Info: alsa.PCMInfo{Stream: alsa.Playback}}}
	monitor := port
	monitor.PCM.ELD = alsa.ELDState{ELD: &eld.ELD{}}
	analog := Endpoint{PCM: alsa.PCM{Info: alsa.PCMInfo{Stream: alsa.Playback}}}
	for _, c := range []struct {
		what             string
		e                Endpoint
		now, stored, out string
	}{
		{"unplugged DP port", port, "", alsa.ConnDisplayPort, alsa.ConnDisplayPort},
		{"unplugged HDMI port", port, "", alsa.ConnHDMI, alsa.ConnHDMI},
		{"port no monitor was seen on", port, "", "", ""},
		{"port whose stored type is no port's", port, "", alsa.ConnAnalog, ""},
		{"port with a monitor", monitor, alsa.ConnHDMI, alsa.ConnDisplayPort, alsa.ConnHDMI},
		{"analog output", analog, alsa.ConnAnalog, alsa.ConnHDMI, alsa.ConnAnalog},
	} {
		if got := keptConnection(c.e, c.now, c.stored); got != c.out {
			t.Errorf("%s: keptConnection(now %q, stored %q) = %q, want %q", c.what, c.now, c.stored, got, c.out)
		}
	}
}
