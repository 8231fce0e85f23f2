// SPDX-License-Identifier: Apache-2.0

package e2e

import (
	"bytes"
	"context"
	"encoding/binary"
	"io"
	"math"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/liken-sh/operators/test/child"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/dynamic"
	"k8s.io/klog/v2/ktesting"

	"github.com/liken-sh/operators/internal/captureapi"
	"github.com/liken-sh/operators/internal/pipewire"
	"github.com/liken-sh/operators/test/capturetest"
	"github.com/liken-sh/operators/test/e2e/harness"
	"github.com/liken-sh/operators/test/poll"
	"github.com/liken-sh/operators/test/pwtest"
)

// The sink a person taps in these tests: ALSA's null device at 44.1 kHz
// stereo (not PipeWire's default 48 kHz, so a tap that took the default
// shows), and the 997 Hz tone played into it.
const (
	tapSink     = "node-cap-pci-0000-00-1f-3-hdmi-3"
	tapSinkNode = "liken.audio.node-cap-hdmi-3"
	tapRate     = 44100
	toneHz      = 997
	// toneToleranceHz is how far from toneHz a tap's spectral peak may be.
	toneToleranceHz = 5
)

// playTone plays the tone into the sink until the test ends and waits
// until its stream is linked.
func playTone(t *testing.T, pw *pwtest.Daemons) {
	t.Helper()
	pcm := pwtest.Tone(toneHz, 0.5, tapRate, 2, time.Second)
	p, err := pw.StartPlaying(context.Background(), tapSinkNode, pcm, tapRate, 2)
	must(t, err)
	t.Cleanup(func() { _ = p.Stop() })
	poll.Until(t, "the tone's stream linked to the sink", 30*time.Second, func() bool {
		g, err := pw.Remote().Dump(context.Background())
		must(t, err)
		if n, ok := g.NodeByName(tapSinkNode); ok && n.State == pipewire.NodeStateRunning {
			for _, l := range g.LinksOf(n.ID) {
				if l.InputNode == n.ID {
					return true
				}
			}
		}
		return false
	})
}

// checkTone decodes interleaved s16le PCM and fails unless its spectrum
// peaks at the tone on the first channel.
func checkTone(t *testing.T, what string, pcm []byte, rate, channels int) {
	t.Helper()
	x := pwtest.Samples(pcm, channels, 0)
	if len(x) < rate/2 {
		t.Fatalf("%s: %d samples, want at least half a second", what, len(x))
	}
	x = x[len(x)/4:] // past the stream's start
	// ±5 Hz: the bins are about 1 Hz apart here, but an xrun of the
	// player or the recorder on a loaded host breaks the tone's phase and
	// moves the peak a few hertz (994 Hz once, at load 14). Anything but
	// the tone (silence, another stream) peaks far from it.
	if f := pwtest.PeakFrequency(x, float64(rate), 100, 4000); math.Abs(float64(f-toneHz)) > toneToleranceHz {
		t.Errorf("%s: spectrum peaks at %d Hz, want %d", what, f, toneHz)
	} else {
		t.Logf("%s: %d samples, spectrum peak at %d Hz", what, len(x), f)
	}
}

// wavPCM checks a streaming WAV header (PCM s16, rate, channels) and
// returns the samples after it.
func wavPCM(t *testing.T, what string, b []byte, rate, channels int) []byte {
	t.Helper()
	if len(b) < 44 || string(b[:4]) != "RIFF" || string(b[8:12]) != "WAVE" || string(b[36:40]) != "data" {
		t.Fatalf("%s: no WAV header: %q", what, b[:min(len(b), 44)])
	}
	if ch, r := int(binary.LittleEndian.Uint16(b[22:])), int(binary.LittleEndian.Uint32(b[24:])); ch != channels || r != rate {
		t.Errorf("%s: %d channels at %d Hz, want the node's %d at %d", what, ch, r, channels, rate)
	}
	return b[44:]
}

