// SPDX-License-Identifier: Apache-2.0

package main

import (
	"bytes"
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	resourceapi "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/dynamic"

	audiov1 "github.com/liken-sh/operators/api/audio/v1alpha1"
	"github.com/liken-sh/operators/internal/audio"
	"github.com/liken-sh/operators/internal/audio/gate"
	"github.com/liken-sh/operators/internal/dra"
	"github.com/liken-sh/operators/test/e2e/harness"
	"github.com/liken-sh/operators/test/pwtest"
)

// The shared headset's scene: music at musicAmp through a claim whose
// volume is musicVolume percent, for musicBefore before an announcement
// at announceAmp for announceFor, and heardPast after it. Each tone
// fits a 10 ms window a whole number of times, and the recording holds
// the 500 ms of music before the announcement and the 900 ms after it
// that pwtest.MeasureDucking reads.
const (
	musicHz, announceHz    = 400, 1000
	musicAmp, announceAmp  = 0.4, 0.2
	musicVolume            = 50
	announceFor            = time.Second
	musicBefore, heardPast = 600 * time.Millisecond, 1200 * time.Millisecond
)

// share is one claim of the shared headset as the demo shows it.
type share struct {
	claim, pod, config string
	device, shareID    string
	streams            int64
	socket, mountedAt  string
	env                []string // the container's PIPEWIRE_* variables
}

// sharedDemo claims the output device (the USB headset, node.name
// sinkNode) twice, music and announcements, each a share allocated by
// the real scheduler and prepared into a socket of its own; plays music
// through one and an announcement through the other; and prints what a
// capture of the sink shows: both tones, and the music ducked while the
// announcement plays, the figures beside their targets. It releases
// both claims at the end.
func sharedDemo(ctx context.Context, c *harness.Cluster, objs dynamic.Interface, pw *pwtest.Daemons, nodeName, device, sinkNode string, opts dra.Options) (err error) {
	fmt.Println("\n== Audio: two pods share the USB headset (DRA consumable capacity), and an announcement ducks the music")
	selector := fmt.Sprintf(`device.attributes["audio.liken.sh"].sink == %q`, device)
	shares := []share{
		{claim: "headset-music", pod: "jukebox", config: fmt.Sprintf(`{"role":%q,"volume":%d}`, gate.RoleMusic, musicVolume)},
		{claim: "headset-announcements", pod: "doorbell", config: fmt.Sprintf(`{"role":%q}`, gate.RoleAnnouncement)},
	}
	fmt.Printf("claims default/%s (opaque config %s) and default/%s (%s), each selecting %s and asking for no number of streams\n",
		shares[0].claim, shares[0].config, shares[1].claim, shares[1].config, selector)
	var claims []*resourceapi.ResourceClaim
	var containers []container
	defer func() {
		for i, rc := range claims {
			if rerr := release(ctx, c, audio.DriverName, opts.RegistrarDir, rc, shares[i].pod); rerr != nil && err == nil {
				err = rerr
			}
		}
		if err == nil {
			fmt.Println("  both pods are done: the fake kubelet unprepares their claims, and the pods and claims are deleted, which frees the headset's shares")
		}
	}()
	for i := range shares {
		s := &shares[i]
		claim := &resourceapi.ResourceClaim{
			ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: s.claim},
			Spec: resourceapi.ResourceClaimSpec{Devices: resourceapi.DeviceClaim{
				Requests: []resourceapi.DeviceRequest{{Name: "speaker", Exactly: &resourceapi.ExactDeviceRequest{DeviceClassName: "audio-sink",
					Selectors: []resourceapi.DeviceSelector{{CEL: &resourceapi.CELDeviceSelector{Expression: selector}}}}}},
				Config: []resourceapi.DeviceClaimConfiguration{{DeviceConfiguration: resourceapi.DeviceConfiguration{
					Opaque: &resourceapi.OpaqueDeviceConfiguration{Driver: audio.DriverName, Parameters: runtime.RawExtension{Raw: []byte(s.config)}}}}},
			}},
		}
		allocated, err := allocate(ctx, c, claim, s.pod, nodeName)
		if err != nil {
			return err
		}
		claims = append(claims, allocated)
		r := allocated.Status.Allocation.Devices.Results[0]
		s.device = r.Device
		if r.ShareID != nil {
			s.shareID = string(*r.ShareID)
		}
		if q, ok := r.ConsumedCapacity[audio.CapacityStreams]; ok {
			s.streams = q.Value()
		}
		if s.device != device || s.shareID == "" {
			return fmt.Errorf("claim %s: allocated %s share %q; want a share of %s", s.claim, s.device, s.shareID, device)
		}
	}
	for i, rc := range claims {
		s := &shares[i]
		ids, _, err := prepare(ctx, c, rc, audio.DriverName, opts.RegistrarDir)
		if err != nil {
			return err
		}
		ct, err := containerOf(opts.CDIDir, ids)
		if err != nil {
			return err
		}
		containers = append(containers, ct)
		s.mountedAt = audio.ContainerDir(string(rc.UID))
		s.socket, _ = ct.hostPath(ct.env("PIPEWIRE_REMOTE"))
		for _, e := range ct.spec.Process.Env {
			if strings.HasPrefix(e, "PIPEWIRE_") {
				s.env = append(s.env, e)
			}
		}
	}
	fmt.Print(sharesReport(shares, nodeName))

	duckDB, duckSet, err := sinkDucking(ctx, objs, device)
	if err != nil {
		return err
	}
	pcm, err := playShared(ctx, pw, sinkNode, containers[0], containers[1])
	if err != nil {
		return err
	}
	d, err := pwtest.MeasureDucking(pwtest.Samples(pcm, 2, 0), sceneRate, musicHz, announceHz, duckDB)
	if err != nil {
		return fmt.Errorf("the capture of the shared headset: %w", err)
	}
	x := pwtest.Samples(pcm, 2, 0)
	// 300 ms of each: before the announcement, and while it plays.
	span := func(from time.Duration) []float64 {
		i := max(0, min(len(x), int(from.Seconds()*sceneRate)))
		return x[i:min(len(x), i+int(0.3*sceneRate))]
	}
	h := heard{
		Ducking: d, duckDB: duckDB, duckSet: duckSet, length: time.Duration(len(x)) * time.Second / sceneRate,
		peakBefore: pwtest.PeakFrequency(span(d.Start-400*time.Millisecond), sceneRate, 50, 5000),
		peakDuring: pwtest.PeakFrequency(span(d.Start+200*time.Millisecond), sceneRate, 50, 5000),
	}
	// Both tones are there, each at its level: a figure the demo stands
	// on, unlike the latencies, which are shown beside their targets.
	if want := musicAmp * musicVolume / 100; pwtest.Decibels(d.Before/want) < -3 || pwtest.Decibels(d.Before/want) > 3 || d.Announcement < announceAmp/2 {
		return fmt.Errorf("the capture holds the music at %.3f (want %.2f) and the announcement at %.3f (want %.2f)", d.Before, want, d.Announcement, announceAmp)
	}
	fmt.Print(heardReport(h))
	return nil
}

