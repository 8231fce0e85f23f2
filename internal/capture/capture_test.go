// SPDX-License-Identifier: Apache-2.0

package capture

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/liken-sh/operators/internal/captureapi"
	"github.com/liken-sh/operators/internal/pipewire"
	"github.com/liken-sh/operators/test/poll"
	"github.com/liken-sh/operators/test/pwtest"
	"github.com/liken-sh/operators/test/secretvolume"
)

// The sink the tests tap: ALSA's null device at 44.1 kHz with four
// channels, neither of them PipeWire's defaults, so a tap that took the
// defaults (48 kHz stereo) shows.
const (
	sinkName   = "desk-pci-0000-00-1f-3-analog-0"
	sinkNode   = "liken.audio.pci-0000-00-1f-3-analog-0"
	sinkRate   = 44100
	sinkChans  = 4
	toneHz     = 997
	toneLevel  = 0.5
	playChans  = 2    // the tone plays on FL and FR; RL and RR stay silent
	quantumMax = 1024 // frames: one packet at PipeWire's default quantum
)

func sinkOutput() pipewire.Output {
	o := pwtest.NullOutput(0, 0, sinkNode)
	o.Output, o.Rate, o.Channels, o.Positions = sinkName, sinkRate, sinkChans, []string{"FL", "FR", "RL", "RR"}
	return o
}

// world is PipeWire and WirePlumber with the declared sink, a tone
// playing into it, and a capture server with a leaf from ca.
type world struct {
	pw     *pwtest.Daemons
	ts     *testServer
	ca     *secretvolume.CA
	client *http.Client
}

// startPipeWire starts PipeWire and WirePlumber with the declared sink.
func startPipeWire(t *testing.T) *pwtest.Daemons {
	t.Helper()
	return pwtest.New(t, pwtest.Options{Outputs: []pipewire.Output{sinkOutput()}})
}

func newWorld(t *testing.T, cfg Config) *world {
	t.Helper()
	pw := startPipeWire(t)
	cfg.Remote = pw.Remote()
	ts := startServer(t, cfg, staticReviewer(testToken))
	ca := secretvolume.NewCA(t, "audio-api CA")
	crt, key := ca.Leaf(t, ServerName)
	secretvolume.WriteSecretVolume(t, ts.tlsDir, map[string][]byte{FileCert: crt, FileKey: key, FileCA: ca.PEM})
	if err := ts.Certificates().Load(); err != nil {
		t.Fatal(err)
	}
	return &world{pw: pw, ts: ts, ca: ca, client: ts.client(ca)}
}

// play plays the tone into the sink in its own format (so PipeWire
// neither resamples nor mixes it), on the front pair only, and waits
// until the stream is linked.
func (w *world) play(t *testing.T) {
	t.Helper()
	tone := pwtest.Samples(pwtest.Tone(toneHz, toneLevel, sinkRate, 1, time.Second), 1, 0)
	pcm := make([]byte, 0, len(tone)*sinkChans*2)
	for _, v := range tone {
		s := int16(math.Round(v * 32767))
		for ch := range sinkChans {
			if ch >= playChans {
				s = 0
			}
			pcm = append(pcm, byte(s), byte(uint16(s)>>8))
		}
	}
	p, err := w.pw.StartPlaying(context.Background(), sinkNode, pcm, sinkRate, sinkChans)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Stop() })
	poll.Until(t, "the tone's stream linked to the sink", 30*time.Second, func() bool {
		g, err := w.pw.Remote().Dump(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if n, ok := g.NodeByName(sinkNode); ok && n.State == pipewire.NodeStateRunning {
			for _, l := range g.LinksOf(n.ID) {
				if l.InputNode == n.ID {
					return true
				}
			}
		}
		return false
	})
}

