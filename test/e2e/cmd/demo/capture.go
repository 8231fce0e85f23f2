// SPDX-License-Identifier: Apache-2.0

package main

import (
	"context"
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/liken-sh/operators/internal/audiocli"
	"github.com/liken-sh/operators/internal/pipewire"
	"github.com/liken-sh/operators/test/capturetest"
	"github.com/liken-sh/operators/test/e2e/harness"
	"github.com/liken-sh/operators/test/pwtest"
)

// demoTone is what the demo plays into the sink it then captures.
const demoTone = 997

// keptCapture is the path the demo's capture is written to, outside the
// work directory the demo removes at exit, so that the file it names can
// be opened afterwards: demo/capture.wav in the cache the hack scripts
// share, $LIKEN_CACHE, else liken under the user's cache directory
// ($XDG_CACHE_HOME, else ~/.cache; os.UserCacheDir). Each run replaces
// the file. It creates the directory, and errors when there is no cache
// directory or it cannot be created.
func keptCapture() (string, error) {
	cache := os.Getenv("LIKEN_CACHE")
	if cache == "" {
		base, err := os.UserCacheDir()
		if err != nil {
			return "", fmt.Errorf("no directory to keep the capture in (set LIKEN_CACHE): %w", err)
		}
		cache = filepath.Join(base, "liken")
	}
	dir := filepath.Join(cache, "demo")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", fmt.Errorf("the directory to keep the capture in: %w", err)
	}
	return filepath.Join(dir, "capture.wav"), nil
}

// listenDemo starts audio-api and the capture container, plays a 997 Hz
// tone into the sink, captures one second of it as the cluster's admin
// with the kubectl-liken-audio plugin's own code into the WAV file path
// (keptCapture), and prints the file and the spectrum's peak. The demo has no kubelet to
// port-forward through, so the plugin dials audio-api's loopback address
// (--api-address). stop ends the tone, audio-api and the capture
// container; with -wait they keep running until then. apiAddress is
// audio-api's loopback host:port.
func listenDemo(ctx context.Context, c *harness.Cluster, pw *pwtest.Daemons, nodeName, sink, sinkNode, path string) (stop func(), apiAddress string, err error) {
	st, err := capturetest.Start(ctx, capturetest.Options{Cluster: c, Remote: pw.Remote(), Node: nodeName})
	if err != nil {
		return nil, "", err
	}
	fmt.Printf("audio-api minted its CA (Secret liken-system/audio-api-tls, ConfigMap audio-api-ca) and the capture leaf (Secret audio-capture-server)\n")
	player, err := pw.StartPlaying(ctx, sinkNode, pwtest.Tone(demoTone, 0.5, 48000, 2, time.Second), 48000, 2)
	if err != nil {
		st.Stop()
		return nil, "", err
	}
	stop = func() { player.Stop(); st.Stop() }
	defer func() {
		if err != nil {
			stop()
		}
	}()
	if err := until(ctx, 10*time.Second, func() bool {
		g, err := pw.Remote().Dump(ctx)
		if err != nil {
			return false
		}
		n, ok := g.NodeByName(sinkNode)
		return ok && n.State == pipewire.NodeStateRunning
	}); err != nil {
		return nil, "", fmt.Errorf("the tone never played: %w", err)
	}
	args := []string{"--kubeconfig", c.Kubeconfig(), "--api-address", st.APIAddress, "--force", "capture", sink, "-t", "0,1", "-o", path}
	fmt.Printf("\n$ kubectl liken audio --api-address %s capture %s -t 0,1 -o %s\n", st.APIAddress, sink, path)
	start := time.Now()
	streams := genericiooptions.IOStreams{In: os.Stdin, Out: os.Stdout, ErrOut: os.Stderr}
	if code := audiocli.Execute(ctx, "demo", streams, args); code != 0 {
		return nil, "", fmt.Errorf("kubectl liken audio capture exited %d", code)
	}
	took := time.Since(start)
	body, err := os.ReadFile(path)
	if err != nil {
		return nil, "", err
	}
	if len(body) < 44 {
		return nil, "", fmt.Errorf("capture: %s holds %d bytes, not a WAV file", path, len(body))
	}
	channels, rate := int(binary.LittleEndian.Uint16(body[22:])), int(binary.LittleEndian.Uint32(body[24:]))
	x := pwtest.Samples(body[44:], channels, 0)
	peak := pwtest.PeakFrequency(x[len(x)/4:], float64(rate), 50, 5000)
	fmt.Printf("  through audio-api and the capture container's pw-record, in %s: %s, %d bytes, WAV %d Hz, %d channels; spectrum peak %d Hz (a %d Hz tone plays into the sink)\n",
		took.Round(10*time.Millisecond), path, len(body), rate, channels, peak, demoTone)
	return stop, st.APIAddress, nil
}