// sinkDucking is the ducking of the Sink named device: its
// spec.duckDecibels, or the default when unset (set false).
func sinkDucking(ctx context.Context, objs dynamic.Interface, device string) (db int, set bool, err error) {
	u, err := objs.Resource(audiov1.SinksResource).Get(ctx, device, metav1.GetOptions{})
	if err != nil {
		return 0, false, fmt.Errorf("the Sink of %s: %w", device, err)
	}
	v, found, err := unstructured.NestedInt64(u.Object, "spec", "duckDecibels")
	if err != nil || !found {
		return gate.DefaultDuckDecibels, false, nil
	}
	return int(v), true, nil
}

// playShared records the sink's monitor while music plays through the
// first container's socket for musicBefore, then an announcement
// through the second's, then heardPast more; and returns the recording
// (interleaved stereo s16le at sceneRate). The players are the
// containers' own: PIPEWIRE_NODE and PIPEWIRE_PROPS from their CDI
// edits, PIPEWIRE_REMOTE their own socket.
func playShared(ctx context.Context, pw *pwtest.Daemons, sinkNode string, music, announcement container) ([]byte, error) {
	rec, err := pw.RecordMonitor(ctx, sinkNode, sceneRate, 2)
	if err != nil {
		return nil, err
	}
	defer rec.Stop() //nolint:errcheck // stopped below on the way that matters; this one ends it on an error
	if err := linked(ctx, pw, rec.Pid(), "the recorder of the headset's monitor"); err != nil {
		return nil, err
	}
	args := []string{"--raw", "--format", "s16", "--rate", strconv.Itoa(sceneRate), "--channels", "2", "-"}
	player, err := music.command(ctx, pw, "pw-play", args...)
	if err != nil {
		return nil, err
	}
	player.Stdin = pwtest.Looping(pwtest.Tone(musicHz, musicAmp, sceneRate, 2, time.Second))
	if err := player.Start(); err != nil {
		return nil, err
	}
	defer func() { _ = player.Process.Kill(); _ = player.Wait() }()
	if err := linked(ctx, pw, player.Process.Pid, "the music's stream"); err != nil {
		return nil, err
	}
	frame := 2 * 2
	bytesOf := func(d time.Duration) int { return int(d.Seconds()*sceneRate) * frame }
	from := rec.Recorded()
	if err := until(ctx, 30*time.Second, func() bool { return rec.Recorded() >= from+bytesOf(musicBefore) }); err != nil {
		return nil, fmt.Errorf("recording the music: %w", err)
	}
	ann, err := announcement.command(ctx, pw, "pw-play", args...)
	if err != nil {
		return nil, err
	}
	ann.Stdin = bytes.NewReader(pwtest.Tone(announceHz, announceAmp, sceneRate, 2, announceFor))
	if err := runCaptured(ann); err != nil {
		return nil, fmt.Errorf("the announcement: %w", err)
	}
	end := rec.Recorded()
	if err := until(ctx, 30*time.Second, func() bool { return rec.Recorded() >= end+bytesOf(heardPast) }); err != nil {
		return nil, fmt.Errorf("recording past the announcement: %w", err)
	}
	return rec.Stop()
}

