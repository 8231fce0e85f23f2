// SPDX-License-Identifier: Apache-2.0

package pwtest

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/liken-sh/operators/internal/pipewire"
)

// A capture output on ALSA's null device captures silence. For a test
// that needs a source to carry a known signal, Options.Captures puts
// ALSA's file PCM plugin in front of the null device (type file,
// alsa-lib's src/pcm/pcm_file.c): on capture it reads its "infile" in
// place of what its slave captured, raw, in the format the PCM was
// opened with. So PipeWire's own ALSA source node, as a card's would,
// opens a PCM, is driven, converts and delivers what it reads.
//
// The infile is a named pipe pwtest keeps full of the test's PCM, over
// and over, so the source carries the signal for as long as the test
// runs. The plugin opens it at snd_pcm_open, blocking until a writer has
// it open, and reads it with read(2) in its readi, keeping what it gets.
// The feeder holds the pipe open for reading and writing, so PipeWire's
// open never waits; it writes whole frames, and with a frame size that
// divides a pipe's 4096-byte page every read ends on a frame, the
// writer's pages and the reader's requests being whole frames. The pipe
// holds CapturePipeSize bytes, over 5 s of 48 kHz stereo where a pipe's
// default 64 KiB is a third of a second: the feeder is a goroutine of
// the test, and a loaded host can keep it off the CPU for longer than
// that. A read that came up short would leave PipeWire's buffer partly
// stale: its ALSA source does not look at what readi returns
// (spa/plugins/alsa/alsa-pcm.c, push_frames).
//
// The node reads with readi, not through mmap (api.alsa.disable-mmap):
// through mmap (PipeWire 1.4.2, alsa-lib 1.2.8) each 1024-frame quantum
// recorded was a run of the PCM of its own, frames skipped between them,
// and the tone's peak moved from 997 to 995 Hz. With the null device
// always reporting a full buffer, PipeWire's follower drops the excess
// at every cycle (its "resync"), and only the frames read through readi
// come from the infile in order. alsa-lib 1.2.8 loads
// $XDG_CONFIG_HOME/alsa/asoundrc (its alsa.conf's hooks), which is where
// the PCMs are defined.

// CaptureFormat is the sample format a fed capture output is declared
// with (audio.format): signed 16-bit little endian, the format the PCM
// given in Options.Captures is in. Without it PipeWire opens the null
// device in a format of its choosing and reads the bytes as that.
const CaptureFormat = "S16LE"

// CapturePipeSize is the size in bytes of the pipe a fed capture
// output's PCM reads (F_SETPIPE_SZ): 1 MiB, what Linux lets any user
// ask for by default (/proc/sys/fs/pipe-max-size).
const CapturePipeSize = 1 << 20

// pipePage is the size of one page of a pipe's buffer on Linux.
const pipePage = 4096

// alsaConfigPath is where alsa-lib reads a user's configuration from
// under XDG_CONFIG_HOME, relative to it.
const alsaConfigPath = "alsa/asoundrc"

// capturePCMName is the ALSA PCM name of the i-th fed capture output.
func capturePCMName(i int) string { return fmt.Sprintf("liken_pwtest_capture_%d", i) }

// feed is one named pipe kept full of one PCM.
type feed struct {
	pipe *os.File
	done chan struct{}
}

