// SPDX-License-Identifier: Apache-2.0

package pipewire

import (
	"bytes"
	"context"
	"errors"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func ptr[T any](v T) *T { return &v }

func TestVolumeWriteLiteral(t *testing.T) {
	good := []struct {
		w    VolumeWrite
		want string
	}{
		{VolumeWrite{Gain: ptr(0.4), Channels: 2, Mute: ptr(true)}, "{ channelVolumes: [ 0.4, 0.4 ], mute: true }"},
		{VolumeWrite{Gain: ptr(1.0), Channels: 1}, "{ channelVolumes: [ 1.0 ] }"},
		{VolumeWrite{Gain: ptr(0.0), Channels: 3}, "{ channelVolumes: [ 0.0, 0.0, 0.0 ] }"},
		{VolumeWrite{Mute: ptr(false), Channels: 99}, "{ mute: false }"}, // Channels unused without Gain
		{VolumeWrite{Gain: ptr(0.07), Channels: 2}, "{ channelVolumes: [ 0.07, 0.07 ] }"},
	}
	for _, c := range good {
		got, err := c.w.literal()
		if err != nil || got != c.want {
			t.Errorf("%+v: %q, %v; want %q", c.w, got, err, c.want)
		}
	}
	lit, err := VolumeWrite{Gain: ptr(0.5), Channels: MaxChannels}.literal()
	if err != nil || strings.Count(lit, "0.5") != MaxChannels {
		t.Errorf("%d channels: %q, %v", MaxChannels, lit, err)
	}
	bad := []struct {
		w    VolumeWrite
		want string
	}{
		{VolumeWrite{}, "neither a gain nor a mute"},
		{VolumeWrite{Gain: ptr(1.01), Channels: 2}, "gain 1.01 is outside 0 to 1"},
		{VolumeWrite{Gain: ptr(-0.1), Channels: 2}, "gain -0.1 is outside"},
		{VolumeWrite{Gain: ptr(math.NaN()), Channels: 2}, "gain NaN"},
		{VolumeWrite{Gain: ptr(0.5)}, "0 channels, want 1 to 64"},
		{VolumeWrite{Gain: ptr(0.5), Channels: 65, Mute: ptr(true)}, "65 channels"},
	}
	for _, c := range bad {
		if _, err := c.w.literal(); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: %v, want %q", c.w, err, c.want)
		}
	}
}

// Every percent survives the trip through PipeWire's 32-bit floats.
func TestPercentGainRoundTrip(t *testing.T) {
	for p := 0; p <= 100; p++ {
		g, err := GainOfPercent(p)
		if err != nil {
			t.Fatal(err)
		}
		if back := PercentOfGain(float64(float32(g))); back != p {
			t.Errorf("%d%% -> %v -> float32 -> %d%%", p, g, back)
		}
	}
	if g, _ := GainOfPercent(40); g != 0.4 {
		t.Errorf("40%% = %v, want 0.4 (linear)", g)
	}
	for _, p := range []int{-1, 101, 1000} {
		if _, err := GainOfPercent(p); err == nil || !strings.Contains(err.Error(), "outside 0 to 100") {
			t.Errorf("%d%%: %v", p, err)
		}
	}
	if PercentOfGain(2.5) != 250 {
		t.Error("a gain above unity is not reported as it is")
	}
}

// fakePWCli writes a shell script standing in for pw-cli, for the
// replies a real one gives that the live tests cannot all produce on
// demand (a hang, a non-zero exit with output). Its messages are the ones
// PipeWire 1.4.2's pw-cli printed (measured).
func fakePWCli(t *testing.T, script string) Remote {
	t.Helper()
	path := filepath.Join(t.TempDir(), "pw-cli")
	if err := os.WriteFile(path, []byte("#!/bin/sh\n"+script), 0o755); err != nil {
		t.Fatal(err)
	}
	return Remote{RuntimeDir: t.TempDir(), PWCli: path}
}

