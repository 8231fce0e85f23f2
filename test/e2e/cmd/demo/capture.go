package main

import (
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"time"

	"github.com/liken-sh/operators/internal/pipewire"
	"github.com/liken-sh/operators/test/capturetest"
	"github.com/liken-sh/operators/test/e2e/harness"
	"github.com/liken-sh/operators/test/pwtest"
)

// demoTone is what the demo plays into the sink it then captures.
const demoTone = 997

// listenDemo starts audio-api and the capture container, plays a 997 Hz
// tone into the sink, captures one second of it through audio-api as the
// cluster's admin (client certificate) into a WAV file, and prints the
// file and the spectrum's peak.
func listenDemo(ctx context.Context, c *harness.Cluster, pw *pwtest.Daemons, nodeName, sink, sinkNode string) error {
	st, err := capturetest.Start(ctx, capturetest.Options{Cluster: c, Remote: pw.Remote(), Node: nodeName})
	if err != nil {
		return err
	}
	defer st.Stop()
	fmt.Printf("audio-api minted its CA (Secret liken-system/audio-api-tls, ConfigMap audio-api-ca) and the capture leaf (Secret audio-capture-server)\n")
	player, err := pw.StartPlaying(ctx, sinkNode, pwtest.Tone(demoTone, 0.5, 48000, 2, time.Second), 48000, 2)
	if err != nil {
		return err
	}
	defer player.Stop()
	if err := until(ctx, 10*time.Second, func() bool {
		g, err := pw.Remote().Dump(ctx)
		if err != nil {
			return false
		}
		n, ok := g.NodeByName(sinkNode)
		return ok && n.State == pipewire.NodeStateRunning
	}); err != nil {
		return fmt.Errorf("the tone never played: %w", err)
	}
	cert, err := capturetest.AdminCertificate(c)
	if err != nil {
		return err
	}
	start := time.Now()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "https://"+st.APIAddress+"/v1/audio/sinks/"+sink+"/audio.wav?t=0,1", nil)
	if err != nil {
		return err
	}
	resp, err := st.Client(cert).Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK || len(body) < 44 {
		return fmt.Errorf("capture: %s: %s", resp.Status, body)
	}
	path := filepath.Join(c.Dir(), "capture.wav")
	if err := os.WriteFile(path, body, 0o644); err != nil {
		return err
	}
	channels, rate := int(binary.LittleEndian.Uint16(body[22:])), int(binary.LittleEndian.Uint32(body[24:]))
	x := pwtest.Samples(body[44:], channels, 0)
	peak := pwtest.PeakFrequency(x[len(x)/4:], float64(rate), 50, 5000)
	fmt.Printf("kubectl liken audio capture %s -t 0,1 > capture.wav (through audio-api and the capture container's pw-record, in %s):\n",
		sink, time.Since(start).Round(10*time.Millisecond))
	fmt.Printf("  %s: %d bytes, WAV %d Hz, %d channels; spectrum peak %d Hz (a %d Hz tone plays into the sink)\n",
		path, len(body), rate, channels, peak, demoTone)
	return nil
}
