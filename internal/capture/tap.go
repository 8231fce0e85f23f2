// SPDX-License-Identifier: Apache-2.0

package capture

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/liken-sh/operators/internal/captureapi"
	"github.com/liken-sh/operators/internal/supervise"
	"github.com/liken-sh/operators/internal/tailbuf"
)

// session is one running tap: pw-record, the encoder (none for WAV) and
// the pump between them that bounds the span.
type session struct {
	cfg      Config
	t        target
	format   captureapi.Format
	span     captureapi.Span
	accepted time.Time

	rec, enc       *exec.Cmd
	recErr, encErr *tailbuf.Buffer
	recDone        chan struct{}
	encDone        chan struct{}
	body           io.Reader // what the response carries
	bodyFile       *os.File  // the encoder's stdout, closed by stop
	recOut         *os.File  // pw-record's stdout, closed by stop
	pipeSize       int       // the capacity of pw-record's stdout in bytes

	stream    string // the recorder's node.name
	stopOnce  sync.Once
	pumpDone  chan struct{}
	delivered bool  // set by the pump before pumpDone: the whole span went to the encoder
	pumpErr   error // why the pump ended early
}

// child returns a command for a tap's child process, to be started with
// supervise.StartBound: killed with SIGKILL if this process dies first,
// so a crash leaves no recorder holding a PipeWire stream.
func child(path string, args []string, env []string) *exec.Cmd {
	cmd := exec.Command(path, args...)
	cmd.Env = env
	return cmd
}

// recorderArgs are pw-record's arguments for t: the sink's monitor ports
// (stream.capture.sink) or the source, by node.name, as raw s16le at the
// node's own rate and channels on stdout. The stream's own node is named
// stream, so the link check finds it in the graph. A node's ports carry
// its graph's clock rate (clock.rate, one of clock.allowed-rates), which
// is not the node's own when its device runs at another: pw-record's
// resampler then converts, and nothing here can avoid it without moving
// the clock of a graph other streams may be playing in.
//
// The stream asks for recorderLatency (node.latency; pw-record asks for
// none when recording): a graph whose other nodes ask for nothing then
// runs at the largest quantum PipeWire allows (clock.max-quantum, 2048
// frames by default) instead of clock.quantum (1024), which halves the
// wake-ups of the recorder and of the graph's driver. A node that asks
// for less keeps its quantum, since a graph runs at the smallest
// latency its nodes ask for (src/pipewire/context.c, reconfigure_driver).
func recorderArgs(t target, stream string) []string {
	props := "{ node.name = " + strconv.Quote(stream)
	if t.monitor {
		props += " stream.capture.sink = true"
	}
	return []string{"-P", props + " }", "--target", t.node.Name, "--raw", "--format", "s16",
		"--rate", strconv.Itoa(t.rate), "--channels", strconv.Itoa(t.channels), "--latency", recorderLatency, "-"}
}

// recorderLatency is the recorder stream's node.latency, as pw-record's
// --latency spells it: far more than clock.max-quantum, so the graph's
// limit decides, and far less than the pump's coalesce interval, which
// bounds the body's latency anyway.
const recorderLatency = "100ms"

// encoderArgs are the encoder's program and arguments for f, reading raw
// s16le at t's rate and channels on stdin and writing the stream on
// stdout; WAV has none.
func (c Config) encoderArgs(f captureapi.Format, t target, bitrate int) (string, []string) {
	rate, ch := strconv.Itoa(t.rate), strconv.Itoa(t.channels)
	switch f.Name {
	case captureapi.FLAC.Name:
		return c.Flac, []string{"--silent", "--force-raw-format", "--endian=little", "--sign=signed", "--bps=16",
			"--channels=" + ch, "--sample-rate=" + rate, "--stdout", "-"}
	case captureapi.Opus.Name:
		args := []string{"--quiet", "--raw", "--raw-bits", "16", "--raw-rate", rate, "--raw-chan", ch}
		if bitrate > 0 {
			args = append(args, "--bitrate", strconv.Itoa(bitrate))
		}
		return c.Opusenc, append(args, "-", "-")
	}
	return "", nil
}

