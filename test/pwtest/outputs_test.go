// SPDX-License-Identifier: Apache-2.0

package pwtest

import (
	"math"
	"testing"
	"time"
)

// The front pair carries the front tone alone and the rear pair the rear
// tone alone, after the lead of silence, which Onset finds the end of.
func TestFrontRearAndOnset(t *testing.T) {
	const rate = 48000
	pcm := FrontRear(523, 1319, 0.3, rate, 500*time.Millisecond, time.Second)
	if want := (rate/2 + rate) * 4 * 2; len(pcm) != want {
		t.Fatalf("%d bytes, want %d", len(pcm), want)
	}
	for ch, hz := range []float64{523, 523, 1319, 1319} {
		x := Samples(pcm, 4, ch)
		if at := Onset(x, 0.05); at < rate/2 || at > rate/2+rate/100 {
			t.Errorf("channel %d starts sounding at frame %d, want just after %d", ch, at, rate/2)
		}
		tone := x[rate/2:]
		other := 1842 - hz
		if a, b := PeakTone(tone, rate, hz, rate/10), PeakTone(tone, rate, other, rate/10); math.Abs(a-0.3) > 0.01 || b > 0.01 {
			t.Errorf("channel %d: %.0f Hz at %.3f, %.0f Hz at %.3f; want 0.3 and none", ch, hz, a, other, b)
		}
	}
	if Onset(make([]float64, 10), 0.05) != -1 {
		t.Error("silence has an onset")
	}
}

// A sink's first monitor port is its front left, else the first listed.
func TestFirstMonitor(t *testing.T) {
	ports := "a:monitor_1\na:monitor_2\nb:monitor_FR\nb:monitor_FL\nab:monitor_FL\nb.x:playback_FL\n"
	for sink, want := range map[string]string{"a": "a:monitor_1", "b": "b:monitor_FL", "ab": "ab:monitor_FL", "b.x": "", "c": ""} {
		if got := firstMonitor(ports, sink); got != want {
			t.Errorf("first monitor of %s: %q, want %q", sink, got, want)
		}
	}
}
