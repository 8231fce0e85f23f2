// SPDX-License-Identifier: Apache-2.0

package e2e

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/liken-sh/operators/internal/procmem"
	"github.com/liken-sh/operators/test/capturetest"
	"github.com/liken-sh/operators/test/e2e/harness"
	"github.com/liken-sh/operators/test/pwtest"
)

// captureBench is the capture path with the tone playing into the sink:
// the control plane, PipeWire and WirePlumber, audio-api and the capture
// container, and a token of someone allowed to listen.
func captureBench(b *testing.B) (*harness.Cluster, *capturetest.Stack, string) {
	ctx, c, pw, st := startCaptureWorld(b)
	tok, err := capturetest.Token(ctx, c, "default", "listener", "audio-api")
	must(b, err)
	bindViewer(b, ctx, c, "default", "listener")
	p, err := pw.StartPlaying(context.Background(), tapSinkNode, pwtest.Tone(toneHz, 0.5, tapRate, 2, time.Second), tapRate, 2)
	must(b, err)
	b.Cleanup(func() { _ = p.Stop() })
	time.Sleep(time.Second)
	return c, st, tok
}

// BenchmarkAudioAPIFirstByte measures, for taps of a playing sink through
// audio-api (authentication, authorization, routing, TLS to the capture
// container, pw-record starting), the time from sending the request to
// the first byte of audio after the WAV header. Target: p50 ≤ 200 ms.
func BenchmarkAudioAPIFirstByte(b *testing.B) {
	_, st, tok := captureBench(b)
	client := st.Client(nil)
	url := "https://" + st.APIAddress + "/v1/audio/sinks/" + tapSink + "/audio.wav?t=0,0.5"
	var times []time.Duration
	b.ResetTimer()
	for range b.N {
		req, _ := http.NewRequest(http.MethodGet, url, nil)
		req.Header.Set("Authorization", "Bearer "+tok)
		start := time.Now()
		resp, err := client.Do(req)
		must(b, err)
		if resp.StatusCode != http.StatusOK {
			b.Fatalf("tap: %s", resp.Status)
		}
		buf := make([]byte, 45)
		if _, err := io.ReadFull(resp.Body, buf); err != nil {
			b.Fatalf("no audio byte: %v", err)
		}
		times = append(times, time.Since(start))
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
	b.StopTimer()
	slices.Sort(times)
	p50, worst := times[len(times)/2], times[len(times)-1]
	b.ReportMetric(float64(p50.Microseconds())/1000, "p50-ms")
	b.ReportMetric(float64(worst.Microseconds())/1000, "max-ms")
	fmt.Printf("time to first audio byte through audio-api over %d taps: p50 %s, max %s (target: p50 ≤ 200ms)\n",
		len(times), p50.Round(time.Millisecond), worst.Round(time.Millisecond))
}

// BenchmarkAudioAPIRSS4Taps runs the audio-operator binary's api mode as
// its own process (the same material, adopted) and relays four
// concurrent taps through it for five seconds, then reads its VmRSS and
// VmHWM. Target: under its 32 MiB request (limit 128 MiB).
func BenchmarkAudioAPIRSS4Taps(b *testing.B) {
	c, st, tok := captureBench(b)
	ctx := context.Background()
	bin := buildAudioImage(b)
	capTok, err := capturetest.Token(ctx, c, capturetest.Namespace, "audio-api", "audio-capture")
	must(b, err)
	dir := b.TempDir()
	tokenFile := filepath.Join(dir, "token")
	must(b, os.WriteFile(tokenFile, []byte(capTok), 0o600))
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	must(b, err)
	addr := lis.Addr().String()
	lis.Close()
	cmd := exec.Command(bin, "api", "-kubeconfig", c.Kubeconfig())
	cmd.Env = append(os.Environ(), "POD_NAMESPACE="+capturetest.Namespace, "API_ADDRESS="+addr, "METRICS_ADDRESS=", "CAPTURE_TOKEN_FILE="+tokenFile)
	cmd.Stderr = io.Discard
	started := time.Now()
	must(b, cmd.Start())
	b.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	client := st.Client(nil)
	url := "https://" + addr + "/v1/audio/sinks/" + tapSink + "/audio.wav?t=0,5"
	deadline := time.Now().Add(30 * time.Second)
	for {
		c, err := net.Dial("tcp", addr)
		if err == nil {
			c.Close()
			break
		}
		if time.Now().After(deadline) {
			b.Fatal("audio-api never listened")
		}
		time.Sleep(100 * time.Millisecond)
	}
	// Past the start-up window, as the Deployment is most of its life:
	// audio-api gives start-up's memory back then.
	time.Sleep(time.Until(started.Add(procmem.DefaultStartupWindow + time.Second)))
	var m memory
	for range b.N {
		var wg sync.WaitGroup
		errs := make(chan error, 4)
		for range 4 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				req, _ := http.NewRequest(http.MethodGet, url, nil)
				req.Header.Set("Authorization", "Bearer "+tok)
				resp, err := client.Do(req)
				if err != nil {
					errs <- err
					return
				}
				defer resp.Body.Close()
				if resp.StatusCode != http.StatusOK {
					errs <- fmt.Errorf("tap: %s", resp.Status)
					return
				}
				_, err = io.Copy(io.Discard, resp.Body)
				errs <- err
			}()
		}
		time.Sleep(4 * time.Second)
		m, err = memoryOf(cmd.Process.Pid)
		must(b, err)
		wg.Wait()
		close(errs)
		for err := range errs {
			must(b, err)
		}
	}
	b.ReportMetric(float64(m.RSS)/(1<<20), "rss-MiB")
	b.ReportMetric(float64(m.HWM)/(1<<20), "hwm-MiB")
	fmt.Printf("audio-api relaying 4 concurrent taps: VmRSS %.1f MiB (RssAnon %.1f), VmHWM %.1f MiB (target: under its 32 MiB request; limit 128 MiB)\n",
		float64(m.RSS)/(1<<20), float64(m.Anon)/(1<<20), float64(m.HWM)/(1<<20))
	if m.HWM > 128<<20 {
		b.Fatalf("VmHWM %d MiB is past the Deployment's 128 MiB limit", m.HWM>>20)
	}
}
