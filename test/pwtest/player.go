// SPDX-License-Identifier: Apache-2.0

package pwtest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// Player is a pw-play that plays into one node until it is stopped,
// started by StartPlaying. While it runs its stream node is linked to the
// target, which is how a test holds a published node busy and then lets
// it go.
type Player struct {
	cmd    *exec.Cmd
	stderr bytes.Buffer
	done   chan struct{}
	err    error // pw-play's exit, read after done
	fed    *loop

	mu      sync.Mutex
	stopped bool
}

// StartPlaying starts `pw-play --target target` playing pcm (interleaved
// s16le at rate Hz, channels channels; a trailing partial frame is
// dropped) over and over, or silence when pcm is empty, until Stop or the
// end of ctx. WirePlumber links the stream a moment later: wait for the
// link in the graph (pipewire.Graph.LinksOf) before relying on it. It
// fails only if pw-play cannot start.
func (d *Daemons) StartPlaying(ctx context.Context, target string, pcm []byte, rate, channels int) (*Player, error) {
	if channels < 1 {
		return nil, fmt.Errorf("pw-play: %d channels", channels)
	}
	frame := 2 * channels
	p := &Player{done: make(chan struct{})}
	p.cmd = d.Command(ctx, "pw-play", "--target", target, "--raw", "--format", "s16",
		"--rate", strconv.Itoa(rate), "--channels", strconv.Itoa(channels), "-")
	p.fed = &loop{pcm: pcm[:len(pcm)/frame*frame]}
	p.cmd.Stdin = p.fed
	p.cmd.Stderr = &p.stderr
	if err := p.cmd.Start(); err != nil {
		return nil, fmt.Errorf("pw-play: %w", err)
	}
	go func() {
		p.err = p.cmd.Wait()
		close(p.done)
	}()
	return p, nil
}

// Pid returns pw-play's process id, which its stream node carries as
// application.process.id.
func (p *Player) Pid() int { return p.cmd.Process.Pid }

// Fed returns how many bytes of PCM pw-play has been given so far. It
// reads its input as the graph consumes it, so over a span of seconds
// the growth of Fed divided by the frame size and the rate is how many
// seconds of audio the graph played per second; the pipe and os/exec's
// copy buffer hold up to about 100 KiB more, a constant offset.
func (p *Player) Fed() int64 { return p.fed.n.Load() }

// Done is closed when pw-play has exited.
func (p *Player) Done() <-chan struct{} { return p.done }

// Stop ends pw-play (SIGINT, then SIGKILL if it has not exited within
// 30 s) and waits for it. It is an error if pw-play had exited before
// Stop (the error carries its status and stderr) or needed the SIGKILL.
// Stopping twice is harmless.
func (p *Player) Stop() error {
	p.mu.Lock()
	if p.stopped {
		p.mu.Unlock()
		return nil
	}
	p.stopped = true
	p.mu.Unlock()
	select {
	case <-p.done:
		return fmt.Errorf("pw-play ended before Stop: %v: %s", p.err, bytes.TrimSpace(p.stderr.Bytes()))
	default:
	}
	_ = p.cmd.Process.Signal(syscall.SIGINT)
	select {
	case <-p.done:
		return nil
	case <-time.After(30 * time.Second):
		_ = p.cmd.Process.Kill()
		<-p.done
		return errors.New("pw-play did not end on SIGINT")
	}
}

// Looping returns a reader of pcm over and over, or of silence when pcm
// is empty, that never ends: the stdin of a pw-play a test starts itself,
// which then plays for as long as the test needs. pcm holds whole frames.
func Looping(pcm []byte) io.Reader { return &loop{pcm: pcm} }

// loop reads pcm over and over, or zeros when pcm is empty, forever,
// counting the bytes read in n.
type loop struct {
	pcm []byte
	off int
	n   atomic.Int64
}

func (l *loop) Read(b []byte) (int, error) {
	if len(l.pcm) == 0 {
		clear(b)
		l.n.Add(int64(len(b)))
		return len(b), nil
	}
	n := 0
	for n < len(b) {
		c := copy(b[n:], l.pcm[l.off:])
		n += c
		l.off = (l.off + c) % len(l.pcm)
	}
	l.n.Add(int64(n))
	return n, nil
}