// encoderEnv is the environment of an encoder: unbuffered stdout through
// stdbuf's preload library when the image has it.
func (c Config) encoderEnv(base []string) []string {
	if c.Stdbuf == "" {
		return base
	}
	if _, err := os.Stat(c.Stdbuf); err != nil {
		return base
	}
	return append(append([]string{}, base...), "LD_PRELOAD="+c.Stdbuf, "_STDBUF_O=0")
}

// startSession starts the encoder and pw-record and waits until the
// recorder's stream is linked, reading PipeWire's registry. It fails
// with 503 recorder-failed when pw-record exits first, 500 wrong-target
// when the link lands on another node or none comes within the link
// deadline, 500 encoder-failed when the encoder does not start, and 503
// unavailable when PipeWire's socket does not answer; nothing is left
// running then. The
// pipes are this process's own (os.Pipe, recorderPipe), not exec's, so that reaping a
// child never closes a pipe that still holds its last bytes.
func startSession(ctx context.Context, cfg Config, t target, f captureapi.Format, q captureapi.TapQuery, accepted time.Time) (*session, *captureapi.Problem, string) {
	s := &session{cfg: cfg, t: t, format: f, span: q.Span, accepted: accepted,
		recErr: tailbuf.New(4096), encErr: tailbuf.New(4096), recDone: make(chan struct{}), encDone: make(chan struct{}), pumpDone: make(chan struct{})}
	env := cfg.Remote.Env()
	var sink io.WriteCloser
	if prog, args := cfg.encoderArgs(f, t, q.Bitrate); prog != "" {
		s.enc = child(prog, args, cfg.encoderEnv(env))
		s.enc.Stderr = s.encErr
		inR, inW, err := os.Pipe()
		if err != nil {
			return nil, captureapi.NewProblem(captureapi.ProblemInternal, "the encoder's pipe: %v", err), "encoder"
		}
		outR, outW, err := os.Pipe()
		if err != nil {
			inR.Close()
			inW.Close()
			return nil, captureapi.NewProblem(captureapi.ProblemInternal, "the encoder's pipe: %v", err), "encoder"
		}
		s.enc.Stdin, s.enc.Stdout = inR, outW
		enc, err := supervise.StartBound(s.enc)
		inR.Close()
		outW.Close()
		if err != nil {
			inW.Close()
			outR.Close()
			return nil, captureapi.NewProblem(captureapi.ProblemEncoderFailed, "%s did not start: %v", prog, err), "encoder"
		}
		sink, s.body, s.bodyFile = inW, outR, outR
		go func() { <-enc.Done(); close(s.encDone) }()
	} else {
		pr, pw := io.Pipe()
		s.body, sink = pr, pw
		close(s.encDone)
	}
	fail := func(p *captureapi.Problem, reason string) (*session, *captureapi.Problem, string) {
		sink.Close()
		s.stop()
		return nil, p, reason
	}
	recR, recW, err := recorderPipe()
	if err != nil {
		return fail(captureapi.NewProblem(captureapi.ProblemInternal, "pw-record's pipe: %v", err), "connect")
	}
	reg, err := dialRegistry(ctx, cfg.Remote)
	if err != nil {
		return fail(captureapi.NewProblem(captureapi.ProblemUnavailable, "PipeWire's graph could not be read: %v", err), "connect")
	}
	defer closeRegistry(reg)
	s.stream = streamName()
	s.rec = child(cfg.PwRecord, recorderArgs(t, s.stream), env)
	s.rec.Stdout, s.rec.Stderr = recW, s.recErr
	// A large pipe (F_SETPIPE_SZ; 1 MiB is Linux's default
	// /proc/sys/fs/pipe-max-size) lets the pump read in coalesced gulps
	// without ever blocking the recorder's stream; the pump paces itself
	// by the size the kernel granted (F_GETPIPE_SZ), which is smaller when
	// the user's pipe-user-pages-soft is spent.
	_, _ = unix.FcntlInt(recW.Fd(), unix.F_SETPIPE_SZ, recorderPipeSize)
	if n, err := unix.FcntlInt(recW.Fd(), unix.F_GETPIPE_SZ, 0); err == nil {
		s.pipeSize = n
	}
	rec, err := supervise.StartBound(s.rec)
	recW.Close()
	s.recOut = recR
	if err != nil {
		return fail(captureapi.NewProblem(captureapi.ProblemRecorderFailed, "pw-record did not start: %v", err), "connect")
	}
	go func() { <-rec.Done(); close(s.recDone) }()
	if p, reason := s.awaitLink(ctx, reg); p != nil {
		return fail(p, reason)
	}
	go s.pump(recR, sink)
	return s, nil, ""
}

