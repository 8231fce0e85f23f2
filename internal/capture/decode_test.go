// SPDX-License-Identifier: Apache-2.0

package capture

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/liken-sh/operators/test/pwtest"
)

// decoded is a body decoded by Debian's own tools, not by this package.
type decoded struct {
	rate, channels int
	pcm            []byte // interleaved s16le
}

func (d decoded) frames() int { return len(d.pcm) / (2 * d.channels) }

func run(t testing.TB, stdin []byte, name string, args ...string) []byte {
	t.Helper()
	cmd := exec.Command(name, args...)
	cmd.Stdin = bytes.NewReader(stdin)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("%s %v: %v\n%s", name, args, err, stderr.String())
	}
	return out
}

func atoi(t testing.TB, s string) int {
	t.Helper()
	n, err := strconv.Atoi(strings.TrimSpace(s))
	if err != nil {
		t.Fatalf("%q: %v", s, err)
	}
	return n
}

// decodeWAV reads a WAV body with sox: soxi for the format, sox for the
// samples (the streaming sizes of an open span make sox read to the end).
func decodeWAV(t testing.TB, body []byte) decoded {
	t.Helper()
	f := filepath.Join(t.TempDir(), "tap.wav")
	if err := os.WriteFile(f, body, 0o644); err != nil {
		t.Fatal(err)
	}
	return decoded{
		rate: atoi(t, string(run(t, nil, "soxi", "-r", f))), channels: atoi(t, string(run(t, nil, "soxi", "-c", f))),
		pcm: run(t, nil, "sox", "-V1", f, "-t", "raw", "-e", "signed-integer", "-b", "16", "-L", "-"),
	}
}

// decodeFLAC reads a FLAC body with metaflac (STREAMINFO) and flac -d.
func decodeFLAC(t testing.TB, body []byte) decoded {
	t.Helper()
	f := filepath.Join(t.TempDir(), "tap.flac")
	if err := os.WriteFile(f, body, 0o644); err != nil {
		t.Fatal(err)
	}
	return decoded{
		rate: atoi(t, string(run(t, nil, "metaflac", "--show-sample-rate", f))), channels: atoi(t, string(run(t, nil, "metaflac", "--show-channels", f))),
		pcm: run(t, nil, "flac", "--silent", "-d", "-c", "--force-raw-format", "--endian=little", "--sign=signed", f),
	}
}

// decodeOpus reads an Opus body with opusinfo (the channels and the
// input rate in the OpusHead) and opusdec (at that rate).
func decodeOpus(t testing.TB, body []byte) decoded {
	t.Helper()
	dir := t.TempDir()
	f := filepath.Join(dir, "tap.opus")
	if err := os.WriteFile(f, body, 0o644); err != nil {
		t.Fatal(err)
	}
	info := string(run(t, nil, "opusinfo", f))
	var d decoded
	for _, line := range strings.Split(info, "\n") {
		line = strings.TrimSpace(line)
		if v, ok := strings.CutPrefix(line, "Channels: "); ok {
			d.channels = atoi(t, v)
		}
		if v, ok := strings.CutPrefix(line, "Original sample rate: "); ok {
			d.rate = atoi(t, strings.TrimSuffix(v, "Hz"))
		}
	}
	if d.channels == 0 || d.rate == 0 {
		t.Fatalf("opusinfo: no channels or rate in\n%s", info)
	}
	wav := filepath.Join(dir, "tap.wav")
	run(t, nil, "opusdec", "--quiet", "--rate", strconv.Itoa(d.rate), f, wav)
	d.pcm = run(t, nil, "sox", "-V1", wav, "-t", "raw", "-e", "signed-integer", "-b", "16", "-L", "-")
	return d
}

// peakFrequency returns the frequency with the largest amplitude on
// channel ch of the middle second (a scan of 100 Hz to 4 kHz in 10 Hz
// steps over 100 ms, whose bins are 10 Hz wide, then 1 Hz steps around
// the largest over the whole second), and that frequency's level: the
// largest over the recording's 100 ms windows (pwtest.PeakTone), which a
// PipeWire xrun elsewhere on a loaded machine does not lower.
func peakFrequency(d decoded, ch int) (float64, float64) {
	all := pwtest.Samples(d.pcm, d.channels, ch)
	x := all
	if len(x) > d.rate {
		x = x[len(x)/2-d.rate/2 : len(x)/2+d.rate/2]
	}
	rate := float64(d.rate)
	coarse, best, bestA := x[:min(len(x), d.rate/10)], 0.0, 0.0
	for f := 100.0; f <= 4000; f += 10 {
		if a := pwtest.Goertzel(coarse, rate, f); a > bestA {
			best, bestA = f, a
		}
	}
	bestA = 0
	for f := best - 10; f <= best+10; f++ {
		if a := pwtest.Goertzel(x, rate, f); a > bestA {
			best, bestA = f, a
		}
	}
	if bestA < 1e-4 {
		return best, bestA // silence
	}
	return best, pwtest.PeakTone(all, rate, best, d.rate/10)
}