// sharesReport is what the demo prints of the two claims sharing the
// headset: each one's share and streams, and its own socket.
func sharesReport(shares []share, nodeName string) string {
	var b strings.Builder
	for _, s := range shares {
		fmt.Fprintf(&b, "  default/%s: allocated by kube-scheduler to %s, share %s, %d of its %d streams consumed; pod default/%s bound to %s\n",
			s.claim, s.device, s.shareID, s.streams, audio.MaxStreams, s.pod, nodeName)
	}
	for _, s := range shares {
		fmt.Fprintf(&b, "  default/%s prepared into its own socket %s, mounted at %s: %s\n", s.claim, s.socket, s.mountedAt, strings.Join(s.env, " "))
	}
	return b.String()
}

// heard is what the capture of the shared headset showed.
type heard struct {
	pwtest.Ducking
	duckDB                 int
	duckSet                bool
	length                 time.Duration
	peakBefore, peakDuring int
}

// heardReport is what the demo prints of the capture of the shared
// headset: both tones, and the ducking measured beside its targets.
func heardReport(h heard) string {
	var b strings.Builder
	fmt.Fprintf(&b, "  jukebox plays %d Hz at %.2f through its socket; %.2f s into the capture, doorbell plays %d Hz at %.2f for %.1f s through its own;"+
		" pw-record captured the headset's sink (its monitor) for %.2f s\n",
		musicHz, musicAmp, h.Start.Seconds(), announceHz, announceAmp, announceFor.Seconds(), h.length.Seconds())
	fmt.Fprintf(&b, "  two tones in the capture: its strongest frequency is %d Hz before the announcement and %d Hz while it plays;"+
		" the music at %.3f of full scale (%.2f at its claim's volume, %d %%), the announcement at %.3f\n",
		h.peakBefore, h.peakDuring, h.Before, musicAmp, musicVolume, h.Announcement)
	source := "the Sink's spec.duckDecibels"
	if !h.duckSet {
		source = "the Sink's spec.duckDecibels unset: the default"
	}
	fmt.Fprintf(&b, "  the announcement ducked the music by %.1f dB (%s, %d dB) and left it at %.3f after\n", h.DuckedDB, source, h.duckDB, h.After)
	when := fmt.Sprintf("%d ms after", h.ToDuck.Milliseconds())
	if h.ToDuck < 0 {
		when = fmt.Sprintf("%d ms before (the claim gate ducks once the announcement's stream runs)", -h.ToDuck.Milliseconds())
	}
	fmt.Fprintf(&b, "    ducked %s the announcement's first samples reached the sink (target ≤ 100 ms after: %s)\n",
		when, met(h.ToDuck <= 100*time.Millisecond))
	fmt.Fprintf(&b, "    restored %d ms after its last (target ≤ 500 ms: %s)\n", h.ToRestore.Milliseconds(), met(h.ToRestore <= 500*time.Millisecond))
	return b.String()
}