func (w *world) tap(t *testing.T, path string, accept ...string) ([]byte, *http.Response) {
	t.Helper()
	resp := request(t, w.client, http.MethodGet, w.ts.url(path), testToken, accept...)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("GET %s: body: %v (after %d bytes)", path, err, len(body))
	}
	return body, resp
}

// TestTapHearsTheTone: a 997 Hz tone played into the declared sink, tapped
// for t=1,3 in each format and decoded by sox, flac and opusdec, has its
// spectrum peak at the tone on the played channels, the sink's own rate
// and channel count, and 2 s of sound within one packet.
func TestTapHearsTheTone(t *testing.T) {
	w := newWorld(t, Config{})
	w.play(t)
	for _, tc := range []struct {
		path, accept string
		want         captureapi.Format
		decode       func(testing.TB, []byte) decoded
	}{
		{"/v1/audio/sinks/" + sinkName + "/audio.wav?t=1,3", "", captureapi.WAV, decodeWAV},
		{"/v1/audio/sinks/" + sinkName + "/audio?t=1,3", "audio/flac", captureapi.FLAC, decodeFLAC},
		{"/v1/audio/sinks/" + sinkName + "/audio?t=npt:1,3&bitrate=128", "audio/ogg; codecs=opus", captureapi.Opus, decodeOpus},
	} {
		t.Run(tc.want.Name, func(t *testing.T) {
			var accept []string
			if tc.accept != "" {
				accept = []string{tc.accept}
			}
			body, resp := w.tap(t, tc.path, accept...)
			if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != tc.want.MediaType {
				t.Fatalf("%d %s: %s", resp.StatusCode, resp.Header.Get("Content-Type"), body)
			}
			if resp.Header.Get("Cache-Control") != "no-store" || !strings.HasSuffix(resp.Header.Get("Content-Location"), "/audio."+tc.want.Name) ||
				!strings.Contains(resp.Header.Get("Content-Disposition"), sinkName+"-") {
				t.Errorf("headers %v", resp.Header)
			}
			d := tc.decode(t, body)
			if d.rate != sinkRate || d.channels != sinkChans {
				t.Errorf("%d Hz, %d channels; the sink's node is %d Hz, %d channels", d.rate, d.channels, sinkRate, sinkChans)
			}
			if got, want := d.frames(), 2*sinkRate; math.Abs(float64(got-want)) > quantumMax {
				t.Errorf("%d frames (%.3f s); want 2 s (%d) ± %d", got, float64(got)/float64(sinkRate), want, quantumMax)
			}
			for ch := range sinkChans {
				f, a := peakFrequency(d, ch)
				t.Logf("channel %d: peak %.0f Hz at %.4f", ch, f, a)
				switch {
				case ch < playChans && (math.Abs(f-toneHz) > 2 || math.Abs(a-toneLevel) > 0.05):
					t.Errorf("channel %d: peak %.0f Hz at %.4f; want %d Hz at %.2f", ch, f, a, toneHz, toneLevel)
				case ch >= playChans && a > 0.01:
					t.Errorf("channel %d: %.4f at %.0f Hz on a channel nothing plays on", ch, a, f)
				}
			}
		})
	}
	waitNoChildren(t, "pw-record", "flac", "opusenc")
}

// TestTapEndsAndLeaves: a tap whose client leaves mid-stream stops
// pw-record and the encoder at once; an open tap streams until then.
func TestTapEndsAndLeaves(t *testing.T) {
	w := newWorld(t, Config{})
	w.play(t)
	for _, format := range []string{"wav", "opus", "flac"} {
		resp := request(t, w.client, http.MethodGet, w.ts.url("/v1/audio/sinks/"+sinkName+"/audio."+format), testToken)
		if resp.StatusCode != http.StatusOK {
			b, _ := io.ReadAll(resp.Body)
			t.Fatalf("%s: %d %s", format, resp.StatusCode, b)
		}
		buf := make([]byte, 4096)
		if _, err := io.ReadFull(resp.Body, buf); err != nil {
			t.Fatalf("%s: %v", format, err)
		}
		if len(children("pw-record")) != 1 {
			t.Fatalf("%s: pw-record children %v while streaming", format, children("pw-record"))
		}
		resp.Body.Close()
		w.client.CloseIdleConnections()
		waitNoChildren(t, "pw-record", "flac", "opusenc")
	}
}