// recorderPipe returns the pipe pw-record writes into, both ends in
// blocking mode and so never registered with Go's network poller. A
// polled read end would wake the poller on each of pw-record's writes
// (two a PipeWire quantum, about ninety a second) while the pump sleeps
// between its reads; a blocking one wakes nothing until the pump reads,
// and then the read returns at once with what has gathered. The pump
// bounds silence with a timer instead of a read deadline.
func recorderPipe() (r, w *os.File, err error) {
	var p [2]int
	if err := unix.Pipe2(p[:], unix.O_CLOEXEC); err != nil {
		return nil, nil, err
	}
	return os.NewFile(uintptr(p[0]), "pw-record stdout"), os.NewFile(uintptr(p[1]), "pw-record stdout (write end)"), nil
}

// streamName returns a node.name for a recorder's stream that no other
// node has.
func streamName() string {
	var b [6]byte
	_, _ = rand.Read(b[:])
	return "audio-capture." + hex.EncodeToString(b[:])
}

func orNothing(s string) string {
	if s == "" {
		return "it printed nothing"
	}
	return s
}

// pump copies the recorder's samples into sink (the encoder's stdin, or
// the WAV body after its header), dropping whole frames until the span's
// begin and stopping after its length. It closes sink when it ends, which
// lets the encoder finish its stream.
func (s *session) pump(src *os.File, sink io.WriteCloser) {
	defer close(s.pumpDone)
	defer sink.Close()
	frame := s.t.channels * 2
	var remaining int64 = -1 // bytes still to deliver; -1 for no end
	if s.span.Bounded() {
		frames := int64(s.span.Length()) * int64(s.t.rate) / int64(time.Second)
		remaining = frames * int64(frame)
	}
	if s.format.Name == captureapi.WAV.Name {
		size := remaining
		if size < 0 {
			size = 0
		}
		if _, err := sink.Write(wavHeader(s.t.rate, s.t.channels, size)); err != nil {
			s.pumpErr = err
			return
		}
	}
	// Silence for IdleTimeout (after the span's begin) ends the recorder,
	// which ends the read below.
	var quiet atomic.Bool
	idle := time.AfterFunc(s.cfg.IdleTimeout+s.untilBegin(), func() {
		quiet.Store(true)
		s.signalRecorder()
	})
	defer idle.Stop()
	pace := pumpPace(s.pipeSize, s.t.rate*frame)
	buf := make([]byte, 256<<10)
	var carry int // bytes of a partial frame at the start of buf
	started := false
	var first time.Time // when the first samples came
	for remaining != 0 {
		n, err := src.Read(buf[carry:])
		if n > 0 {
			idle.Reset(s.cfg.IdleTimeout + s.untilBegin())
			if first.IsZero() {
				first = time.Now()
			}
		}
		n += carry
		whole := n - n%frame
		chunk := buf[:whole]
		if !started {
			if time.Since(s.accepted) < s.span.Begin {
				chunk = nil // before begin: dropped
			} else {
				started = true
			}
		}
		if remaining > 0 && int64(len(chunk)) > remaining {
			chunk = chunk[:remaining]
		}
		if len(chunk) > 0 {
			if _, werr := sink.Write(chunk); werr != nil {
				s.pumpErr = fmt.Errorf("the encoder stopped reading: %w", werr)
				return
			}
			if remaining > 0 {
				remaining -= int64(len(chunk))
			}
		}
		carry = copy(buf, buf[whole:n])
		if err == nil && n < len(buf)/2 {
			// Half the time since the first samples, up to pace: a
			// young tap's first gulps reach the encoder at once, so
			// its first page leaves as soon as it can be written.
			time.Sleep(min(pace, time.Since(first)/2))
		}
		if err != nil {
			switch {
			case quiet.Load():
				s.pumpErr = fmt.Errorf("no sound from pw-record for %s", s.cfg.IdleTimeout)
			case errors.Is(err, io.EOF), errors.Is(err, os.ErrClosed):
				s.pumpErr = fmt.Errorf("pw-record ended: %s", orNothing(s.recErr.Trimmed()))
			default:
				s.pumpErr = err
			}
			return
		}
	}
	s.delivered = true
	s.signalRecorder()
}

