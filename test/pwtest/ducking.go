// SPDX-License-Identifier: Apache-2.0

package pwtest

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"time"
)

// DuckWindow is the span of each level MeasureDucking reads: 10 ms.
const DuckWindow = 10 * time.Millisecond

// Ducking is what a recording of a sink shows of a tone (the music)
// lowered while another tone (the announcement) plays over it. Levels
// are Goertzel amplitudes, fractions of full scale, each the median of
// its 10 ms windows over the stretch named.
type Ducking struct {
	// Before is the music's level over the 500 ms before the
	// announcement's first window.
	Before float64
	// During is the music's level while the announcement plays, from
	// 300 ms after its first window to 100 ms before its last.
	During float64
	// After is the music's level from 800 ms after the announcement's
	// last window to the end of the recording.
	After float64
	// Announcement is the announcement's level while it plays.
	Announcement float64
	// DuckedDB is how far the music went down while the announcement
	// played, in dB (positive: lower), During against Before.
	DuckedDB float64
	// ToDuck is from the announcement's first window to the first window
	// in which the music is within 3 dB of the ducking asked for,
	// looked for from 500 ms before the announcement: negative when the
	// music went down before the announcement's samples reached the sink.
	ToDuck time.Duration
	// ToRestore is from the end of the announcement's last window to the
	// end of the first window after it in which the music is within
	// 1 dB of Before.
	ToRestore time.Duration
	// Start and End are where the announcement's first window starts and
	// its last window ends, from the start of the recording.
	Start, End time.Duration
}

// MeasureDucking reads x, one channel sampled at rate Hz, cut in 10 ms
// windows (DuckWindow): the music at musicHz, the announcement at
// announceHz (present where its level passes 0.1), and the ducking
// asked for, duckDB decibels. Each tone must fit a window a whole number
// of times, so that a window's level of one is not touched by the
// other. It errors when a tone does not fit, when there is no
// announcement, or music before, during or after it, or when the music
// never comes within 3 dB of the ducking or never comes back within
// 1 dB.
func MeasureDucking(x []float64, rate int, musicHz, announceHz float64, duckDB int) (Ducking, error) {
	window := rate / 100
	for _, hz := range []float64{musicHz, announceHz} {
		if periods := hz * float64(window) / float64(rate); periods != math.Trunc(periods) || periods < 1 {
			return Ducking{}, fmt.Errorf("a %.1f Hz tone does not fit a 10 ms window a whole number of times", hz)
		}
	}
	levels := func(freq float64) []float64 {
		var out []float64
		for i := 0; i+window <= len(x); i += window {
			out = append(out, Goertzel(x[i:i+window], float64(rate), freq))
		}
		return out
	}
	m, a := levels(musicHz), levels(announceHz)
	on := slices.IndexFunc(a, func(v float64) bool { return v > 0.1 })
	if on < 0 {
		return Ducking{}, errors.New("the announcement is not in the recording")
	}
	off := len(a) - 1
	for a[off] <= 0.1 {
		off--
	}
	if on < 50 || off-on < 50 || len(m)-off < 90 {
		return Ducking{}, fmt.Errorf("the recording holds %d ms before the announcement, %d ms of it and %d ms after it; want at least 500, 500 and 900",
			10*on, 10*(off-on), 10*(len(m)-off))
	}
	d := Ducking{
		Before:       median(m[on-50 : on]),
		During:       median(m[on+30 : off-10]),
		After:        median(m[off+80:]),
		Announcement: median(a[on:off]),
		Start:        time.Duration(on) * DuckWindow,
		End:          time.Duration(off+1) * DuckWindow,
	}
	if d.Before <= 0 {
		return d, errors.New("no music before the announcement")
	}
	d.DuckedDB = -Decibels(d.During / d.Before)
	from := on - 50
	ducked := slices.IndexFunc(m[from:], func(v float64) bool { return Decibels(v/d.Before) <= -float64(duckDB-3) })
	if ducked < 0 {
		return d, fmt.Errorf("the music never drops within 3 dB of the %d dB ducking", duckDB)
	}
	d.ToDuck = time.Duration(ducked+from-on) * DuckWindow
	restored := slices.IndexFunc(m[off+1:], func(v float64) bool { return Decibels(v/d.Before) >= -1 })
	if restored < 0 {
		return d, errors.New("the music never comes back after the announcement")
	}
	d.ToRestore = time.Duration(restored+1) * DuckWindow
	return d, nil
}

func median(x []float64) float64 {
	if len(x) == 0 {
		return math.NaN()
	}
	s := slices.Clone(x)
	slices.Sort(s)
	return s[len(s)/2]
}
