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
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/liken-sh/operators/internal/audio"
	"github.com/liken-sh/operators/internal/audio/gate"
	"github.com/liken-sh/operators/internal/dra"
	"github.com/liken-sh/operators/test/e2e/harness"
	"github.com/liken-sh/operators/test/pwtest"
)

// The home theatre's scene: one four-channel stream, frontHz on the
// front pair and rearHz on the rear, after a lead of silence; the
// surround pair's output states surroundDelay more delay than the TV's.
const (
	frontHz, rearHz = 523, 1319
	theatreAmp      = 0.3
	theatreLead     = 300 * time.Millisecond
	theatreTone     = time.Second
	surroundDelay   = 40 * time.Millisecond
	onsetLevel      = 0.05
)

// theatre is what the demo shows of the claim of a TV and its surround
// pair.
type theatre struct {
	tvDevice, surroundDevice string
	combined, tv, surround   string // PIPEWIRE_NODE and the per-request variables
	// Levels of each tone on each output, after the tone's onset there.
	frontOnTV, rearOnTV, rearOnSurround, frontOnSurround float64
	// lag is how much later the tone left the TV's sink than the
	// surround pair's.
	lag time.Duration
}

// theatreDemo claims the output with the monitor (tv, device tvDevice)
// and the analog output (surround, surroundDevice) in one claim, the
// surround pair taking the rear channels; prepares it into a combined
// sink; plays one tone to that sink through the claim's socket; and
// prints where the tone was heard and how well the outputs are aligned
// after each one's stated delay. The analog output is given a stated
// delay for the scene (a latency offset, as a receiver's would be) and
// the claim is released at the end.
func theatreDemo(ctx context.Context, c *harness.Cluster, pw *pwtest.Daemons, nodeName, tvDevice, surroundDevice string, nodeOf map[string]string, opts dra.Options) (err error) {
	fmt.Println("\n== Audio: a TV with its surround pair, one claim of two outputs played as one combined sink")
	if err := pw.SetLatencyOffset(ctx, nodeOf[surroundDevice], surroundDelay); err != nil {
		return err
	}
	defer func() {
		if rerr := pw.SetLatencyOffset(ctx, nodeOf[surroundDevice], 0); rerr != nil && err == nil {
			err = rerr
		}
	}()
	fmt.Printf("the analog output states %d ms of delay for this scene (its node's latency offset, set as a receiver's audio sync delay would be); the DisplayPort output states none\n", surroundDelay.Milliseconds())
	tvSel := `has(device.attributes["audio.liken.sh"].monitorName) && device.attributes["audio.liken.sh"].monitorName == "U28E590"`
	surroundSel := fmt.Sprintf(`device.attributes["audio.liken.sh"].sink == %q`, surroundDevice)
	request := func(name, sel string) resourceapi.DeviceRequest {
		return resourceapi.DeviceRequest{Name: name, Exactly: &resourceapi.ExactDeviceRequest{DeviceClassName: "audio-sink",
			Selectors: []resourceapi.DeviceSelector{{CEL: &resourceapi.CELDeviceSelector{Expression: sel}}}}}
	}
	claim := &resourceapi.ResourceClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "home-theatre"},
		Spec: resourceapi.ResourceClaimSpec{Devices: resourceapi.DeviceClaim{
			Requests: []resourceapi.DeviceRequest{request("tv", tvSel), request("surround", surroundSel)},
			Config: []resourceapi.DeviceClaimConfiguration{{Requests: []string{"surround"}, DeviceConfiguration: resourceapi.DeviceConfiguration{
				Opaque: &resourceapi.OpaqueDeviceConfiguration{Driver: audio.DriverName, Parameters: runtime.RawExtension{Raw: []byte(`{"position":"rear"}`)}}}}},
		}}}
	fmt.Printf("claim default/home-theatre: request tv (monitorName == \"U28E590\"), request surround (sink == %q, opaque config {\"position\":\"rear\"})\n", surroundDevice)
	allocated, err := allocate(ctx, c, claim, "living-room", nodeName)
	if err != nil {
		return err
	}
	defer func() {
		if rerr := release(ctx, c, audio.DriverName, opts.RegistrarDir, allocated, "living-room"); rerr != nil && err == nil {
			err = rerr
		}
		if err == nil {
			fmt.Println("  the pod is done: the fake kubelet unprepares the claim, which ends its combined sink, and the pod and claim are deleted")
		}
	}()
	var th theatre
	for _, r := range allocated.Status.Allocation.Devices.Results {
		switch r.Request {
		case "tv":
			th.tvDevice = r.Device
		case "surround":
			th.surroundDevice = r.Device
		}
	}
	if th.tvDevice != tvDevice || th.surroundDevice != surroundDevice {
		return fmt.Errorf("claim home-theatre: tv allocated %q, surround %q; want %s and %s", th.tvDevice, th.surroundDevice, tvDevice, surroundDevice)
	}
	ids, _, err := prepare(ctx, c, allocated, audio.DriverName, opts.RegistrarDir)
	if err != nil {
		return err
	}
	ct, err := containerOf(opts.CDIDir, ids)
	if err != nil {
		return err
	}
	th.combined, th.tv, th.surround = ct.env("PIPEWIRE_NODE"), ct.env(audio.EnvNodePrefix+"TV"), ct.env(audio.EnvNodePrefix+"SURROUND")
	if want := gate.CombinedNodeName(string(allocated.UID)); th.combined != want {
		return fmt.Errorf("claim home-theatre: PIPEWIRE_NODE=%q, want its combined sink %s", th.combined, want)
	}
	if err := until(ctx, 30*time.Second, func() bool {
		g, err := pw.Remote().Dump(ctx)
		_, ok := g.NodeByName(th.combined)
		return err == nil && ok
	}); err != nil {
		return fmt.Errorf("the combined sink %s: %w", th.combined, err)
	}
	if err := hearTheatre(ctx, pw, ct, nodeOf[tvDevice], nodeOf[surroundDevice], &th); err != nil {
		return err
	}
	fmt.Print(theatreReport(th, nodeName))
	return nil
}