// TestTapLimit: with CAPTURE_TAPS=4 the fifth concurrent tap is 503
// capture-busy with Retry-After, and a slot freed serves again.
func TestTapLimit(t *testing.T) {
	// The four taps start their pw-records at once, and each must be
	// linked within LinkDeadline to answer 200: startServer's bound,
	// generous for a loaded machine.
	w := newWorld(t, Config{Taps: 4})
	var open []*http.Response
	for i := range 4 {
		resp := request(t, w.client, http.MethodGet, w.ts.url("/v1/audio/sinks/"+sinkName+"/audio.wav"), testToken)
		if resp.StatusCode != http.StatusOK {
			b, _ := io.ReadAll(resp.Body)
			t.Fatalf("tap %d: %d %s", i+1, resp.StatusCode, b)
		}
		open = append(open, resp)
	}
	resp := request(t, w.client, http.MethodGet, w.ts.url("/v1/audio/sinks/"+sinkName+"/audio.wav"), testToken)
	p := readProblem(t, resp)
	if resp.StatusCode != 503 || !p.OfType(captureapi.ProblemCaptureBusy) || resp.Header.Get("Retry-After") == "" {
		t.Fatalf("fifth tap: %d %+v %v", resp.StatusCode, p, resp.Header)
	}
	open[0].Body.Close()
	// The slot frees when the first tap's handler has stopped its children.
	poll.WaitFor(t, context.Background(), "a tap after one left", 30*time.Second, func() (bool, string) {
		resp := request(t, w.client, http.MethodGet, w.ts.url("/v1/audio/sinks/"+sinkName+"/audio.wav?t=0,0.2"), testToken)
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		return resp.StatusCode == 200, fmt.Sprintf("%d %s", resp.StatusCode, b)
	})
	for _, r := range open[1:] {
		r.Body.Close()
	}
	w.client.CloseIdleConnections()
	waitNoChildren(t, "pw-record")
}

func readProblem(t testing.TB, resp *http.Response) *captureapi.Problem {
	t.Helper()
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	p, err := captureapi.ParseProblem(resp.StatusCode, resp.Header.Get("Content-Type"), b)
	if err != nil {
		t.Fatalf("%d: not a problem document: %v\n%s", resp.StatusCode, err, b)
	}
	return p
}

