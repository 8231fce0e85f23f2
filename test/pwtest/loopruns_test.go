// SPDX-License-Identifier: Apache-2.0

package pwtest

import (
	"slices"
	"testing"
	"time"
)

// LoopRuns finds the runs of a loop in a recording made of them: a
// lead of silence, a run around the loop's end, whole quanta repeated
// and lost, silence within, and a tail too short to tell.
func TestLoopRuns(t *testing.T) {
	const frame = 4
	loop := Tone(997, 0.5, 48000, 2, time.Second)
	frames := len(loop) / frame
	from := func(off, n int) []byte { // n frames of the loop from off, around and around
		var b []byte
		for n > 0 {
			c := min(n, frames-off)
			b = append(b, loop[off*frame:(off+c)*frame]...)
			n, off = n-c, 0
		}
		return b
	}
	pcm := slices.Concat(
		make([]byte, 1024*frame), // the stream's first cycle
		from(47000, 3000),        // around the loop's end
		from(2000-1024, 2048),    // a quantum repeated, then on
		from(3024+1024, 1024),    // a quantum lost
		make([]byte, 200*frame),  // silence
		from(9000, 100),
		from(30000, 10), // too few to tell
		[]byte{1},       // a partial frame
	)
	got := LoopRuns(pcm, loop, frame)
	want := Runs{Runs: 4, Longest: 3000, LongestAt: 1024, Lead: 1024, Outside: 200, Tail: 10, Frames: 1024 + 3000 + 2048 + 1024 + 200 + 100 + 10, Start: 47000}
	if got != want {
		t.Errorf("LoopRuns: %+v, want %+v", got, want)
	}
	if got := LoopRuns(make([]byte, 400*frame), loop, frame); got.Lead != 400-RunHead+1 || got.Tail != RunHead-1 || got.Runs != 0 || got.Start != -1 {
		t.Errorf("LoopRuns of silence: %+v", got)
	}
	if got := LoopRuns(pcm, loop, 0); got.Frames != 0 || got.Runs != 0 {
		t.Errorf("LoopRuns with no frame size: %+v", got)
	}
	if got := LoopRuns(pcm, loop[:len(loop)-1], frame); got.Outside != got.Frames {
		t.Errorf("LoopRuns with a loop of partial frames: %+v", got)
	}
}
