// SPDX-License-Identifier: Apache-2.0

package audiocli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"golang.org/x/term"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/liken-sh/operators/internal/captureapi"
	"github.com/liken-sh/operators/internal/safetext"
)

var jsonUnmarshal = json.Unmarshal

type captureOptions struct {
	*Options
	format  string
	source  bool
	time    string
	bitrate int
	output  string
	// outputSet and timeSet are whether -o and -t were given at all, so
	// that an explicitly empty one is told from none.
	outputSet, timeSet bool
}

// minSpan is the shortest bounded -t span capture asks for. A span
// shorter than one sample period holds no sample (the tap delivers
// floor(length × rate) frames) and comes back as a container header
// without audio. The plugin does not know the node's rate before the tap
// answers; one millisecond holds a sample at any rate from 1000 Hz up,
// and 8 at 8000 Hz, telephony's rate (ITU-T G.711), the lowest in
// common use.
const minSpan = time.Millisecond

func newCaptureCommand(o *Options) *cobra.Command {
	c := &captureOptions{Options: o}
	cmd := &cobra.Command{
		Use:   "capture NAME",
		Short: "Write what a Sink plays (or a Source hears) to stdout or a file",
		Long: `Streams what the Sink NAME plays, or with --source what the Source NAME hears,
in the format asked for, until the span given by -t ends or you press Ctrl-C.

A Sink is tapped at its monitor, which is before the Sink's mute and
volume: a muted Sink still captures what is sent to it.

-t and -o given empty (-t "", -o "") are errors, as is a span shorter
than 1ms, which could hold no sample at all: leave -t out to capture
until Ctrl-C.

-o PATH writes to PATH instead of stdout (-o - is stdout). Symbolic
links are followed, and a dangling one creates the file it points at. A
regular file, or a name nothing is at, is written beside it and renamed
into place once the capture ends, so a capture cut short leaves what was
there: a new file gets 0666 less your umask, a replaced one keeps its
mode. A device or FIFO (/dev/null, a named pipe) is written into as it
is, never replaced. A directory or a terminal is refused.`,
		Example: `  kubectl liken audio capture kitchen-pci-0000-00-1f-3-hdmi-3 > now.wav
  kubectl liken audio capture --format opus --source desk-usb-mic -t 10,20 -o clip.opus`,
		Args: cobra.ExactArgs(1),
		ValidArgsFunction: func(cmd *cobra.Command, args []string, toComplete string) ([]string, cobra.ShellCompDirective) {
			if len(args) > 0 {
				return nil, cobra.ShellCompDirectiveNoFileComp
			}
			return c.completeNames(cmd.Context(), c.source), cobra.ShellCompDirectiveNoFileComp
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := checkName(args[0], c.source); err != nil {
				return err
			}
			c.outputSet, c.timeSet = cmd.Flags().Changed("output"), cmd.Flags().Changed("time")
			return c.run(cmd.Context(), args[0])
		},
	}
	f := cmd.Flags()
	f.StringVar(&c.format, "format", captureapi.WAV.Name, "wav, flac or opus")
	f.BoolVar(&c.source, "source", false, "NAME is a Source (a capture input), not a Sink")
	f.StringVarP(&c.time, "time", "t", "", "the span begin,end in seconds from now (begin at most 60), as Media Fragments write it: 10,20 is from 10 s to 20 s, ,5 the first 5 s, and 5 (a begin alone) from 5 s until Ctrl-C; at least 1ms long")
	f.IntVar(&c.bitrate, "bitrate", 0, "Opus bitrate in kbit/s (6 to 256 per channel); default: the encoder's")
	f.StringVarP(&c.output, "output", "o", "", "write to `PATH` instead of stdout (- is stdout): a file is replaced once the capture ends, a device or FIFO written into, a symlink followed")
	_ = cmd.RegisterFlagCompletionFunc("format", func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
		return captureapi.FormatNames(), cobra.ShellCompDirectiveNoFileComp
	})
	return cmd
}