// TestBadInputChangesNothing: hostile requests get a problem document
// naming the fault, start no recorder and leave every slot free.
func TestBadInputChangesNothing(t *testing.T) {
	w := newWorld(t, Config{Taps: 1})
	tap := "/v1/audio/sinks/" + sinkName + "/audio"
	for _, tc := range []struct {
		method, path, token string
		accept              []string
		status              int
		detail              string
	}{
		{"GET", tap + "?t=61,62", testToken, nil, 400, "at most 1m0s"},
		{"GET", tap + "?t=4,2", testToken, nil, 400, "before end"},
		{"GET", tap + "?t=1&t=2", testToken, nil, 400, "2 times"},
		{"GET", tap + "?t=smpte:1:00:00:00", testToken, nil, 400, "Normal Play Time"},
		{"GET", tap + "?t=" + strings.Repeat("9", 600), testToken, nil, 400, "bytes long"},
		{"GET", tap + ".wav?bitrate=64", testToken, nil, 400, "Opus only"},
		{"GET", tap + ".opus?bitrate=2000", testToken, nil, 400, "per channel"},
		{"GET", tap, testToken, []string{strings.Repeat("audio/mpeg, ", 1000)}, 400, "at most"},
		{"GET", tap, testToken, []string{strings.Repeat("a/b,", 1000)}, 400, "more than 64"},
		{"GET", tap, testToken, []string{"audio/mpeg"}, 406, "allows none"},
		{"GET", "/v1/audio/sinks/" + sinkName + "/..%2F..%2Fsecrets", testToken, nil, 400, "slash"},
		{"GET", "/v1/audio/sinks/%2E%2E/audio", testToken, nil, 400, ".."},
		{"GET", "/v1/audio/sinks/nobody-here/audio", testToken, nil, 404, "no Audio/Sink node"},
		{"GET", "/v1/audio/sources/" + sinkName + "/audio", testToken, nil, 404, "no Audio/Source node"},
		{"GET", tap, "-", nil, 401, "No bearer token"},
		{"GET", tap, "someone-else", nil, 401, "refused"},
		{"POST", tap, testToken, nil, 405, "POST"},
		{"GET", "/v1/audio", testToken, nil, 404, "audio-api"},
	} {
		resp := request(t, w.client, tc.method, w.ts.url(tc.path), tc.token, tc.accept...)
		p := readProblem(t, resp)
		if resp.StatusCode != tc.status || !strings.Contains(p.Detail, tc.detail) || !strings.Contains(p.Instance, "#") {
			t.Errorf("%s %.80s: %d %+v; want %d with %q", tc.method, tc.path, resp.StatusCode, p, tc.status, tc.detail)
		}
		if tc.status == 401 && !strings.HasPrefix(resp.Header.Get("WWW-Authenticate"), "Bearer") {
			t.Errorf("401 without WWW-Authenticate: %v", resp.Header)
		}
		if tc.status == 405 && resp.Header.Get("Allow") != captureapi.Allow {
			t.Errorf("405 without Allow: %v", resp.Header)
		}
		if n := children("pw-record"); len(n) != 0 {
			t.Fatalf("%s %s started pw-record %v", tc.method, tc.path, n)
		}
	}
	// The one slot is still free, and HEAD and OPTIONS start nothing.
	for _, m := range []string{"HEAD", "OPTIONS"} {
		resp := request(t, w.client, m, w.ts.url(tap+".flac"), testToken)
		resp.Body.Close()
		if resp.StatusCode != map[string]int{"HEAD": 200, "OPTIONS": 204}[m] || len(children("pw-record", "flac")) != 0 {
			t.Errorf("%s: %d, children %v", m, resp.StatusCode, children("pw-record", "flac"))
		}
	}
	body, resp := w.tap(t, tap+"?t=0,0.5")
	if resp.StatusCode != 200 || len(body) != wavHeaderSize+sinkRate/2*sinkChans*2 {
		t.Errorf("a tap after the bad requests: %d, %d bytes", resp.StatusCode, len(body))
	}
}

// TestInfo: the information route names the node and the tap's format.
func TestInfo(t *testing.T) {
	w := newWorld(t, Config{})
	resp := request(t, w.client, "GET", w.ts.url("/v1/audio/sinks/"+sinkName), testToken)
	defer resp.Body.Close()
	var info captureapi.Info
	if err := json.NewDecoder(resp.Body).Decode(&info); err != nil || resp.StatusCode != 200 {
		t.Fatalf("%d %v", resp.StatusCode, err)
	}
	if info.Node != sinkNode || info.Rate != sinkRate || info.Channels != sinkChans || !info.Monitor || len(info.Formats) != 3 {
		t.Errorf("info %+v", info)
	}
	// The metrics, on the same listener and without a token.
	resp = request(t, w.client, "GET", w.ts.url("/metrics"), "-")
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	for _, want := range []string{`liken_build_info{component="audio-capture",version="test"} 1`, "audio_capture_ready 1",
		`audio_capture_failures_total{reason="limit"} 0`, "go_goroutines"} {
		if !strings.Contains(string(b), want) {
			t.Errorf("/metrics lacks %q", want)
		}
	}
}