// Pump pacing: the pump reads what the recorder wrote at most every
// coalesce, so a tap costs four reads, writes and TLS flushes a second
// rather than one per PipeWire quantum (about 47 a second at 1024
// frames), and the body's latency stays a quarter of a second. Each of
// those wakes the process, which costs far more than the bytes it moves:
// at every 100 ms, the capture process spent about 4 ms a second of CPU
// on a 4-channel 44.1 kHz WAV tap, at every 250 ms half that. The
// interval grows to coalesce over the tap's first half second (half the
// time since the first samples), so an encoder gets its first frames at
// once and its first page leaves as soon as it is written.
const (
	coalesce         = 250 * time.Millisecond
	recorderPipeSize = 1 << 20
)

// pumpPace is how long the pump sleeps between reads of a pipe of
// pipeSize bytes filled at bytesPerSecond: coalesce, or the time to fill
// half the pipe when that is shorter, so the recorder never waits on a
// full pipe. A pipe size of 0 (unknown) counts as Linux's default 64 KiB
// (pipe(7)).
func pumpPace(pipeSize, bytesPerSecond int) time.Duration {
	if pipeSize <= 0 {
		pipeSize = 64 << 10
	}
	if bytesPerSecond <= 0 {
		return coalesce
	}
	return min(coalesce, time.Duration(pipeSize/2)*time.Second/time.Duration(bytesPerSecond))
}

// untilBegin is the time left before the span's begin.
func (s *session) untilBegin() time.Duration {
	return max(0, s.span.Begin-time.Since(s.accepted))
}

// signalRecorder ends pw-record: the span is delivered, and what it
// records after is not wanted.
func (s *session) signalRecorder() {
	if s.rec.Process != nil {
		_ = s.rec.Process.Signal(syscall.SIGKILL)
	}
}

// stop ends the tap at once: both children are signalled (SIGKILL),
// reaped, and then the pipes close. Stopping twice is harmless.
func (s *session) stop() {
	s.stopOnce.Do(func() {
		for _, c := range []*exec.Cmd{s.rec, s.enc} {
			if c != nil && c.Process != nil {
				_ = c.Process.Signal(syscall.SIGKILL)
			}
		}
		if s.rec != nil && s.rec.Process != nil {
			<-s.recDone
		}
		if s.enc != nil && s.enc.Process != nil {
			<-s.encDone
		}
		if pr, ok := s.body.(*io.PipeReader); ok {
			_ = pr.CloseWithError(errors.New("tap stopped"))
		}
		for _, f := range []*os.File{s.recOut, s.bodyFile} {
			if f != nil {
				_ = f.Close()
			}
		}
	})
}

// encoderGrace bounds the wait for an encoder to finish its stream after
// its input ended.
const encoderGrace = 5 * time.Second

// finish waits for the pump and the encoder once the body has reached its
// end, stops what is left, and reports whether the span was delivered
// whole and the encoder exited 0, with the encoder's exit code (-1 for
// WAV or a signal).
func (s *session) finish() (bool, int, error) {
	<-s.pumpDone
	if s.delivered && s.enc != nil {
		select {
		case <-s.encDone:
		case <-time.After(encoderGrace):
		}
	}
	s.stop()
	code := -1
	if s.enc != nil && s.enc.ProcessState != nil {
		code = s.enc.ProcessState.ExitCode()
	}
	switch {
	case !s.delivered:
		if s.pumpErr == nil {
			s.pumpErr = errors.New("the span was not delivered")
		}
		return false, code, s.pumpErr
	case s.enc != nil && code != 0:
		return false, code, fmt.Errorf("the encoder exited %d: %s", code, orNothing(s.encErr.Trimmed()))
	}
	return true, code, nil
}
