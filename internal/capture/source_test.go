// SPDX-License-Identifier: Apache-2.0

package capture

import (
	"context"
	"math"
	"net/http"
	"testing"
	"time"

	"github.com/liken-sh/operators/internal/captureapi"
	"github.com/liken-sh/operators/internal/pipewire"
	"github.com/liken-sh/operators/test/pwtest"
)

// The Source the test taps: a virtual source (pw-loopback, whose capture
// side is a sink to play into and whose playback side is an Audio/Source)
// carrying the properties the declaration gives a capture PCM's node, so
// that what is played into it is what the source hears.
const (
	sourceName  = "desk-usb-0d8c-0014-1-capture"
	sourceNode  = "liken.audio.usb-0d8c-0014-1-capture"
	sourceInput = "capture-test.into-source"
	sourceRate  = 48000
	sourceChans = 1
)

func startVirtualSource(t *testing.T, pw *pwtest.Daemons) {
	t.Helper()
	cmd := pw.Command(context.Background(), "pw-loopback", "--channels", "1", "--channel-map", "[ MONO ]",
		"--capture-props", "{ media.class = Audio/Sink node.name = "+sourceInput+" audio.rate = 48000 }",
		"--playback-props", "{ media.class = Audio/Source node.name = "+sourceNode+" audio.rate = 48000 "+
			pipewire.PropCard+" = 9 "+pipewire.PropPCM+" = 0 "+pipewire.PropOutput+" = "+sourceName+" }")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	waitFor(t, "the virtual source", func() bool {
		g, err := pw.Remote().Dump(context.Background())
		if err != nil {
			return false
		}
		_, ok := g.NodeByName(sourceNode)
		return ok
	})
}

// TestSourceTapHearsWhatIsPlayedIntoIt: a Source's tap records the source
// itself (no monitor) at its own format, and hears the tone played into
// it.
func TestSourceTapHearsWhatIsPlayedIntoIt(t *testing.T) {
	w := newWorld(t, Config{})
	startVirtualSource(t, w.pw)
	p, err := w.pw.StartPlaying(context.Background(), sourceInput, pwtest.Tone(toneHz, toneLevel, sourceRate, sourceChans, time.Second), sourceRate, sourceChans)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Stop() })
	waitFor(t, "the player's link into the source", func() bool {
		g, err := w.pw.Remote().Dump(context.Background())
		if err != nil {
			return false
		}
		n, ok := g.NodeByName(sourceInput)
		if !ok {
			return false
		}
		for _, l := range g.LinksOf(n.ID) {
			if l.InputNode == n.ID {
				return true
			}
		}
		return false
	})
	body, resp := w.tap(t, "/v1/audio/sources/"+sourceName+"/audio?t=0.5,2.5", "audio/x-flac")
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != captureapi.FLAC.MediaType {
		t.Fatalf("%d: %s", resp.StatusCode, body)
	}
	d := decodeFLAC(t, body)
	if d.rate != sourceRate || d.channels != sourceChans {
		t.Errorf("%d Hz, %d channels; the source is %d Hz, %d channel", d.rate, d.channels, sourceRate, sourceChans)
	}
	if got, want := d.frames(), 2*sourceRate; math.Abs(float64(got-want)) > quantumMax {
		t.Errorf("%d frames; want %d ± %d", got, want, quantumMax)
	}
	if f, a := peakFrequency(d, 0); math.Abs(f-toneHz) > 2 || math.Abs(a-toneLevel) > 0.05 {
		t.Errorf("peak %.0f Hz at %.4f; want %d Hz at %.2f", f, a, toneHz, toneLevel)
	}
	// A Sink of that name does not exist: the class decides.
	resp = request(t, w.client, "GET", w.ts.url("/v1/audio/sinks/"+sourceName+"/audio"), testToken)
	if p := readProblem(t, resp); resp.StatusCode != 404 || !p.OfType(captureapi.ProblemNoNode) {
		t.Errorf("the source as a sink: %d %+v", resp.StatusCode, p)
	}
}
