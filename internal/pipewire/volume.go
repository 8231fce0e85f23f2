// SPDX-License-Identifier: Apache-2.0

package pipewire

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/liken-sh/operators/internal/tailbuf"
)

// A declared node's volume is the software gain of its converter, set
// through the node's Props param. Facts measured with PipeWire 1.4.2 on
// declared api.alsa.pcm.sink and api.alsa.pcm.source nodes (ALSA's null
// device), each held by a live test in this package:
//
//   - channelVolumes is the gain applied to the samples, linear and per
//     channel: 0.4 on both channels of a sink turns a sine at 0.5 of full
//     scale into 0.2 (heard on the sink's monitor ports with
//     monitor.channel-volumes set). The master "volume" is not applied on
//     top (volume 0.5 with channelVolumes 0.4 still gave 0.2), so
//     channelVolumes alone is the node's volume. softVolumes stay at 1
//     throughout.
//   - A write to a node that has not run since PipeWire created it takes
//     effect (the first stream is heard at the written gain) but is not
//     announced: pw-dump, pw-dump -m and `pw-cli enum-params` all go on
//     showing the values the node was created with until it first runs,
//     and then show the written ones. Once a node has run, every write is
//     announced at once, whether it is running, idle or suspended. This is
//     the "idle node" bug the reference worked around by showing the last
//     value it wrote; Node.Observed says instead that such a reading is
//     stale.
//   - pw-cli set-param exits 0 when the write fails: an id no object has
//     ("unknown global"), an object that is not a node ("set-param not
//     implemented on object"), a literal that does not parse. It says so
//     on stderr in a line starting with "Error:". Only a failure to
//     connect gives a non-zero status (255, "Host is down").
//   - A literal that is not an object (a bare word) reaches the node as
//     an empty Props, which the ALSA node takes as "reset to defaults":
//     its device became hw:0 (in effect, while pw-dump still showed
//     "null") and the next stream put the node in the error state. The
//     literal here is always built from validated numbers.

// DefaultWriteTimeout bounds one pw-cli write when the caller's context
// has no deadline, as the reference bounds its writes. One write takes
// a few milliseconds here (see BenchmarkLiveSetVolume); the bound is for
// a PipeWire that accepts the connection and never answers.
const DefaultWriteTimeout = 10 * time.Second

// ErrNoSuchObject is wrapped by SetVolume's error when PipeWire has no
// object with the id given: the node went away, or the id belongs to a
// graph read before PipeWire restarted (ids are reused).
var ErrNoSuchObject = errors.New("no such PipeWire object")

// VolumeWrite is one write of a node's software volume and mute. A nil
// field is left as the node has it.
type VolumeWrite struct {
	// Gain is the linear gain written to every channel, from 0 (silence)
	// to 1 (unity); GainOfPercent converts a spec.volume. Nil leaves the
	// channel volumes as they are.
	Gain *float64
	// Channels is how many channel volumes Gain is written to, 1 to
	// MaxChannels: the node's channel count, Node.VolumeChannels. It is
	// required with Gain and ignored without it. PipeWire 1.4.2 fits a
	// list of another length to the node's channels (one value was
	// applied to both channels of a stereo node, measured), so the count
	// matters only for the literal to be exact.
	Channels int
	// Mute sets the node's mute switch; nil leaves it.
	Mute *bool
}

// literal validates w and returns it as the SPA JSON object pw-cli
// parses, e.g. "{ channelVolumes: [ 0.4, 0.4 ], mute: true }".
func (w VolumeWrite) literal() (string, error) {
	if w.Gain == nil && w.Mute == nil {
		return "", errors.New("volume write: neither a gain nor a mute to write")
	}
	var fields []string
	if w.Gain != nil {
		g := *w.Gain
		if math.IsNaN(g) || g < 0 || g > 1 {
			return "", fmt.Errorf("volume write: gain %v is outside 0 to 1 (linear, 1 is unity)", g)
		}
		if w.Channels < 1 || w.Channels > MaxChannels {
			return "", fmt.Errorf("volume write: %d channels, want 1 to %d", w.Channels, MaxChannels)
		}
		v := strconv.FormatFloat(g, 'f', -1, 64)
		if !strings.Contains(v, ".") {
			v += ".0" // a float literal, whatever pw-cli makes of "1"
		}
		vs := make([]string, w.Channels)
		for i := range vs {
			vs[i] = v
		}
		fields = append(fields, "channelVolumes: [ "+strings.Join(vs, ", ")+" ]")
	}
	if w.Mute != nil {
		fields = append(fields, "mute: "+strconv.FormatBool(*w.Mute))
	}
	return "{ " + strings.Join(fields, ", ") + " }", nil
}

// SetVolume writes w to the Props param of node (a node id from a Graph
// read from the same PipeWire) with `pw-cli set-param <node> Props
// <literal>`. Without a deadline on ctx it applies DefaultWriteTimeout.
//
// It returns an error, writing nothing, for a node id of 0 (PipeWire's
// core) or a VolumeWrite that is empty, has a gain outside 0 to 1 or NaN,
// or a channel count outside 1 to MaxChannels. It returns an error
// quoting the end of pw-cli's stderr when pw-cli cannot start, exits
// non-zero, times out, or prints an "Error:" line; when that line says
// the id is unknown the error wraps ErrNoSuchObject.
//
// A nil error means PipeWire accepted the write, not that a reading shows
// it yet: see Node.Observed for a node that has never run.
func (r Remote) SetVolume(ctx context.Context, node uint32, w VolumeWrite) error {
	if node == 0 {
		return errors.New("volume write: node id 0 is PipeWire's core, not a node")
	}
	lit, err := w.literal()
	if err != nil {
		return err
	}
	return r.setParam(ctx, node, "Props", lit)
}

