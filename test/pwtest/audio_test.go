// SPDX-License-Identifier: Apache-2.0

package pwtest

import (
	"math"
	"slices"
	"testing"
	"time"
)

func TestToneAndGoertzel(t *testing.T) {
	const rate = 48000
	pcm := Tone(1000, 0.5, rate, 2, 200*time.Millisecond)
	if len(pcm) != rate/5*2*2 {
		t.Fatalf("%d bytes, want %d", len(pcm), rate/5*2*2)
	}
	for ch := 0; ch < 2; ch++ {
		x := Samples(pcm, 2, ch)
		if len(x) != rate/5 {
			t.Fatalf("channel %d: %d samples", ch, len(x))
		}
		for f, want := range map[float64]float64{1000: 0.5, 500: 0, 1500: 0, 2000: 0} {
			if got := Goertzel(x, rate, f); math.Abs(got-want) > 0.001 {
				t.Errorf("channel %d: %v Hz at %.5f, want %.1f", ch, f, got, want)
			}
		}
	}
	// A tone in the middle of silence is found at its level by PeakTone,
	// and diluted by a whole-buffer Goertzel.
	x := append(append(make([]float64, rate), Samples(pcm, 2, 0)...), make([]float64, rate)...)
	if p := PeakTone(x, rate, 1000, rate/10); math.Abs(p-0.5) > 0.001 {
		t.Errorf("PeakTone %.4f, want 0.5", p)
	}
	if g := Goertzel(x, rate, 1000); g > 0.1 {
		t.Errorf("whole-buffer Goertzel %.4f, want the tone diluted", g)
	}
	if Goertzel(nil, rate, 1000) != 0 || PeakTone(x[:10], rate, 1000, 4800) != 0 {
		t.Error("empty input gave a level")
	}
	// A partial trailing frame is ignored.
	if n := len(Samples(pcm[:7], 2, 1)); n != 1 {
		t.Errorf("%d samples from 7 bytes of stereo", n)
	}
}

// The player's input repeats its PCM whole frames at a time, or is
// silence, and counts what it gave.
func TestLoop(t *testing.T) {
	l := &loop{pcm: []byte{1, 2, 3}}
	b := make([]byte, 7)
	if n, err := l.Read(b); n != 7 || err != nil || string(b) != "\x01\x02\x03\x01\x02\x03\x01" {
		t.Errorf("read %d %v %v", n, err, b)
	}
	if n, _ := l.Read(b[:2]); n != 2 || b[0] != 2 || b[1] != 3 {
		t.Errorf("next read %v", b[:2])
	}
	if n := l.n.Load(); n != 9 {
		t.Errorf("counted %d bytes read, want 9", n)
	}
	z := &loop{}
	b = []byte{9, 9, 9}
	if n, err := z.Read(b); n != 3 || err != nil || b[0]|b[1]|b[2] != 0 {
		t.Errorf("silence: %d %v %v", n, err, b)
	}
	if n := z.n.Load(); n != 3 {
		t.Errorf("counted %d bytes of silence, want 3", n)
	}
}

// ToneLevel is the median of the 10 ms levels: a window a lost cycle
// cuts does not move it.
func TestToneLevel(t *testing.T) {
	x := Samples(Tone(997, 0.5, 48000, 1, time.Second), 1, 0)
	cut := slices.Concat(x[:20000], x[20000+512:]) // a phase jump
	for what, x := range map[string][]float64{"whole": x, "cut": cut} {
		if l := ToneLevel(x, 48000, 997); Decibels(l/0.5) < -0.1 || Decibels(l/0.5) > 0.1 {
			t.Errorf("%s: level %.4f, want 0.5", what, l)
		}
	}
	if l := ToneLevel(x[:100], 48000, 997); l != 0 {
		t.Errorf("level of less than a window: %v", l)
	}
}