// startCaptureWorld is the capture path the test and the benchmarks run
// on: the control plane with the audio CRDs, PipeWire and WirePlumber
// with the tap sink, its Sink object on node-cap, and audio-api with a
// capture container in front of that PipeWire.
func startCaptureWorld(tb testing.TB) (context.Context, *harness.Cluster, *pwtest.Daemons, *capturetest.Stack) {
	tb.Helper()
	_, ctx := ktesting.NewTestContext(tb)
	c, err := harness.Start(ctx, harness.Options{Logf: tb.Logf})
	must(tb, err)
	tb.Cleanup(c.Stop)
	must(tb, c.ApplyCRDs(ctx, "deploy/audio/crds"))
	_, err = c.WaitForServiceAccount(ctx, "default", "default")
	must(tb, err)
	out := pwtest.NullOutput(0, 3, tapSinkNode)
	out.Output, out.Rate = tapSink, tapRate
	pw := pwtest.New(tb, pwtest.Options{Outputs: []pipewire.Output{out}})
	dyn, err := dynamic.NewForConfig(c.RESTConfig())
	must(tb, err)
	createEndpoint(tb, ctx, dyn, "Sink", tapSink, "node-cap")
	st, err := capturetest.Start(ctx, capturetest.Options{Cluster: c, Remote: pw.Remote(), Node: "node-cap"})
	must(tb, err)
	tb.Cleanup(st.Stop)
	return ctx, c, pw, st
}

// TestCaptureThroughAudioAPI plays a 997 Hz tone into a declared sink on
// real PipeWire and WirePlumber and taps it as a person would, through
// audio-api (as its ServiceAccount, with the RBAC of deploy/audio) to the
// capture container (the real server, its leaf minted by audio-api) to
// pw-record: the WAV, FLAC and Opus bodies decode to the tone at the
// node's rate and channels, and so does the plugin binary's capture.
func TestCaptureThroughAudioAPI(t *testing.T) {
	ctx, c, pw, st := startCaptureWorld(t)
	listener := serviceAccountToken(t, ctx, c, "default", "listener", "audio-api")
	bindViewer(t, ctx, c, "default", "listener")
	playTone(t, pw)
	client := st.Client(nil)
	base := "https://" + st.APIAddress + "/v1/audio/sinks/" + tapSink + "/audio"

	tap := func(ext string) []byte {
		t.Helper()
		resp := get(t, ctx, client, base+"."+ext+"?t=0,1.5", listener)
		body, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil || resp.StatusCode != http.StatusOK {
			t.Fatalf("%s tap: %d %v: %s", ext, resp.StatusCode, err, body[:min(len(body), 400)])
		}
		return body
	}
	checkTone(t, "WAV", wavPCM(t, "WAV", tap("wav"), tapRate, 2), tapRate, 2)

	dir := t.TempDir()
	decode := func(name string, body []byte, args ...string) []byte {
		t.Helper()
		in := filepath.Join(dir, name)
		must(t, os.WriteFile(in, body, 0o644))
		cmd := exec.CommandContext(ctx, args[0], append(args[1:], in)...)
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		if err := cmd.Run(); err != nil {
			t.Fatalf("%s: %v: %s", args[0], err, stderr.String())
		}
		return stdout.Bytes()
	}
	flacWAV := decode("tap.flac", tap("flac"), "flac", "--decode", "--stdout", "--silent")
	checkTone(t, "FLAC", wavPCM(t, "FLAC", flacWAV, tapRate, 2), tapRate, 2)
	checkOpus(t, ctx, dir, tap("opus"))

	// The plugin binary, as a person runs it, dialling audio-api
	// directly (this control plane has no kubelet to port-forward
	// through; the kubelet tier proves the port-forward).
	bin := child.BuildCommand(t, "github.com/liken-sh/operators/cmd/kubectl-liken-audio")
	wav := filepath.Join(dir, "now.wav")
	kube := serviceAccountToken(t, ctx, c, "default", "listener", "https://kubernetes.default.svc")
	bindClient(t, ctx, c, "default", "listener")
	cmd := exec.CommandContext(ctx, bin, "--kubeconfig="+tokenKubeconfig(t, c, kube), "--api-address="+st.APIAddress, "--force",
		"capture", tapSink, "-t", ",1.5", "-o", wav)
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("kubectl-liken-audio capture: %v\n%s", err, b)
	} else {
		t.Logf("kubectl-liken-audio: %s", strings.TrimSpace(string(b)))
	}
	body, err := os.ReadFile(wav)
	must(t, err)
	checkTone(t, "the plugin's WAV", wavPCM(t, "the plugin's WAV", body, tapRate, 2), tapRate, 2)
}

