// SPDX-License-Identifier: Apache-2.0

package pwtest

import (
	"math"
	"strings"
	"testing"
	"time"
)

// synthDucking is music at 0.2 for 4 s with an announcement at 0.3 from
// 1 s to 2.5 s; the music is at 0.02 (20 dB down) from duckAt to
// restoreAt, in seconds.
func synthDucking(duckAt, restoreAt float64) []float64 {
	const rate = 48000
	x := make([]float64, 4*rate)
	for i := range x {
		t := float64(i) / rate
		music := 0.2
		if t >= duckAt && t < restoreAt {
			music = 0.02
		}
		x[i] = music * math.Sin(2*math.Pi*400*t)
		if t >= 1 && t < 2.5 {
			x[i] += 0.3 * math.Sin(2*math.Pi*1000*t)
		}
	}
	return x
}

// The figures come from where the levels change: the music ducked 50 ms
// after the announcement's first window (or 30 ms before it, a negative
// figure), back 200 ms after its last (210 ms to the end of the first
// window back), 20 dB down between.
func TestMeasureDucking(t *testing.T) {
	for _, c := range []struct {
		duckAt     float64
		wantToDuck time.Duration
	}{{1.05, 50 * time.Millisecond}, {0.97, -30 * time.Millisecond}} {
		d, err := MeasureDucking(synthDucking(c.duckAt, 2.7), 48000, 400, 1000, 20)
		if err != nil {
			t.Fatal(err)
		}
		if d.Start != time.Second || d.End != 2500*time.Millisecond {
			t.Errorf("the announcement from %s to %s, want 1s to 2.5s", d.Start, d.End)
		}
		if d.ToDuck != c.wantToDuck || d.ToRestore != 210*time.Millisecond {
			t.Errorf("ducked at %.2f s: to duck %s, to restore %s; want %s and 210ms", c.duckAt, d.ToDuck, d.ToRestore, c.wantToDuck)
		}
		if math.Abs(d.DuckedDB-20) > 0.1 || math.Abs(d.Before-0.2) > 0.001 || math.Abs(d.After-0.2) > 0.001 || math.Abs(d.Announcement-0.3) > 0.001 {
			t.Errorf("levels %+v; want 0.2 before and after, ducked by 20 dB, the announcement at 0.3", d)
		}
	}
}

// A recording the figures cannot be read from says why.
func TestMeasureDuckingRefuses(t *testing.T) {
	x := synthDucking(1.05, 2.7)
	for _, c := range []struct {
		what     string
		x        []float64
		music    float64
		duck     int
		contains string
	}{
		{"a tone that does not fit the window", x, 440, 20, "440.0 Hz tone does not fit"},
		{"no announcement", x[:48000], 400, 20, "not in the recording"},
		{"a ducking deeper than the recording's", x, 400, 40, "never drops within 3 dB of the 40 dB"},
		{"a recording that ends with the announcement", x[:2*48000], 400, 20, "want at least"},
	} {
		_, err := MeasureDucking(c.x, 48000, c.music, 1000, c.duck)
		if err == nil || !strings.Contains(err.Error(), c.contains) {
			t.Errorf("%s: error %v, want one saying %q", c.what, err, c.contains)
		}
	}
}