func TestSetVolumeReplies(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	w := VolumeWrite{Gain: ptr(0.4), Channels: 2, Mute: ptr(true)}
	cases := map[string]struct {
		script string
		want   string // "" for success
		noSuch bool
	}{
		"args and env": {`[ "$PIPEWIRE_RUNTIME_DIR" = "$XDG_RUNTIME_DIR" ] && [ -d "$XDG_RUNTIME_DIR" ] && [ "$*" = "set-param 30 Props { channelVolumes: [ 0.4, 0.4 ], mute: true }" ] || { echo "bad env or args: $*" >&2; exit 3; }; echo 'Object: size 64'`, "", false},
		"unknown id":   {`echo 'Error: "set-param: unknown global '"'"'30'"'"'"' >&2; exit 0`, `unknown global '30'`, true},
		"not a node":   {`echo 'Object: size 32'; echo 'Error: "set-param not implemented on object 30 type:PipeWire:Interface:Core"' >&2`, "set-param not implemented", false},
		"parse error":  {`printf 'syntax error in json\nError: "set-param: invalid pod: Expected array close bracket"\n' >&2`, "invalid pod", false},
		"no pipewire":  {`echo 'Error: "failed to connect: Host is down"' >&2; exit 255`, "exit status 255; stderr: Error: \"failed to connect: Host is down\"", false},
		"warning only": {`echo 'some warning' >&2`, "", false},
	}
	for name, c := range cases {
		err := fakePWCli(t, c.script).SetVolume(ctx, 30, w)
		if c.want == "" {
			if err != nil {
				t.Errorf("%s: %v", name, err)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), "pw-cli set-param 30 Props") {
			t.Errorf("%s: %v, want %q", name, err, c.want)
		}
		if errors.Is(err, ErrNoSuchObject) != c.noSuch {
			t.Errorf("%s: errors.Is(ErrNoSuchObject) = %v", name, !c.noSuch)
		}
	}

	// Bad input never starts pw-cli.
	never := fakePWCli(t, `echo started >&2; exit 1`)
	if err := never.SetVolume(ctx, 0, w); err == nil || !strings.Contains(err.Error(), "node id 0 is PipeWire's core") {
		t.Errorf("node 0: %v", err)
	}
	if err := never.SetVolume(ctx, 30, VolumeWrite{Gain: ptr(2.0), Channels: 2}); err == nil || strings.Contains(err.Error(), "started") {
		t.Errorf("gain 2: %v", err)
	}

	// A pw-cli that never answers is cut off at the deadline.
	short, cancel2 := context.WithTimeout(ctx, 300*time.Millisecond)
	defer cancel2()
	start := time.Now()
	if err := fakePWCli(t, "exec sleep 60").SetVolume(short, 30, w); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("hung pw-cli: %v", err)
	}
	// Waiting for the child takes a minute; a slow host does not take 30 s.
	if d := time.Since(start); d > 30*time.Second {
		t.Errorf("hung pw-cli took %v to give up", d)
	}
	if err := (Remote{PWCli: filepath.Join(t.TempDir(), "missing")}).SetVolume(ctx, 30, w); err == nil {
		t.Error("a missing pw-cli wrote")
	}
}

func TestErrorLine(t *testing.T) {
	for in, want := range map[string]string{
		"":                                  "",
		"warning\n":                         "",
		"x\n  Error: \"a\"\nError: \"b\"\n": `Error: "a"`,
		"an Error: in the middle":           "",
	} {
		if got := errorLine([]byte(in)); got != want {
			t.Errorf("%q: %q, want %q", in, got, want)
		}
	}
}

func TestObservedAndChannels(t *testing.T) {
	g, err := ParseDump(readFile(t, "testdata/pw-dump-playing.json"))
	if err != nil {
		t.Fatal(err)
	}
	n, _ := g.NodeByName("liken.audio.card0-pcm3")
	o := n.Observed()
	if o.Volume == nil || *o.Volume != 100 || o.Mute == nil || *o.Mute || o.Stale {
		t.Errorf("running node observed %+v, want 100%%, unmuted, current", o)
	}
	if c := n.VolumeChannels(); c != 2 {
		t.Errorf("channels %d", c)
	}

	cases := []struct {
		name   string
		node   Node
		volume *int
		mute   *bool
		stale  bool
		chans  int
	}{
		{"no props", Node{HasRun: true}, nil, nil, false, 2},
		{"never ran", Node{Volume: &Volume{ChannelVolumes: []float64{0.4000000059604645, 0.4}, Mute: ptr(true)}}, ptr(40), ptr(true), true, 2},
		{"ran, suspended", Node{State: NodeStateSuspended, HasRun: true, Volume: &Volume{ChannelVolumes: []float64{0.07}}}, ptr(7), nil, false, 1},
		{"negative", Node{Volume: &Volume{ChannelVolumes: []float64{-1}, Mute: ptr(false)}}, nil, ptr(false), true, 1},
		{"huge", Node{Volume: &Volume{ChannelVolumes: []float64{1e300}}}, nil, nil, true, 1},
		{"format", Node{Volume: &Volume{Mute: ptr(false)}, Format: &Format{Channels: 6}}, nil, ptr(false), true, 6},
		{"property", Node{Props: map[string]string{PropChannels: "8"}, Format: &Format{Channels: 99}}, nil, nil, false, 8},
		{"bad property", Node{Props: map[string]string{PropChannels: "65"}}, nil, nil, false, 2},
	}
	for _, c := range cases {
		o := c.node.Observed()
		if !eqPtr(o.Volume, c.volume) || !eqPtr(o.Mute, c.mute) || (c.node.Volume != nil && o.Stale != c.stale) {
			t.Errorf("%s: observed %v %v stale %v; want %v %v %v", c.name, show(o.Volume), show(o.Mute), o.Stale, show(c.volume), show(c.mute), c.stale)
		}
		if got := c.node.VolumeChannels(); got != c.chans {
			t.Errorf("%s: %d channels, want %d", c.name, got, c.chans)
		}
	}
}