// checkOpus decodes an Ogg Opus tap with opusdec (to 48 kHz, as Opus
// always decodes) and checks the tone.
func checkOpus(t *testing.T, ctx context.Context, dir string, body []byte) {
	t.Helper()
	in, out := filepath.Join(dir, "tap.opus"), filepath.Join(dir, "opus.wav")
	must(t, os.WriteFile(in, body, 0o644))
	if b, err := exec.CommandContext(ctx, "opusdec", "--quiet", "--rate", "48000", in, out).CombinedOutput(); err != nil {
		t.Fatalf("opusdec: %v: %s", err, b)
	}
	wav, err := os.ReadFile(out)
	must(t, err)
	checkTone(t, "Opus", wavPCM(t, "Opus", wav, 48000, 2), 48000, 2)
}

// TestCaptureOfDisconnectedSink proves on real PipeWire that a tap of a
// Sink the operator publishes as disconnected starts nothing: recording a
// sink's monitor starts the sink, and PipeWire opens its PCM while the
// node runs (and closes it once WirePlumber suspends the idle node). A
// refused tap leaves the node suspended; a running open-ended tap whose
// Sink becomes disconnected ends cleanly with the reason, and the node
// is suspended again.
func TestCaptureOfDisconnectedSink(t *testing.T) {
	ctx, c, pw, st := startCaptureWorld(t)
	listener := serviceAccountToken(t, ctx, c, "default", "listener", "audio-api")
	bindViewer(t, ctx, c, "default", "listener")
	dyn, err := dynamic.NewForConfig(c.RESTConfig())
	must(t, err)
	client := st.Client(nil)
	tap := "https://" + st.APIAddress + "/v1/audio/sinks/" + tapSink + "/audio.wav"
	state := func() string {
		g, err := pw.Remote().Dump(ctx)
		if err != nil {
			return err.Error()
		}
		n, ok := g.NodeByName(tapSinkNode)
		if !ok {
			return "absent"
		}
		return n.State
	}
	waitState := func(what, want string, within time.Duration) {
		t.Helper()
		poll.WaitFor(t, ctx, what, within, func() (bool, string) {
			s := state()
			return s == want, "node " + s
		})
	}
	waitState("the idle sink suspended", pipewire.NodeStateSuspended, 30*time.Second)

	setConnected(t, ctx, dyn, tapSink, metav1.ConditionFalse, "NoMonitor", "no monitor answers on this port")
	p := problemOf(t, get(t, ctx, client, tap, listener), http.StatusConflict)
	if p["type"] != captureapi.ProblemDisconnected.URI {
		t.Errorf("tap of a disconnected Sink: %v", p)
	}
	for range 10 {
		if s := state(); s != pipewire.NodeStateSuspended {
			t.Fatalf("after a refused tap the sink's node is %s, want it left suspended", s)
		}
		time.Sleep(100 * time.Millisecond)
	}

	setConnected(t, ctx, dyn, tapSink, metav1.ConditionTrue, "MonitorPresent", "the monitor's ELD is valid")
	resp := get(t, ctx, client, tap, listener)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("tap of the connected Sink: %d", resp.StatusCode)
	}
	head := make([]byte, 16<<10)
	_, err = io.ReadFull(resp.Body, head)
	must(t, err)
	if s := state(); s != pipewire.NodeStateRunning {
		t.Errorf("while tapped the sink's node is %s, want running", s)
	}
	if ended, err := disconnectAndDrain(t, ctx, dyn, tapSink, resp); err != nil || !strings.Contains(ended, "is disconnected") {
		t.Errorf("a tap whose Sink became disconnected: body %v, trailer %q", err, ended)
	}
	waitState("the sink suspended after its tap was stopped", pipewire.NodeStateSuspended, 30*time.Second)
}
