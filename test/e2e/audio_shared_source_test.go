// SPDX-License-Identifier: Apache-2.0

package e2e

import (
	"fmt"
	"slices"
	"testing"
	"time"

	resourceapi "k8s.io/api/resource/v1"

	"github.com/liken-sh/operators/internal/audio"
	"github.com/liken-sh/operators/internal/audio/gate"
	"github.com/liken-sh/operators/internal/pipewire"
	"github.com/liken-sh/operators/test/e2e/kubelet"
	"github.com/liken-sh/operators/test/poll"
	"github.com/liken-sh/operators/test/pwtest"
)

// Two claims share one input (a Source) through the real scheduler (DRA
// consumable capacity) and each is prepared into its own socket. The
// microphone captures a known tone (pwtest.Options.Captures: PipeWire's
// own ALSA source reads it), and each claim records the microphone
// through its own socket at the same time: the gate lets a claim on a
// Source record it, and both recordings are the tone's own samples, in
// order, at its frequency and level. Through either claim's socket there
// is the microphone, and no trace of the other claim's recording.
func TestAudioSharedSource(t *testing.T) {
	// 997 Hz fits the one-second loop once, so no stretch of the loop
	// repeats within it and a recorded run of it has one place in it.
	const rate, channels, hz, amp = 48000, pwtest.HardwareChannels, 997, 0.5
	const frame = 2 * channels
	tone := pwtest.Tone(hz, amp, rate, channels, time.Second)
	mic := node + "-pci-0000-00-1f-3-microphone-capture"
	a := startAudioNode(t, audioNodeOptions{Captures: map[string][]byte{mic: tone}})
	ctx, cluster, client, pw := a.ctx, a.cluster, a.client, a.pw
	var nodeName string
	for _, o := range a.outputs {
		if o.Output == mic {
			nodeName = o.Name
		}
	}
	waitForDriverSlice(t, ctx, cluster, audio.DriverName, func(s *resourceapi.ResourceSlice) bool {
		for _, d := range s.Spec.Devices {
			if d.Name == mic {
				c, ok := d.Capacity[audio.CapacityStreams]
				return !deviceTainted(s, mic) && d.AllowMultipleAllocations != nil && *d.AllowMultipleAllocations && ok && c.Value.Value() == audio.MaxStreams
			}
		}
		return false
	})

	kl := kubelet.New(client, a.dra.RegistrarDir)
	t.Cleanup(func() { kl.Close() })
	plugin, err := kl.Discover(ctx, audio.DriverName)
	must(t, err)
	names := []string{"minutes", "captions"} // two consumers of one meeting room's microphone
	claims := map[string]*resourceapi.ResourceClaim{}
	shares := map[string]bool{}
	for _, name := range names {
		c := createWithPod(t, ctx, cluster, shareClaim(name, "audio-source", "source", mic), name)
		r := c.Status.Allocation.Devices.Results[0]
		if consumed := r.ConsumedCapacity[audio.CapacityStreams]; r.Device != mic || r.ShareID == nil || consumed.Value() != audio.DefaultStreams {
			t.Fatalf("claim %s: allocated %+v, want a share of %s consuming %d streams", name, r, mic, audio.DefaultStreams)
		}
		shares[string(*r.ShareID)] = true
		prepareOK(t, ctx, plugin, c)
		claims[name] = c
	}
	if len(shares) != 2 {
		t.Errorf("the two claims got the same share %v", shares)
	}
	files, _ := gate.Claims(pw.RuntimeDir)
	for _, name := range names {
		if f := files[string(claims[name].UID)]; !slices.Equal(f.Nodes, []string{nodeName}) || f.Streams != audio.DefaultStreams {
			t.Errorf("claim %s's file: %+v, want node %s and %d streams", name, f, nodeName, audio.DefaultStreams)
		}
	}

	// Each claim records the microphone through its own socket.
	recs := map[string]*pwtest.Recording{}
	for _, name := range names {
		rec, err := pw.RecordThrough(ctx, gate.SocketPath(pw.RuntimeDir, string(claims[name].UID)), nodeName, rate, channels)
		must(t, err)
		recs[name] = rec
		t.Cleanup(func() { _, _ = rec.Stop() })
	}
	var streamOf map[string]uint32 // claim UID: its recording's node id
	poll.Until(t, "both claims' recordings linked from the microphone", 60*time.Second, func() bool {
		var g *pipewire.Graph
		streamOf, g = claimStreams(t, ctx, pw)
		if len(streamOf) != 2 {
			return false
		}
		src, ok := g.NodeByName(nodeName)
		if !ok {
			return false
		}
		from := map[uint32]bool{}
		for _, l := range g.LinksOf(src.ID) {
			if l.OutputNode == src.ID {
				from[l.InputNode] = true
			}
		}
		return from[streamOf[string(claims[names[0]].UID)]] && from[streamOf[string(claims[names[1]].UID)]]
	})
	// Two seconds more of each, recorded while both run.
	const more = 2 * rate * frame
	linked := map[string]int{}
	for name, rec := range recs {
		linked[name] = rec.Recorded()
	}
	poll.Until(t, "two seconds more of both recordings", 60*time.Second, func() bool {
		for name, rec := range recs {
			if rec.Recorded() < linked[name]+more {
				return false
			}
		}
		return true
	})

	// Through each claim's socket: the microphone and the claim's own
	// recording, no trace of the other's.
	for i, name := range names {
		other := names[1-i]
		checkClaimView(t, ctx, pw, fmt.Sprintf("the %s'", name), string(claims[name].UID),
			streamOf[string(claims[name].UID)], nodeName, streamOf[string(claims[other].UID)])
	}

	// Both recordings are the tone's samples, at its frequency and level.
	level := map[string]float64{}
	for _, name := range names {
		pcm, err := recs[name].Stop()
		if err != nil {
			t.Fatalf("the %s' recording: %v", name, err)
		}
		runs := pwtest.LoopRuns(pcm, tone, frame)
		x := pwtest.Samples(pcm, channels, 0)
		level[name] = pwtest.ToneLevel(x[runs.Lead:], rate, hz)
		peak := pwtest.PeakFrequency(x[runs.LongestAt:runs.LongestAt+runs.Longest], rate, hz-100, hz+100)
		t.Logf("FIGURE the %s' recording: %d frames: %d of silence first, %d runs of the microphone's tone (longest %d frames, the first from frame %d of its loop), %d frames outside, %d too few to tell at the end; peak at %d Hz, level %.4f (the microphone captures %d Hz at %.1f)",
			name, runs.Frames, runs.Lead, runs.Runs, runs.Longest, runs.Start, runs.Outside, runs.Tail, peak, level[name], hz, amp)
		if runs.Runs == 0 || runs.Outside > 0 {
			t.Errorf("the %s' recording holds %d frames that are not the microphone's samples, of %d", name, runs.Outside, runs.Frames)
		}
		if peak != hz {
			t.Errorf("the %s' recording peaks at %d Hz, want %d", name, peak, hz)
		}
		if d := pwtest.Decibels(level[name] / amp); d < -1 || d > 1 {
			t.Errorf("the %s' recording holds the tone at %.4f, %.1f dB from the %.1f captured", name, level[name], d, amp)
		}
	}
	if d := pwtest.Decibels(level[names[0]] / level[names[1]]); d < -1 || d > 1 {
		t.Errorf("the recordings' levels differ by %.1f dB", d)
	}
}