// checkName refuses, before anything is dialled, a name that cannot be a
// Sink's or Source's: each is named after its DRA device, and a device
// name is a DNS label (RFC 1123: at most 63 lower-case letters, digits and
// '-', starting and ending with a letter or digit).
func checkName(name string, source bool) error {
	kind := "Sink"
	if source {
		kind = "Source"
	}
	if name == "" {
		return fmt.Errorf("the %s name is empty", kind)
	}
	if errs := validation.IsDNS1123Label(name); len(errs) > 0 {
		if len(name) > safetext.MaxEcho {
			return fmt.Errorf("%s name %s is not a %s name: names are DNS labels of at most 63 characters", kind, safetext.Quote(name), kind)
		}
		return fmt.Errorf("%s name %q is not a %s name: %s", kind, name, kind, errs[0])
	}
	return nil
}

// query checks the flags before anything is dialled and returns the tap's
// format and query.
func (c *captureOptions) query() (captureapi.Format, url.Values, error) {
	f, ok := captureapi.FormatByName(c.format)
	if !ok {
		return f, nil, fmt.Errorf("--format %s: the formats are wav, flac and opus", safetext.Quote(c.format))
	}
	if c.outputSet && c.output == "" {
		return f, nil, errors.New(`-o "": the path is empty; give a file to write, or - for stdout`)
	}
	if c.timeSet && c.time == "" {
		return f, nil, errors.New(`-t "": the span is empty; leave -t out to capture until Ctrl-C, or give begin,end in seconds`)
	}
	q := url.Values{}
	if c.time != "" {
		span, err := captureapi.ParseTime(c.time)
		if err != nil {
			if len(c.time) > safetext.MaxEcho {
				return f, nil, fmt.Errorf("-t %s is not a span begin,end in seconds", safetext.Quote(c.time))
			}
			return f, nil, fmt.Errorf("-t %s: %s", echo(c.time), spanProblem(c.time, err))
		}
		if span.Bounded() && span.Length() < minSpan {
			return f, nil, fmt.Errorf("-t %s: the span lasts %v, shorter than the minimum %v: it could hold no sample (one lasts %v at PipeWire's default 48000 Hz)",
				echo(c.time), span.Length(), minSpan, time.Second/48000)
		}
		q.Set("t", c.time)
	}
	if c.bitrate != 0 {
		if !f.Bitrate {
			return f, nil, fmt.Errorf("--bitrate applies to --format opus only")
		}
		if _, err := captureapi.ParseBitrate(strconv.Itoa(c.bitrate)); err != nil {
			return f, nil, fmt.Errorf("--bitrate %s", strings.TrimPrefix(err.Error(), "bitrate="))
		}
		q.Set("bitrate", strconv.Itoa(c.bitrate))
	}
	return f, q, nil
}

