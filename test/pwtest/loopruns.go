// SPDX-License-Identifier: Apache-2.0

package pwtest

import "encoding/binary"

// RunHead is how many frames of a recording must equal a loop's, in
// order, for LoopRuns to take them as the start of a run.
const RunHead = 64

// Runs is how a recording splits into runs of a loop's samples
// (LoopRuns).
type Runs struct {
	// Runs is how many stretches of the recording are each the loop's
	// frames in order from some offset, around and around: 1 for a
	// recording of a source fed the loop that lost and repeated nothing.
	Runs int
	// Longest is the longest run, in frames, and LongestAt the frame of
	// the recording it starts at: the stretch to read a tone's
	// frequency from, with no discontinuity to spread it.
	Longest, LongestAt int
	// Lead is how many frames of silence (every byte zero) come before
	// the first run: with PipeWire 1.4.2 most recordings of a fed source
	// began with a quantum of silence (1024 frames), also some that
	// joined a source already running.
	Lead int
	// Outside is how many frames of the recording are in no run, but for
	// Lead and Tail: frames the loop does not hold in that order, such as
	// silence or a mix.
	Outside int
	// Tail is how many frames at the recording's end, fewer than
	// RunHead, start no run: too few to tell.
	Tail int
	// Frames is how many whole frames the recording holds.
	Frames int
	// Start is the offset in the loop, in frames, of the recording's
	// first run (-1 when there is none).
	Start int
}

// LoopRuns splits pcm, a recording, into runs of loop, PCM a source was
// given over and over (Options.Captures): both interleaved 16-bit
// samples in frames of frame bytes, loop whole frames. A stretch that
// starts with RunHead frames of the loop in order is a run, extended as
// far as the loop goes on matching; a frame where none starts is
// outside, or in the Lead or the Tail. A client that misses a cycle of
// the graph on a loaded host loses or repeats a whole quantum, which
// starts a new run and leaves no frame outside. A trailing partial frame
// of pcm is ignored, and a frame size that is not positive gives no
// frames.
//
// A run starts at the first offset in the loop that matches, so a loop
// whose samples repeat within it (a tone with several periods in it)
// may split a recording into more runs than it lost cycles; a tone that
// fits the loop once (997 Hz in one second at 48 kHz) does not.
func LoopRuns(pcm, loop []byte, frame int) Runs {
	if frame <= 0 {
		return Runs{Start: -1}
	}
	n := len(pcm) / frame
	r := Runs{Frames: n, Start: -1}
	if len(loop) == 0 || len(loop)%frame != 0 {
		r.Outside = n
		return r
	}
	frames := len(loop) / frame
	// The loop's offsets by their first frame, so that a recording's
	// frame is looked up rather than searched for.
	key := func(b []byte) uint64 {
		var k [8]byte
		copy(k[:], b[:min(len(b), 8)])
		return binary.LittleEndian.Uint64(k[:])
	}
	at := map[uint64][]int{}
	for off := 0; off < frames; off++ {
		k := key(loop[off*frame : (off+1)*frame])
		at[k] = append(at[k], off)
	}
	same := func(p, off int) bool {
		a, b := pcm[p*frame:(p+1)*frame], loop[off*frame:(off+1)*frame]
		for i := range a {
			if a[i] != b[i] {
				return false
			}
		}
		return true
	}
	silent := func(p int) bool {
		for _, b := range pcm[p*frame : (p+1)*frame] {
			if b != 0 {
				return false
			}
		}
		return true
	}
	for p := 0; p < n; {
		if n-p < RunHead {
			r.Tail = n - p
			break
		}
		head := RunHead
		start := -1
		for _, off := range at[key(pcm[p*frame:(p+1)*frame])] {
			i := 1
			for i < head && same(p+i, (off+i)%frames) {
				i++
			}
			if i == head {
				start = off
				break
			}
		}
		if start < 0 {
			if r.Runs == 0 && r.Outside == 0 && silent(p) {
				r.Lead++
			} else {
				r.Outside++
			}
			p++
			continue
		}
		q, off := p+head, (start+head)%frames
		for q < n && same(q, off) {
			q, off = q+1, (off+1)%frames
		}
		if r.Runs == 0 {
			r.Start = start
		}
		r.Runs++
		if q-p > r.Longest {
			r.Longest, r.LongestAt = q-p, p
		}
		p = q
	}
	return r
}
