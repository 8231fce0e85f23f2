// SPDX-License-Identifier: Apache-2.0

package pwtest

import (
	"context"
	"testing"
	"time"

	"github.com/liken-sh/operators/internal/pipewire"
)

// A capture output fed one second of a tone captures it over and over: a
// recording of its source, past the end of the loop, is the fed samples
// themselves, in order, but for whole cycles the recorder lost or
// repeated when the host starved it, with the tone at the fed frequency
// and level.
func TestCapturesCarryTheirPCM(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	const rate, hz, amp = 48000, 997, 0.5 // 997 Hz fits the one-second loop once: no run of it repeats within it
	const frame = 2 * HardwareChannels
	tone := Tone(hz, amp, rate, HardwareChannels, time.Second)
	mic := pipewire.Output{Card: 0, Device: 0, Direction: pipewire.Capture, Name: "fed-mic", Path: "null", Rate: rate}
	d, err := Start(ctx, Options{Outputs: []pipewire.Output{mic}, Captures: map[string][]byte{mic.Name: tone}})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Stop()
	rec, err := d.Record(ctx, mic.Name, rate, HardwareChannels)
	if err != nil {
		t.Fatal(err)
	}
	const want = 5 * rate * frame / 2 // two and a half rounds of the loop
	deadline := time.Now().Add(60 * time.Second)
	for rec.Recorded() < want && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	pcm, err := rec.Stop()
	if err != nil {
		t.Fatal(err)
	}
	if len(pcm) < want {
		t.Fatalf("recorded %d bytes of the fed source within 60 s, want %d", len(pcm), want)
	}
	runs := LoopRuns(pcm, tone, frame)
	x := Samples(pcm, HardwareChannels, 0)
	level, peak := ToneLevel(x[runs.Lead:], rate, hz), PeakFrequency(x[runs.LongestAt:runs.LongestAt+runs.Longest], rate, hz-100, hz+100)
	t.Logf("FIGURE recording of the fed source: %d frames: %d of silence first, %d runs of the fed loop (longest %d, the first from frame %d of the loop), %d outside, %d too few to tell at the end; peak at %d Hz, median 10 ms level %.4f (fed %d Hz at %.1f)",
		runs.Frames, runs.Lead, runs.Runs, runs.Longest, runs.Start, runs.Outside, runs.Tail, peak, level, hz, amp)
	if runs.Outside > 0 || runs.Runs == 0 {
		t.Errorf("%d of %d recorded frames are not the fed samples", runs.Outside, runs.Frames)
	}
	if peak != hz {
		t.Errorf("the recording peaks at %d Hz, want %d", peak, hz)
	}
	if d := Decibels(level / amp); d < -1 || d > 1 {
		t.Errorf("the recording holds the tone at %.4f, %.1f dB from the %.1f fed", level, d, amp)
	}
}

// Captures the declaration cannot carry are refused, naming the output.
func TestCapturesRefused(t *testing.T) {
	mic := pipewire.Output{Card: 0, Device: 0, Direction: pipewire.Capture, Name: "fed-mic", Path: "null", Rate: 48000}
	speaker := NullOutput(0, 1, "speaker")
	tone := Tone(1000, 0.5, 48000, 2, 10*time.Millisecond)
	noRate := mic
	noRate.Rate = 0
	three := mic
	three.Channels = 3
	for _, c := range []struct {
		what     string
		outputs  []pipewire.Output
		captures map[string][]byte
	}{
		{"a playback output", []pipewire.Output{speaker}, map[string][]byte{"speaker": tone}},
		{"no rate", []pipewire.Output{noRate}, map[string][]byte{"fed-mic": tone}},
		{"a partial frame", []pipewire.Output{mic}, map[string][]byte{"fed-mic": tone[:len(tone)-2]}},
		{"no PCM", []pipewire.Output{mic}, map[string][]byte{"fed-mic": nil}},
		{"a frame that does not divide a page", []pipewire.Output{three}, map[string][]byte{"fed-mic": make([]byte, 6)}},
		{"no such output", []pipewire.Output{mic}, map[string][]byte{"fed-mic": tone, "other": tone}},
	} {
		d, err := Prepare(Options{Outputs: c.outputs, Captures: c.captures})
		if err == nil {
			d.Stop()
			t.Errorf("%s: accepted", c.what)
			continue
		}
		t.Logf("%s: %v", c.what, err)
	}
}