func (c *captureOptions) run(ctx context.Context, name string) error {
	f, q, err := c.query()
	if err != nil {
		return err
	}
	toStdout := c.output == "" || c.output == "-"
	if toStdout {
		if fd, ok := c.Out.(interface{ Fd() uintptr }); ok && term.IsTerminal(int(fd.Fd())) {
			return errors.New("refusing to write binary audio to a terminal: redirect stdout (> now." + f.Name + ") or pass -o FILE")
		}
	}
	res := captureapi.Sinks
	if c.source {
		res = captureapi.Sources
	}
	var file *output
	if !toStdout {
		// Opened before anything is dialled, so an -o that cannot be
		// written fails at once.
		if file, err = openOutput(c.output); err != nil {
			return err
		}
		defer file.abort()
		if file.inPlace() && term.IsTerminal(int(file.f.Fd())) {
			return errors.New("-o " + echo(c.output) + " is a terminal: refusing to write binary audio to it")
		}
	}

	cl, err := c.cluster()
	if err != nil {
		return err
	}
	c.checkVersion(ctx, cl)
	client, base, stop, err := c.apiClient(ctx, cl)
	if err != nil {
		return err
	}
	defer stop()

	// Ctrl-C ends an open-ended capture cleanly: what arrived is kept.
	ctx, cancelSignals := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)
	defer cancelSignals()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, requestURL(base, captureapi.TapPath(res, name, &f), q), nil)
	if err != nil {
		return err
	}
	req.Header.Set("Accept", f.MediaType)
	resp, err := client.Do(req)
	if err != nil {
		return fmt.Errorf("reaching audio-api: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		return problemError(resp)
	}
	// The tap answered: nothing failed before the stream, so a held
	// version warning is said now rather than after a long capture.
	c.flushWarnings()

	var out io.Writer = c.Out
	if file != nil {
		out = file.f
	}
	began := time.Now()
	n, err := io.Copy(out, resp.Body)
	interrupted := ctx.Err() != nil && c.time == ""
	if ctx.Err() != nil && c.time != "" {
		// The body may also end without an error when the tap saw us
		// leave first; before the span's begin that is no span either.
		span, _ := captureapi.ParseTime(c.time) // checked by query
		if elapsed := time.Since(began); err != nil || elapsed < span.Begin {
			return c.interruptedSpan(f, span, n, elapsed, file != nil)
		}
	}
	if err != nil && !interrupted {
		// A temporary file is removed (the deferred abort): what was
		// at the name stays as it was.
		return fmt.Errorf("%w after %d bytes: %v", errCut, n, err)
	}
	to := ""
	if file != nil {
		if f.Name == captureapi.WAV.Name && !file.inPlace() {
			if err := fixWAVSizes(file.f, file.f, n); err != nil {
				return fmt.Errorf("writing the WAV header's lengths: %w", err)
			}
		}
		if err := file.commit(); err != nil {
			return err
		}
		to = " to " + echo(c.output)
		if file.final != "" && file.final != filepath.Clean(c.output) {
			to += " (" + echo(file.final) + ")"
		}
	}
	fmt.Fprintf(c.ErrOut, "%s %s: %d bytes of %s%s\n", res.Kind, name, n, f.MediaType, to)
	if why := resp.Trailer.Get(captureapi.TrailerEnded); why != "" {
		// audio-api ended the capture itself (the Sink became
		// disconnected): what arrived is kept, and the reason is an error.
		return fmt.Errorf("audio-api ended the capture: %s", shortText(why))
	}
	return nil
}

// interruptedSpan is the error of a capture of span (-t) that Ctrl-C
// ended after n bytes, elapsed after the tap answered: before the span
// began (the tap sends the container's header at once and the first audio
// only once Begin has passed), or before its end. It says what was
// written: a file (toFile) is left as it was, since a span is kept whole
// or not at all, while stdout has the n bytes already.
func (c *captureOptions) interruptedSpan(f captureapi.Format, span captureapi.Span, n int64, elapsed time.Duration, toFile bool) error {
	what := "the capture was interrupted before the span's end"
	if elapsed < span.Begin {
		what = fmt.Sprintf("the capture was interrupted before any audio arrived (the span begins %v in, the interrupt came %v in)",
			span.Begin, elapsed.Round(100*time.Millisecond))
	}
	switch {
	case toFile:
		return fmt.Errorf("%s: nothing was written to %s (what was there is as it was)", what, echo(c.output))
	case n == 0:
		return fmt.Errorf("%s: nothing was written to stdout", what)
	case elapsed < span.Begin:
		return fmt.Errorf("%s: the %d bytes on stdout are the %s header alone", what, n, f.MediaType)
	}
	return fmt.Errorf("%s: %d bytes of %s reached stdout, an incomplete span", what, n, f.MediaType)
}

// spanProblem rewords a captureapi.ParseTime error, which is written for
// the t= query parameter ("t: begin: ...", "t=V: ..."), as the clause of
// one sentence about the -t flag.
func spanProblem(v string, err error) string {
	msg := err.Error()
	msg = strings.TrimPrefix(msg, "t="+v+": ")
	for _, part := range []string{"begin", "end"} {
		if rest, ok := strings.CutPrefix(msg, "t: "+part+": "); ok {
			return "the " + part + " " + rest
		}
	}
	if rest, ok := strings.CutPrefix(msg, "t is empty"); ok {
		return "the span is empty" + rest
	}
	return msg
}