// hearTheatre plays the scene's stream through the container's socket
// to its PIPEWIRE_NODE, records both outputs' monitors with one
// recorder, and fills th's levels and lag. A tone missing from an
// output is an error.
func hearTheatre(ctx context.Context, pw *pwtest.Daemons, ct container, tvNode, surroundNode string, th *theatre) error {
	rec, err := pw.RecordMonitors(ctx, "home-theatre-recorder", sceneRate, tvNode, surroundNode)
	if err != nil {
		return err
	}
	defer rec.Stop() //nolint:errcheck // stopped below on the way that matters; this one ends it on an error
	player, err := ct.command(ctx, pw, "pw-play", "--raw", "--format", "s16", "--rate", strconv.Itoa(sceneRate), "--channels", "4", "--channel-map", pwtest.FrontRearMap, "-")
	if err != nil {
		return err
	}
	player.Stdin = bytes.NewReader(pwtest.FrontRear(frontHz, rearHz, theatreAmp, sceneRate, theatreLead, theatreTone))
	from := rec.Recorded()
	if err := runCaptured(player); err != nil {
		return fmt.Errorf("the stream to the combined sink: %w", err)
	}
	// The player ends once its samples are played; what is still in the
	// outputs' buffers is recorded past that.
	if err := until(ctx, 30*time.Second, func() bool {
		return rec.Recorded() >= from+int((theatreLead+theatreTone+300*time.Millisecond).Seconds()*sceneRate)*2*2
	}); err != nil {
		return fmt.Errorf("recording the outputs: %w", err)
	}
	pcm, err := rec.Stop()
	if err != nil {
		return err
	}
	tv, surround := pwtest.Samples(pcm, 2, 0), pwtest.Samples(pcm, 2, 1)
	tTV, tSurround := pwtest.Onset(tv, onsetLevel), pwtest.Onset(surround, onsetLevel)
	if tTV < 0 || tSurround < 0 {
		return fmt.Errorf("the tone reached the TV's output at frame %d and the surround pair's at %d (-1: never)", tTV, tSurround)
	}
	// Half a second from 100 ms after each onset.
	win := func(x []float64, at int) []float64 {
		return x[min(len(x), at+sceneRate/10):min(len(x), at+sceneRate/10+sceneRate/2)]
	}
	level := func(x []float64, at int, hz float64) float64 {
		return pwtest.PeakTone(win(x, at), sceneRate, hz, sceneRate/10)
	}
	th.frontOnTV, th.rearOnTV = level(tv, tTV, frontHz), level(tv, tTV, rearHz)
	th.rearOnSurround, th.frontOnSurround = level(surround, tSurround, rearHz), level(surround, tSurround, frontHz)
	if th.frontOnTV < theatreAmp/2 || th.rearOnSurround < theatreAmp/2 {
		return fmt.Errorf("the TV has the front tone at %.3f and the surround pair the rear tone at %.3f, want about %.1f", th.frontOnTV, th.rearOnSurround, theatreAmp)
	}
	th.lag = time.Duration(tTV-tSurround) * time.Second / sceneRate
	return nil
}

// theatreReport is what the demo prints of the claim of a TV and its
// surround pair: its allocation, its container's variables, where the
// tone was heard and the alignment beside its target.
func theatreReport(th theatre, nodeName string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "  allocated by kube-scheduler: tv → %s, surround → %s; pod default/living-room bound to %s\n", th.tvDevice, th.surroundDevice, nodeName)
	fmt.Fprintf(&b, "  prepared into one socket; the container's variables (the CDI library's injection):\n")
	fmt.Fprintf(&b, "    PIPEWIRE_NODE=%s (the claim's combined sink)\n", th.combined)
	fmt.Fprintf(&b, "    %sTV=%s\n", audio.EnvNodePrefix, th.tv)
	fmt.Fprintf(&b, "    %sSURROUND=%s\n", audio.EnvNodePrefix, th.surround)
	fmt.Fprintf(&b, "  one four-channel stream to PIPEWIRE_NODE through the claim's socket, %d Hz on the front pair and %d Hz on the rear; one recorder on both outputs' monitors:\n",
		frontHz, rearHz)
	fmt.Fprintf(&b, "    the TV plays the front tone at %.3f (the rear at %.3f), the surround pair the rear tone at %.3f (the front at %.3f)\n",
		th.frontOnTV, th.rearOnTV, th.rearOnSurround, th.frontOnSurround)
	apart := (th.lag - surroundDelay).Abs()
	fmt.Fprintf(&b, "    the tone left the TV's sink %.1f ms after the surround pair's, whose output states %d ms more delay:"+
		" after each output's stated delay they sound %.1f ms apart (target ≤ 5 ms: %s)\n",
		ms(th.lag), surroundDelay.Milliseconds(), ms(apart), met(apart <= 5*time.Millisecond))
	return b.String()
}

// ms is d in milliseconds.
func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