func eqPtr[T comparable](a, b *T) bool { return (a == nil) == (b == nil) && (a == nil || *a == *b) }

func show[T any](p *T) any {
	if p == nil {
		return "nil"
	}
	return *p
}

func TestLinkedNodes(t *testing.T) {
	g, err := ParseDump(readFile(t, "testdata/pw-dump-playing.json"))
	if err != nil {
		t.Fatal(err)
	}
	published := map[string]bool{"liken.audio.card0-pcm3": true, "liken.audio.card1-pcm0": true, "liken.audio.gone": true}
	if got := g.LinkedNodes(published); strings.Join(got, ",") != "liken.audio.card0-pcm3,liken.audio.card1-pcm0" {
		t.Errorf("linked %v, want both sinks (one played to, one recorded from)", got)
	}
	if got := g.LinkedNodes(map[string]bool{"liken.audio.card0-pcm3": true}); len(got) != 1 {
		t.Errorf("linked %v", got)
	}
	if got := g.LinkedNodes(map[string]bool{"Dummy-Driver": true}); got != nil {
		t.Errorf("an unlinked node is linked: %v", got)
	}
	if got := g.LinkedNodes(nil); got != nil {
		t.Errorf("no names: %v", got)
	}
}

// A node keeps HasRun across the batches that reprint it, loses it with
// its id: the recorded session runs card0-pcm3 in batch 7 and idles it
// in batch 16; card1-pcm0 runs from batch 4; node id 50 is pw-record
// (running) until batch 23, then test.extra, which never runs.
func TestStreamHasRun(t *testing.T) {
	var graphs []*Graph
	if err := ReadStream(bytes.NewReader(readFile(t, "testdata/pw-dump-monitor.json")), func(g *Graph) error {
		graphs = append(graphs, g)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	ran := func(b int, name string) bool {
		n, ok := graphs[b-1].NodeByName(name)
		if !ok {
			t.Fatalf("batch %d: no %s", b, name)
		}
		return n.HasRun
	}
	for _, c := range []struct {
		batch int
		name  string
		want  bool
	}{
		{1, "liken.audio.card0-pcm3", false},
		{6, "liken.audio.card0-pcm3", false},
		{7, "liken.audio.card0-pcm3", true},
		{16, "liken.audio.card0-pcm3", true},
		{45, "liken.audio.card0-pcm3", true},
		{3, "liken.audio.card1-pcm0", false},
		{4, "liken.audio.card1-pcm0", true},
		{45, "liken.audio.card1-pcm0", true},
		{22, "pw-record", true},
		{28, "test.extra", false},
	} {
		if got := ran(c.batch, c.name); got != c.want {
			t.Errorf("batch %d: %s HasRun %v, want %v", c.batch, c.name, got, c.want)
		}
	}
	// A single dump knows only the present state.
	g, err := ParseDump(readFile(t, "testdata/pw-dump-playing.json"))
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range g.Nodes {
		if n.HasRun != (n.State == NodeStateRunning) {
			t.Errorf("dump: %s %s HasRun %v", n.Name, n.State, n.HasRun)
		}
	}
	if n, _ := g.NodeByName("Dummy-Driver"); n.HasRun {
		t.Error("a suspended node in a single dump has run")
	}
}