// feedCaptures declares every output of outputs named in captures on a
// PCM of its own that captures what captures gives for it, writes those
// PCMs' ALSA configuration under configHome, and starts feeding the
// named pipes it makes in dir. It returns the outputs to declare and the
// feeders, to close when PipeWire has stopped. An output named in
// captures must be a capture output with a rate; with no channel count
// it gets HardwareChannels, and its PCM must be whole frames of that
// many channels of CaptureFormat, not empty, with a frame size that
// divides 4096. A name that is no output's is an error too.
func feedCaptures(dir, configHome string, outputs []pipewire.Output, captures map[string][]byte) ([]pipewire.Output, []*feed, error) {
	if len(captures) == 0 {
		return outputs, nil, nil
	}
	out := make([]pipewire.Output, len(outputs))
	var conf strings.Builder
	type fifo struct {
		path string
		pcm  []byte
	}
	var fifos []fifo
	found := 0
	for i, o := range outputs {
		out[i] = o
		pcm, ok := captures[o.Name]
		if !ok {
			continue
		}
		found++
		o = paced(o)
		frame := 2 * o.Channels
		switch {
		case o.Direction != pipewire.Capture:
			return nil, nil, fmt.Errorf("captures: %s is a playback output", o.Name)
		case o.Rate == 0:
			return nil, nil, fmt.Errorf("captures: %s declares no rate, so its PCM's rate is unknown", o.Name)
		case pipePage%frame != 0:
			return nil, nil, fmt.Errorf("captures: %s: a frame of %d channels (%d bytes) does not divide a pipe's %d-byte page", o.Name, o.Channels, frame, pipePage)
		case len(pcm) == 0 || len(pcm)%frame != 0:
			return nil, nil, fmt.Errorf("captures: %s: %d bytes of PCM are not whole frames of %d channels of %s", o.Name, len(pcm), o.Channels, CaptureFormat)
		}
		path := filepath.Join(dir, fmt.Sprintf("capture-%d.pcm", i))
		if err := unix.Mkfifo(path, 0o600); err != nil {
			return nil, nil, fmt.Errorf("captures: %s: %w", o.Name, err)
		}
		fifos = append(fifos, fifo{path, pcm})
		o.Path = capturePCMName(i)
		o.Extra["audio.format"] = CaptureFormat
		o.Extra["api.alsa.disable-mmap"] = "true"
		out[i] = o
		// file is where the plugin writes what it captured; it must be
		// set, and nothing reads it.
		fmt.Fprintf(&conf, "pcm.%s {\n\ttype file\n\tslave.pcm null\n\tfile %q\n\tinfile %q\n\tformat raw\n}\n",
			o.Path, os.DevNull, path)
	}
	if found != len(captures) {
		var unknown []string
		for name := range captures {
			if !slices.ContainsFunc(outputs, func(o pipewire.Output) bool { return o.Name == name }) {
				unknown = append(unknown, name)
			}
		}
		slices.Sort(unknown)
		return nil, nil, fmt.Errorf("captures: no declared output is named %s", strings.Join(unknown, ", "))
	}
	path := filepath.Join(configHome, filepath.FromSlash(alsaConfigPath))
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return nil, nil, fmt.Errorf("captures: %w", err)
	}
	if err := os.WriteFile(path, []byte(conf.String()), 0o644); err != nil {
		return nil, nil, fmt.Errorf("captures: %w", err)
	}
	var feeds []*feed
	for _, f := range fifos {
		// Open for reading and writing: it does not wait for a reader,
		// and PipeWire's open for reading then does not wait either.
		pipe, err := os.OpenFile(f.path, os.O_RDWR, 0)
		if err == nil {
			err = setPipeSize(pipe, CapturePipeSize)
			if err != nil {
				pipe.Close()
			}
		}
		if err != nil {
			closeFeeds(feeds)
			return nil, nil, fmt.Errorf("captures: %s: %w", f.path, err)
		}
		fd := &feed{pipe: pipe, done: make(chan struct{})}
		go func() {
			defer close(fd.done)
			_, _ = io.Copy(pipe, Looping(f.pcm)) // until the pipe is closed
		}()
		feeds = append(feeds, fd)
	}
	return out, feeds, nil
}

// setPipeSize makes pipe hold size bytes.
func setPipeSize(pipe *os.File, size int) error {
	raw, err := pipe.SyscallConn()
	if err != nil {
		return err
	}
	var serr error
	if err := raw.Control(func(fd uintptr) {
		_, serr = unix.FcntlInt(fd, unix.F_SETPIPE_SZ, size)
	}); err != nil {
		return err
	}
	if serr != nil {
		return fmt.Errorf("F_SETPIPE_SZ %d: %w", size, serr)
	}
	return nil
}

// closeFeeds closes the feeders' pipes and waits for them to stop.
func closeFeeds(feeds []*feed) {
	for _, f := range feeds {
		f.pipe.Close()
		<-f.done
	}
}
