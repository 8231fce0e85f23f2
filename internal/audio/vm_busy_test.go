// SPDX-License-Identifier: Apache-2.0

//go:build vmtier

package audio

import (
	"context"
	"fmt"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/liken-sh/operators/internal/alsa"
	"github.com/liken-sh/operators/internal/audio/gate"
	"github.com/liken-sh/operators/internal/pipewire"
	"github.com/liken-sh/operators/test/pwtest"
	"github.com/liken-sh/operators/test/vm/guest"
)

// The VM tier: another program holds the real HDA card's one playback
// substream before PipeWire starts, so PipeWire's adapter cannot open
// the PCM and the declared node is never made. The claim gate finds it
// absent and asks for it again with backoff, its own open of the PCM
// says EBUSY, and the output's Ready condition says DeviceBusy and names
// the holder from /proc/asound. Once the holder exits, the node is made
// without anyone's help, it is the trusted one, and a stream plays on
// the card (its substream runs, opened by PipeWire). It logs how long
// the node took after the holder let go.
func TestVMBusyDeviceGetsItsNode(t *testing.T) {
	if err := guest.LoadSoundCards(); err != nil {
		t.Fatal(err)
	}
	const card, device = 2, 0
	pcm := alsa.PCMPath(alsa.DevSndRoot, card, device, alsa.Playback)
	// The holder: a shell opens the PCM read-write on fd 3 and becomes
	// sleep, which keeps it.
	holder := exec.Command("/bin/sh", "-c", "exec 3<>"+pcm+"; exec sleep 600")
	if err := holder.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = holder.Process.Kill(); _ = holder.Wait() })
	// playback is the card's one playback substream as /proc/asound
	// shows it.
	playback := func() alsa.Substream {
		subs, err := alsa.ReadSubstreams("", card, device)
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range subs {
			if s.Stream == alsa.Playback {
				return s
			}
		}
		t.Fatalf("card %d PCM %d has no playback substream: %+v", card, device, subs)
		return alsa.Substream{}
	}
	if !guest.WaitFor(30*time.Second, func() bool { s := playback(); return s.Open && s.OwnerPID == holder.Process.Pid }) {
		t.Fatalf("the holder (pid %d) never held %s: %+v", holder.Process.Pid, pcm, playback())
	}

	eps, problems := Endpoints("vm", mustCards(t))
	for _, p := range problems {
		t.Logf("problem: %v", p)
	}
	var e Endpoint
	for _, x := range eps {
		if x.PCM.Card() == card && x.PCM.Device() == device && !x.Capture() {
			e = x
		}
	}
	if e.Name == "" {
		t.Fatalf("no endpoint for card %d PCM %d among %d", card, device, len(eps))
	}
	out := pipewire.Output{Card: card, Device: device, Name: e.NodeName, Output: e.Name, Rate: 48000, Channels: 2, Positions: []string{"FL", "FR"}}
	// Readiness is the socket and the gate's record, never a pw-dump:
	// under emulation on a loaded host one takes longer than the test.
	d, err := pwtest.Prepare(pwtest.Options{Outputs: []pipewire.Output{out}, ReadyTimeout: 180 * time.Second, ReadyAttempt: 60 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("logs:\n%s", d.Logs())
		}
		_ = d.Stop()
	})
	ctx, cancel := context.WithTimeout(context.Background(), 6*time.Minute)
	defer cancel()
	if err := d.StartPipeWire(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := d.LaunchWirePlumber(); err != nil {
		t.Fatal(err)
	}

	record := func() gate.Trusted {
		t.Helper()
		rec, err := gate.ReadTrusted(d.RuntimeDir)
		if err != nil {
			t.Fatal(err)
		}
		return rec
	}
	var rec gate.Trusted
	for rec = record(); rec.Absent[out.Name].Attempts < 2 || !rec.Absent[out.Name].Busy(); rec = record() {
		if ctx.Err() != nil {
			t.Fatalf("the record never says %s is absent and busy: %+v", out.Name, rec)
		}
		time.Sleep(200 * time.Millisecond)
	}
	if _, ok := rec.IDs[out.Name]; ok {
		t.Fatalf("a node is trusted while its PCM is held: %+v", rec)
	}
	o := &operator{metrics: newMetrics(nil), absentSeen: map[string]absentSeen{}, absent: rec.Absent}
	c := o.absentNode(ctx, e, nil, nil, time.Now())
	if c == nil || c.Reason != ReasonDeviceBusy || !strings.Contains(c.Message, fmt.Sprintf("held by pid %d (sleep)", holder.Process.Pid)) {
		t.Fatalf("Ready = %+v, want DeviceBusy naming the holder", c)
	}
	t.Logf("Ready while held: %s", c.Message)

	refused := rec.Absent[out.Name].Attempts
	_ = holder.Process.Signal(syscall.SIGTERM)
	_ = holder.Wait()
	released := time.Now()
	for rec = record(); rec.IDs[out.Name] == 0; rec = record() {
		if ctx.Err() != nil {
			t.Fatalf("no node for %s after the holder exited: %+v", out.Name, rec)
		}
		time.Sleep(200 * time.Millisecond)
	}
	t.Logf("node %d made %v after the holder exited (%d refusals while it held the PCM)", rec.IDs[out.Name], time.Since(released).Round(10*time.Millisecond), refused)
	if _, still := rec.Absent[out.Name]; still {
		t.Errorf("made yet still absent: %+v", rec)
	}
	if c := o.absentNode(ctx, e, &pipewire.Node{ID: rec.IDs[out.Name], Name: out.Name}, nil, time.Now()); c != nil {
		t.Errorf("Ready with the node there: %+v", c)
	}

	p, err := d.StartPlaying(ctx, out.Name, pwtest.Tone(440, 0.1, 48000, 2, time.Second), 48000, 2)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Stop()
	if !guest.WaitFor(180*time.Second, func() bool { s := playback(); return s.State == "RUNNING" && s.OwnerPID != holder.Process.Pid }) {
		t.Fatalf("the card's substream does not run the stream: %+v", playback())
	}
	t.Logf("card %d PCM %d plays: %+v", card, device, playback())
}

// mustCards reads the guest's real cards.
func mustCards(t *testing.T) []CardState {
	t.Helper()
	cards, problems, err := Hardware{}.Cards()
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		t.Logf("card problem: %v", p)
	}
	return cards
}
