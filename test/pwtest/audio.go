// SPDX-License-Identifier: Apache-2.0

package pwtest

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"os/exec"
	"slices"
	"strconv"
	"sync"
	"syscall"
	"time"
)

// Tone returns length of a sine at freq Hz with the given amplitude (a
// fraction of full scale, 0..1) as interleaved signed 16-bit
// little-endian PCM at rate Hz, the same signal on each of channels.
func Tone(freq, amplitude float64, rate, channels int, length time.Duration) []byte {
	frames := int(length.Seconds() * float64(rate))
	out := make([]byte, 0, frames*channels*2)
	for i := 0; i < frames; i++ {
		v := int16(math.Round(amplitude * 32767 * math.Sin(2*math.Pi*freq*float64(i)/float64(rate))))
		for c := 0; c < channels; c++ {
			out = binary.LittleEndian.AppendUint16(out, uint16(v))
		}
	}
	return out
}

// Samples decodes channel (0-based) of interleaved signed 16-bit
// little-endian PCM with channels channels into values in [-1, 1). A
// trailing partial frame is ignored.
func Samples(pcm []byte, channels, channel int) []float64 {
	frame := 2 * channels
	out := make([]float64, 0, len(pcm)/frame)
	for f := 0; (f+1)*frame <= len(pcm); f++ {
		i := f*frame + channel*2
		out = append(out, float64(int16(binary.LittleEndian.Uint16(pcm[i:])))/32768)
	}
	return out
}

// Goertzel returns the amplitude of the freq Hz component of x, sampled
// at rate Hz: for x = A·sin(2π·freq·t) over a whole number of periods it
// returns A, and about 0 for a sine at another frequency that also fits
// the window a whole number of times. It is the Goertzel algorithm, one
// DFT bin computed with a second-order recurrence.
func Goertzel(x []float64, rate, freq float64) float64 {
	if len(x) == 0 {
		return 0
	}
	w := 2 * math.Pi * freq / rate
	c := 2 * math.Cos(w)
	var s1, s2 float64
	for _, v := range x {
		s1, s2 = v+c*s1-s2, s1
	}
	power := s1*s1 + s2*s2 - c*s1*s2
	if power < 0 { // rounding
		power = 0
	}
	return 2 * math.Sqrt(power) / float64(len(x))
}

// PeakTone slides a window of window samples over x in half-window steps
// and returns the largest Goertzel amplitude at freq: the level of a tone
// that fills at least one window, wherever it sits in a recording.
func PeakTone(x []float64, rate, freq float64, window int) float64 {
	var peak float64
	for start := 0; start+window <= len(x); start += window / 2 {
		if a := Goertzel(x[start:start+window], rate, freq); a > peak {
			peak = a
		}
	}
	return peak
}

// Play plays pcm (interleaved s16le at rate Hz, channels channels) with
// pw-play and PIPEWIRE_NODE=target, as a consumer pod whose CDI edits set
// that variable does, and waits until pw-play has played it all.
func (d *Daemons) Play(ctx context.Context, target string, pcm []byte, rate, channels int) error {
	cmd := d.Command(ctx, "pw-play", "--raw", "--format", "s16",
		"--rate", strconv.Itoa(rate), "--channels", strconv.Itoa(channels), "-")
	cmd.Env = append(cmd.Env, "PIPEWIRE_NODE="+target)
	cmd.Stdin = bytes.NewReader(pcm)
	out, err := cmd.CombinedOutput()
	if err != nil {
		return fmt.Errorf("pw-play to %s: %w: %s", target, err, bytes.TrimSpace(out))
	}
	return nil
}

// Recording is a pw-record capture, started by RecordMonitor (a sink's
// monitor ports) or Record (a source).
type Recording struct {
	cmd    *exec.Cmd
	out    LockedBuffer
	stderr bytes.Buffer
	done   chan struct{}
	err    error
}

// LockedBuffer is a command's output that a test reads while the
// command writes it (pw-record's stdout, a client's stderr); its zero
// value is empty and ready.
type LockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

// Write appends p.
func (l *LockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

// Len is how many bytes were written.
func (l *LockedBuffer) Len() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Len()
}

// Bytes is what was written so far, as a copy.
func (l *LockedBuffer) Bytes() []byte {
	l.mu.Lock()
	defer l.mu.Unlock()
	return bytes.Clone(l.b.Bytes())
}

// RecordMonitor starts recording what the sink named target plays (its
// monitor ports, stream.capture.sink=true) as interleaved s16le at rate
// Hz with channels channels. The stream is linked by WirePlumber shortly
// after; wait for the link before playing (pipewire.Graph.LinksOf).
func (d *Daemons) RecordMonitor(ctx context.Context, target string, rate, channels int) (*Recording, error) {
	return d.record(ctx, "", []string{"-P", "stream.capture.sink=true", "--target", target}, rate, channels)
}