// setParam runs `pw-cli set-param <id> <param> <literal>` (runPwCli).
func (r Remote) setParam(ctx context.Context, object uint32, param, lit string) error {
	return r.runPwCli(ctx, "set-param", strconv.FormatUint(uint64(object), 10), param, lit)
}

// runPwCli runs pw-cli once with args, bounded by DefaultWriteTimeout
// when ctx has no deadline. pw-cli exits 0 from most failures, printing
// them on stderr (and on stdout only the param it sends), so its stderr
// is read for an "Error:" line: one naming an unknown global wraps
// ErrNoSuchObject. Every error starts with the command line run.
func (r Remote) runPwCli(ctx context.Context, args ...string) error {
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, DefaultWriteTimeout)
		defer cancel()
	}
	cmd := r.tool(ctx, r.pwCli(), args...)
	stderr := tailbuf.New(2048)
	cmd.Stderr = stderr
	what := "pw-cli " + strings.Join(args, " ")
	if err := cmd.Run(); err != nil {
		if ctx.Err() != nil {
			err = fmt.Errorf("%w (%v)", ctx.Err(), err)
		}
		return fmt.Errorf("%s: %w%s", what, err, stderrQuote(stderr))
	}
	if line := errorLine(stderr.Bytes()); line != "" {
		if strings.Contains(line, "unknown global") {
			return fmt.Errorf("%s: %w: %s", what, ErrNoSuchObject, line)
		}
		return fmt.Errorf("%s: %s", what, line)
	}
	return nil
}

// errorLine returns the first line of pw-cli's output that reports a
// failure, or "". pw-cli starts such lines with "Error:" (a parse error
// comes as two lines, the second of them one of these).
func errorLine(out []byte) string {
	for _, line := range bytes.Split(out, []byte("\n")) {
		line = bytes.TrimSpace(line)
		if bytes.HasPrefix(line, []byte("Error:")) {
			return string(line)
		}
	}
	return ""
}

// GainOfPercent returns the linear gain for a volume in percent of unity
// (a Sink's spec.volume): 40 is 0.4 on every channel. The mapping is
// linear because the spec says "percent of unity" and channelVolumes is
// a linear gain (measured above); it is not the cubic curve desktop
// mixers show. A percent outside 0 to 100 is an error.
func GainOfPercent(percent int) (float64, error) {
	if percent < 0 || percent > 100 {
		return 0, fmt.Errorf("volume %d%% is outside 0 to 100", percent)
	}
	return float64(percent) / 100, nil
}

// PercentOfGain returns a linear gain in percent of unity, rounded to
// the nearest whole percent: PipeWire keeps gains as 32-bit floats (0.4
// reads back as 0.4000000059604645), and every percent from 0 to 100
// survives the round trip. A gain above 1 (another client may write up
// to channelmix.max-volume, 10) gives more than 100.
func PercentOfGain(gain float64) int { return int(math.Round(gain * 100)) }

// maxObservedGain bounds the gains Observed turns into a percent, far
// above PipeWire's own bound (channelmix.max-volume, 10), so that a
// nonsense number in a dump cannot overflow the conversion.
const maxObservedGain = 1e6

// Observed is a node's software volume and mute as a reading of the
// graph shows them, in the units of a Sink's spec.
type Observed struct {
	// Volume is the first channel's gain (channelVolumes[0]) in percent
	// of unity, rounded (PercentOfGain); the spec sets every channel
	// alike. Nil when the node reports no channel volumes, or a gain that
	// is negative or not a number.
	Volume *int
	// Mute is the mute switch; nil when the node reports none.
	Mute *bool
	// Stale is true when the node has not been seen running (Node.HasRun),
	// so PipeWire 1.4.2 may still be showing the values the node was
	// created with while a later write is already in effect (see the
	// facts above). A status should not present a stale reading as what
	// is set; it becomes current the first time the node runs.
	Stale bool
}

// Observed returns n's volume and mute as read, and whether the reading
// is stale.
func (n Node) Observed() Observed {
	var o Observed
	if n.Volume == nil {
		return o
	}
	if cv := n.Volume.ChannelVolumes; len(cv) > 0 && cv[0] >= 0 && cv[0] <= maxObservedGain {
		p := PercentOfGain(cv[0])
		o.Volume = &p
	}
	if n.Volume.Mute != nil {
		m := *n.Volume.Mute
		o.Mute = &m
	}
	o.Stale = !n.HasRun
	return o
}

// VolumeChannels returns how many channel volumes a write to n should
// carry: the length of its channelVolumes when it reports them, else the
// channels of its negotiated format, else its audio.channels property,
// else 2 (PipeWire's default for a node it knows nothing of). Counts
// outside 1 to MaxChannels are passed over.
func (n Node) VolumeChannels() int {
	if n.Volume != nil {
		if c := len(n.Volume.ChannelVolumes); c >= 1 && c <= MaxChannels {
			return c
		}
	}
	if n.Format != nil && n.Format.Channels >= 1 && n.Format.Channels <= MaxChannels {
		return n.Format.Channels
	}
	if c, ok := propInt(n.Props, PropChannels); ok && c >= 1 && c <= MaxChannels {
		return c
	}
	return 2
}
