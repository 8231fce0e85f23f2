// SPDX-License-Identifier: Apache-2.0

package gate_test

import (
	"bytes"
	"context"
	"math"
	"testing"
	"time"

	"github.com/liken-sh/operators/internal/audio/gate"
	"github.com/liken-sh/operators/internal/pipewire"
	"github.com/liken-sh/operators/test/poll"
	"github.com/liken-sh/operators/test/pwtest"
)

// The tones: each fits a 10 ms window a whole number of times, so one
// window's level of either is not touched by the other
// (pwtest.MeasureDucking).
const (
	musicHz, announceHz = 400, 1000
	rate                = 48000
)

// Music from one claim, an announcement from another on the same sink,
// recorded from the sink's monitor through the daemon's own socket: the
// music plays at its claim's volume, drops by the sink's ducking while
// the announcement plays and comes back after it; the announcement is
// not ducked. The latencies, from the recording, are printed beside
// their targets.
func TestAnnouncementDucksMusic(t *testing.T) {
	f := startOutputs(t, pwtest.LikeHardware([]pipewire.Output{pwtest.NullOutput(0, 3, nodeA), pwtest.NullOutput(0, 7, nodeB)}))
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	half := 50
	for _, c := range []gate.Claim{
		{UID: uidA, Nodes: []string{nodeA}, Volume: &half, Role: gate.RoleMusic},
		{UID: uidB, Nodes: []string{nodeA}, Role: gate.RoleAnnouncement},
	} {
		if err := gate.WriteClaim(f.d.RuntimeDir, c); err != nil {
			t.Fatal(err)
		}
	}
	f.waitSocket(t, uidB)
	const duck = 20
	if _, err := gate.WriteDucking(f.d.RuntimeDir, map[string]int{nodeA: duck}); err != nil {
		t.Fatal(err)
	}

	rec, err := f.d.RecordMonitor(ctx, nodeA, rate, 2)
	if err != nil {
		t.Fatal(err)
	}
	f.linkedStream(t, ctx, rec.Pid())
	music := f.d.Command(ctx, "pw-play", "--target", nodeA, "--raw", "--format", "s16", "--rate", "48000", "--channels", "2", "-")
	music.Env = append(music.Env, "PIPEWIRE_REMOTE="+gate.SocketPath(f.d.RuntimeDir, uidA))
	music.Stdin = pwtest.Looping(pwtest.Tone(musicHz, 0.4, rate, 2, time.Second))
	if err := music.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = music.Process.Kill(); _ = music.Wait() })
	f.linkedStream(t, ctx, music.Process.Pid)
	start := rec.Recorded()
	poll.Until(t, "a second of music recorded", 60*time.Second, func() bool { return rec.Recorded() >= start+4*rate })

	announce := f.d.Command(ctx, "pw-play", "--target", nodeA, "--raw", "--format", "s16", "--rate", "48000", "--channels", "2", "-")
	announce.Env = append(announce.Env, "PIPEWIRE_REMOTE="+gate.SocketPath(f.d.RuntimeDir, uidB))
	announce.Env = append(announce.Env, gate.RoleEnv(gate.RoleAnnouncement)...)
	announce.Stdin = bytes.NewReader(pwtest.Tone(announceHz, 0.2, rate, 2, 1500*time.Millisecond))
	var out pwtest.LockedBuffer
	announce.Stdout, announce.Stderr = &out, &out
	if err := announce.Start(); err != nil {
		t.Fatal(err)
	}
	stream, _ := f.linkedStream(t, ctx, announce.Process.Pid)
	if r := stream.Props["media.role"]; r != "Announcement" {
		t.Errorf("the announcement's stream has media.role %q, want the one its claim's environment stamps, Announcement", r)
	}
	if err := announce.Wait(); err != nil {
		t.Fatalf("the announcement: %v: %s", err, out.String())
	}
	f.waitLog(t, ctx, nodeA, "restored")
	end := rec.Recorded()
	poll.Until(t, "a second and a half recorded after the announcement", 60*time.Second, func() bool { return rec.Recorded() >= end+6*rate })
	pcm, err := rec.Stop()
	if err != nil {
		t.Fatal(err)
	}

	left, err := pwtest.MeasureDucking(pwtest.Samples(pcm, 2, 0), rate, musicHz, announceHz, duck)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("music before the announcement: %.3f of full scale (%.1f dB under the tone played)", left.Before, pwtest.Decibels(left.Before/0.4))
	if math.Abs(pwtest.Decibels(left.Before/0.4)-pwtest.Decibels(0.5)) > 1 {
		t.Errorf("the music plays at %.3f, want about 0.2: its claim's volume, 50 %%, of 0.4", left.Before)
	}
	if math.Abs(pwtest.Decibels(left.Announcement/0.2)) > 1 {
		t.Errorf("the announcement plays at %.3f, want about 0.2: it is not ducked", left.Announcement)
	}
	t.Logf("music during the announcement: %.4f (%.1f dB)", left.During, -left.DuckedDB)
	if math.Abs(left.DuckedDB-duck) > 2 {
		t.Errorf("the music drops by %.1f dB while the announcement plays, want about %d", left.DuckedDB, duck)
	}
	if d := pwtest.Decibels(left.After / left.Before); math.Abs(d) > 1 {
		t.Errorf("the music comes back %.1f dB from where it was", d)
	}
	right, err := pwtest.MeasureDucking(pwtest.Samples(pcm, 2, 1), rate, musicHz, announceHz, duck)
	if err != nil || math.Abs(right.DuckedDB-duck) > 2 {
		t.Errorf("the right channel's music drops by %.1f dB (%v), want about %d: the gain is on every channel", right.DuckedDB, err, duck)
	}
	t.Logf("FIGURE announcement's first samples → music ducked by %d dB: %d ms (target ≤ 100 ms; negative: ducked before them, once the stream ran)", duck, left.ToDuck.Milliseconds())
	t.Logf("FIGURE announcement's last samples → music restored: %d ms (target ≤ 500 ms)", left.ToRestore.Milliseconds())
}