// Record starts recording from the source named target as RecordMonitor
// does from a sink's monitor. Without stream.capture.sink WirePlumber
// links the recorder to the source itself, which then runs.
func (d *Daemons) Record(ctx context.Context, target string, rate, channels int) (*Recording, error) {
	return d.record(ctx, "", []string{"--target", target}, rate, channels)
}

// RecordThrough is Record by a client that reaches PipeWire only through
// the socket at remote (PIPEWIRE_REMOTE), as the consumer of a claim
// does through the claim's socket (gate.SocketPath).
func (d *Daemons) RecordThrough(ctx context.Context, remote, target string, rate, channels int) (*Recording, error) {
	return d.record(ctx, remote, []string{"--target", target}, rate, channels)
}

// record starts pw-record with args, through remote when it is set.
func (d *Daemons) record(ctx context.Context, remote string, args []string, rate, channels int) (*Recording, error) {
	r := &Recording{done: make(chan struct{})}
	r.cmd = d.Command(ctx, "pw-record", append(args,
		"--raw", "--format", "s16", "--rate", strconv.Itoa(rate), "--channels", strconv.Itoa(channels), "-")...)
	if remote != "" {
		r.cmd.Env = append(r.cmd.Env, "PIPEWIRE_REMOTE="+remote)
	}
	r.cmd.Stdout = &r.out
	r.cmd.Stderr = &r.stderr
	if err := r.cmd.Start(); err != nil {
		return nil, fmt.Errorf("pw-record: %w", err)
	}
	go func() {
		r.err = r.cmd.Wait()
		close(r.done)
	}()
	return r, nil
}

// Pid returns pw-record's process id, which its stream node carries as
// application.process.id.
func (r *Recording) Pid() int { return r.cmd.Process.Pid }

// Recorded returns how many bytes pw-record has captured so far: a test
// waits for as much as it needs rather than for a fixed time.
func (r *Recording) Recorded() int { return r.out.Len() }

// Stop ends the recording (SIGINT, which pw-record takes as the end) and
// returns what was captured. pw-record having exited early, or on a
// signal other than the one sent, is an error.
func (r *Recording) Stop() ([]byte, error) {
	select {
	case <-r.done:
		return r.out.Bytes(), fmt.Errorf("pw-record ended early: %v: %s", r.err, bytes.TrimSpace(r.stderr.Bytes()))
	default:
	}
	_ = r.cmd.Process.Signal(syscall.SIGINT)
	select {
	case <-r.done:
	case <-time.After(30 * time.Second):
		_ = r.cmd.Process.Kill()
		<-r.done
		return r.out.Bytes(), errors.New("pw-record did not end on SIGINT")
	}
	var exit *exec.ExitError
	if r.err != nil && !(errors.As(r.err, &exit) && exit.Exited()) {
		return r.out.Bytes(), fmt.Errorf("pw-record: %v: %s", r.err, bytes.TrimSpace(r.stderr.Bytes()))
	}
	return r.out.Bytes(), nil
}

// PeakFrequency returns the whole frequency in Hz, from lo to hi, whose
// Goertzel amplitude over x (sampled at rate Hz) is largest: where the
// spectrum of a recorded tone peaks.
func PeakFrequency(x []float64, rate float64, lo, hi int) int {
	best, bestA := lo, -1.0
	for f := lo; f <= hi; f++ {
		if a := Goertzel(x, rate, float64(f)); a > bestA {
			best, bestA = f, a
		}
	}
	return best
}

// String is what was written, as text.
func (l *LockedBuffer) String() string { return string(l.Bytes()) }

// Decibels returns ratio, a ratio of amplitudes, in decibels: 20·log10.
func Decibels(ratio float64) float64 { return 20 * math.Log10(ratio) }

// ToneLevel returns the median of the Goertzel amplitudes at freq Hz of
// x's 10 ms windows (x sampled at rate Hz; a trailing partial window is
// left out), 0 when x holds no whole window: the level of a tone that
// fills x, unmoved by the few windows a discontinuity (a cycle a client
// lost) cuts. A tone that does not fit a window a whole number of times
// leaks little: 997 Hz at 48 kHz reads within 0.3 % of its amplitude.
func ToneLevel(x []float64, rate, freq float64) float64 {
	window := int(rate / 100)
	var levels []float64
	for i := 0; window > 0 && i+window <= len(x); i += window {
		levels = append(levels, Goertzel(x[i:i+window], rate, freq))
	}
	if len(levels) == 0 {
		return 0
	}
	slices.Sort(levels)
	return levels[len(levels)/2]
}
