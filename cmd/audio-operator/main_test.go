// SPDX-License-Identifier: Apache-2.0

package main

import (
	"github.com/liken-sh/operators/test/child"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/liken-sh/operators/internal/audio/modes"
	"github.com/liken-sh/operators/internal/pipewire"
	"github.com/liken-sh/operators/test/e2e/harness"
	"github.com/liken-sh/operators/test/fakesys"
)

// binary builds audio-operator, and audio-driver beside it as the image
// installs them, for the test.
func binary(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	child.BuildCommandInto(t, dir, "../audio-driver")
	return child.BuildCommandInto(t, dir, ".")
}

// TestEntrypointLinksNoAPIClient: the entrypoint's own modes (the probes,
// the two sidecars) pay for no Kubernetes client, because the binary
// holds none: not client-go, not the API types.
func TestEntrypointLinksNoAPIClient(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", ".").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	for _, pkg := range strings.Fields(string(out)) {
		for _, heavy := range []string{"k8s.io/client-go", "k8s.io/api/", "k8s.io/apimachinery", "google.golang.org/protobuf"} {
			if strings.HasPrefix(pkg, heavy) {
				t.Errorf("audio-operator links %s", pkg)
			}
		}
	}
}

// TestEntrypointRunsItsModesAlone: with no audio-driver beside it, the
// entrypoint still runs a probe itself (here endpoints-registered with
// no media bus, which passes), and says which binary is missing for a
// mode it executes.
func TestEntrypointRunsItsModesAlone(t *testing.T) {
	bin := child.BuildCommand(t, ".")
	cmd := exec.Command(bin, "endpoints-registered")
	cmd.Env = []string{"PATH=" + os.Getenv("PATH")}
	if out, err := cmd.CombinedOutput(); err != nil || !strings.Contains(string(out), "no media bus") {
		t.Errorf("endpoints-registered: %v, output %q", err, out)
	}
	for _, args := range [][]string{nil, {"declare"}, {"-kubeconfig", "x", "graph-answers"}} {
		out, err := exec.Command(bin, args...).CombinedOutput()
		if err == nil || !strings.Contains(string(out), "audio-driver") {
			t.Errorf("%q: %v, output %q, want the missing audio-driver named", args, err, out)
		}
	}
}

func TestDeclareModeTakesItsFlagsAndNothingElse(t *testing.T) {
	bin := binary(t)
	root, err := harness.ModuleRoot()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	sc, err := fakesys.XPS17(root, filepath.Join(dir, "hw"))
	if err != nil {
		t.Fatal(err)
	}
	pw, wp := filepath.Join(dir, "pw"), filepath.Join(dir, "wp")
	run := func(env []string, args ...string) (string, int) {
		cmd := exec.Command(bin, args...)
		cmd.Env = append(os.Environ(), env...)
		out, _ := cmd.CombinedOutput()
		return string(out), cmd.ProcessState.ExitCode()
	}
	// Flags after the mode, as a person types them, are honoured.
	out, code := run([]string{"NODE_NAME=desk"}, "declare", "-dev-snd", sc.DevSnd, "-sys-root", sc.Sysfs,
		"-recorded-cards", filepath.Join(dir, "hw", "cards"), "-pipewire-dir", pw, "-wireplumber-dir", wp, "-alsa-path", "null", "-rate", "48000")
	if code != 0 {
		t.Fatalf("declare: exit %d\n%s", code, out)
	}
	outs, err := pipewire.ReadDeclaration(filepath.Join(pw, pipewire.DeclarationFile))
	if err != nil || len(outs) != 12 { // 8 playback, 4 capture
		t.Fatalf("declaration: %d outputs, %v", len(outs), err)
	}
	for name, c := range map[string]struct {
		env  []string
		args []string
		want string
	}{
		"stray argument":        {[]string{"NODE_NAME=desk"}, []string{"declare", "-pipewire-dir", pw, "extra"}, "unexpected arguments"},
		"no node name":          {[]string{"NODE_NAME="}, []string{"declare", "-pipewire-dir", pw}, "NODE_NAME must be set"},
		"unknown mode":          {nil, []string{"operator"}, "unknown mode"},
		"unknown flag":          {nil, []string{"declare", "-bogus"}, "-bogus"},
		"api with no namespace": {[]string{"POD_NAMESPACE="}, []string{"api"}, "POD_NAMESPACE must be set"},
		"no capture beside it":  {nil, []string{"capture"}, "audio-capture"},
		"flags before capture":  {nil, []string{"-kubeconfig", "x", "capture"}, "not flags"},
		"operator no env":       {[]string{"NODE_NAME="}, nil, "NODE_NAME must be set"},
	} {
		out, code := run(c.env, c.args...)
		if code == 0 || !strings.Contains(out, c.want) {
			t.Errorf("%s: exit %d, output %q, want an error with %q", name, code, out, c.want)
		}
	}
}

// TestCaptureModeExecutesAudioCapture: `audio-operator capture` runs the
// audio-capture binary beside it in its own process, with its
// environment: a bad CAPTURE_TAPS is audio-capture's start-up error, from
// the same pid.
func TestCaptureModeExecutesAudioCapture(t *testing.T) {
	bin := binary(t)
	child.BuildCommandInto(t, filepath.Dir(bin), "../audio-capture")
	cmd := exec.Command(bin, "capture", "-x")
	cmd.Env = []string{"PIPEWIRE_RUNTIME_DIR=/run/x", "POD_NAMESPACE=liken-system"}
	if out, _ := cmd.CombinedOutput(); cmd.ProcessState.ExitCode() != 1 || !strings.Contains(string(out), "no arguments") {
		t.Errorf("capture -x: exit %d, output %q", cmd.ProcessState.ExitCode(), out)
	}
	for _, taps := range []string{"four", "0", "-1", "33", "4.5"} {
		cmd := exec.Command(bin, "capture")
		cmd.Env = []string{"CAPTURE_TAPS=" + taps, "PIPEWIRE_RUNTIME_DIR=/run/x", "POD_NAMESPACE=liken-system"}
		out, _ := cmd.CombinedOutput()
		if cmd.ProcessState.ExitCode() != 1 || !strings.Contains(string(out), `CAPTURE_TAPS=\"`+taps+`\"`) || !strings.Contains(string(out), "1 to 32") {
			t.Errorf("CAPTURE_TAPS=%s: exit %d, output %q", taps, cmd.ProcessState.ExitCode(), out)
		}
	}
}

// TestHelpNamesTheEntrypointAndItsModes: -h, which the entrypoint hands
// to audio-driver, prints audio-operator's command line with every mode
// (the entrypoint's own included), not audio-driver's bare flag list.
func TestHelpNamesTheEntrypointAndItsModes(t *testing.T) {
	out, err := exec.Command(binary(t), "-h").CombinedOutput()
	if err != nil {
		t.Fatalf("-h: %v\n%s", err, out)
	}
	text := string(out)
	if !strings.HasPrefix(text, "usage: audio-operator ") || strings.Contains(text, "Usage of") {
		t.Errorf("-h does not start with audio-operator's usage:\n%s", text)
	}
	want := []string{"declare", "capture", "api"}
	for name := range modes.ByName {
		want = append(want, name)
	}
	for _, m := range want {
		if !strings.Contains(text, "\n  "+m+" ") {
			t.Errorf("-h lists no mode %q:\n%s", m, text)
		}
	}
}
