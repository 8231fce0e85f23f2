// SPDX-License-Identifier: Apache-2.0

package capture

import (
	"testing"
	"time"
)

// TestPumpPace: the pump sleeps coalesce while half its pipe holds more
// than that, and less when the pipe would fill sooner (a pipe the kernel
// did not enlarge, a fast many-channel node), so the recorder never
// blocks on a full pipe.
func TestPumpPace(t *testing.T) {
	const stereo48k = 48000 * 2 * 2
	for _, c := range []struct {
		pipe, rate int
		want       time.Duration
	}{
		{1 << 20, stereo48k, coalesce},
		{1 << 20, 44100 * 4 * 2, coalesce},
		{64 << 10, stereo48k, time.Duration(32<<10) * time.Second / stereo48k},
		{0, stereo48k, time.Duration(32<<10) * time.Second / stereo48k},
		{1 << 20, 192000 * 64 * 2, time.Duration(512<<10) * time.Second / (192000 * 64 * 2)},
		{1 << 20, 0, coalesce},
	} {
		got := pumpPace(c.pipe, c.rate)
		if got != c.want {
			t.Errorf("pumpPace(%d, %d) = %v, want %v", c.pipe, c.rate, got, c.want)
		}
		if fill := time.Duration(max(c.pipe, 64<<10)) * time.Second / time.Duration(max(c.rate, 1)); c.rate > 0 && got > fill/2 {
			t.Errorf("pumpPace(%d, %d) = %v, past half the %v the pipe takes to fill", c.pipe, c.rate, got, fill)
		}
	}
}
