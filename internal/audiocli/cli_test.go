// SPDX-License-Identifier: Apache-2.0

package audiocli

import (
	"bytes"
	"io"
	"slices"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/liken-sh/operators/internal/bluetoothcli"
)

func TestImageTag(t *testing.T) {
	for ref, want := range map[string]string{
		"ghcr.io/liken-sh/audio-operator:v0.1.0":            "v0.1.0",
		"registry.example.com:5000/audio-operator:2026.1.1": "2026.1.1",
		"registry.example.com:5000/audio-operator":          "",
		"ghcr.io/liken-sh/audio-operator@sha256:abcd":       "",
		"ghcr.io/liken-sh/audio-operator:v1@sha256:abcd":    "v1",
	} {
		if got := imageTag(ref); got != want {
			t.Errorf("imageTag(%q) = %q, want %q", ref, got, want)
		}
	}
}

// Bad flags are refused before anything is dialled, naming the flag. -t
// is parsed by the capture container's own parser, so a span it would
// refuse (a begin past 60 s, an end past 100,000 hours) never leaves.
func TestCaptureFlagsRefusedFirst(t *testing.T) {
	for args, want := range map[string]string{
		"capture x --format mp3":                  "--format",
		"capture x -t 70,80":                      "-t 70,80",
		"capture x -t 5,2":                        "-t 5,2",
		"capture x -t 0,360000001":                `error: -t 0,360000001: the end "360000001" is out of range (at most 100000 hours)` + "\n",
		"capture x -t xyz":                        `error: -t xyz: the begin "xyz" is not seconds, mm:ss or h:mm:ss` + "\n",
		"capture x --format opus --bitrate 99999": "error: --bitrate 99999 kbit/s is outside 6 to 256 per channel\n",
		"capture x --bitrate 64":                  "--bitrate applies to --format opus only",
		"capture x --format opus --bitrate 2":     "--bitrate",
		"capture":                                 "accepts 1 arg",
		"completion tcsh":                         "tcsh",
	} {
		var out, errOut bytes.Buffer
		code := Execute(t.Context(), "test", genericiooptions.IOStreams{In: strings.NewReader(""), Out: &out, ErrOut: &errOut},
			append(strings.Fields(args), "--kubeconfig=/nonexistent"))
		if code != 1 || !strings.Contains(errOut.String(), want) {
			t.Errorf("%s: exit %d, stderr %q, want %q", args, code, errOut.String(), want)
		}
	}
}

func TestVersionAndCompletion(t *testing.T) {
	var out bytes.Buffer
	if code := Execute(t.Context(), "v1.2.3", genericiooptions.IOStreams{Out: &out, ErrOut: &out}, []string{"--version"}); code != 0 || out.String() != "kubectl-liken-audio v1.2.3\n" {
		t.Errorf("--version: %d %q", code, out.String())
	}
	for _, shell := range []string{"bash", "zsh", "fish", "powershell"} {
		out.Reset()
		if code := Execute(t.Context(), "v1", genericiooptions.IOStreams{Out: &out, ErrOut: &out}, []string{"completion", shell}); code != 0 || !strings.Contains(out.String(), "kubectl-liken-audio") {
			t.Errorf("completion %s: %d %.200q", shell, code, out.String())
		}
	}
	if !strings.Contains(out.String(), "Register-ArgumentCompleter") {
		t.Errorf("completion powershell: %.200q; want a PowerShell argument completer", out.String())
	}
}

// The two plugins complete for the same shells and say the same of one
// they do not know.
func TestCompletionShellsMatchTheBluetoothPlugin(t *testing.T) {
	completion := func(root *cobra.Command) *cobra.Command {
		t.Helper()
		c, _, err := root.Find([]string{"completion"})
		if err != nil || c == root {
			t.Fatalf("%s has no completion command: %v", root.Name(), err)
		}
		return c
	}
	streams := genericiooptions.IOStreams{In: strings.NewReader(""), Out: io.Discard, ErrOut: io.Discard}
	audio := completion(NewCommand("test", streams))
	bluetooth := completion(bluetoothcli.NewCommand("test", streams))
	if !slices.Equal(audio.ValidArgs, bluetooth.ValidArgs) || audio.Use != bluetooth.Use {
		t.Errorf("audio completes %v (%q), bluetooth %v (%q); want the same shells", audio.ValidArgs, audio.Use, bluetooth.ValidArgs, bluetooth.Use)
	}
	var a, b bytes.Buffer
	Execute(t.Context(), "test", genericiooptions.IOStreams{Out: io.Discard, ErrOut: &a}, []string{"completion", "tcsh"})
	bluetoothcli.Execute(t.Context(), "test", genericiooptions.IOStreams{Out: io.Discard, ErrOut: &b}, []string{"completion", "tcsh"})
	if a.String() != b.String() {
		t.Errorf("completion tcsh: audio says %q, bluetooth %q; want the same", a.String(), b.String())
	}
}

func FuzzImageTag(f *testing.F) {
	f.Add("ghcr.io/liken-sh/audio-operator:v0.1.0")
	f.Add("a:b/c@d:e")
	f.Fuzz(func(t *testing.T, ref string) {
		if tag := imageTag(ref); strings.Contains(tag, "/") || strings.Contains(tag, "@") {
			t.Fatalf("imageTag(%q) = %q", ref, tag)
		}
	})
}
