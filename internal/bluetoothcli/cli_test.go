// SPDX-License-Identifier: Apache-2.0

package bluetoothcli

import (
	"bytes"
	"strings"
	"testing"

	"k8s.io/cli-runtime/pkg/genericiooptions"
)

func TestVersionAndCompletion(t *testing.T) {
	var out bytes.Buffer
	streams := genericiooptions.IOStreams{Out: &out, ErrOut: &out}
	if code := Execute(t.Context(), "v1.2.3", streams, []string{"--version"}); code != 0 || out.String() != "kubectl-liken-bluetooth v1.2.3\n" {
		t.Errorf("--version: %d %q", code, out.String())
	}
	out.Reset()
	if code := Execute(t.Context(), "dev", streams, []string{"completion", "bash"}); code != 0 || !strings.Contains(out.String(), "bash completion") {
		t.Errorf("completion bash: %d %.80q", code, out.String())
	}
	out.Reset()
	if code := Execute(t.Context(), "dev", streams, []string{"pair", "--device", "gamepad", "--adapter", "00-1a-7d-da-71-13", "--server", "https://127.0.0.1:1"}); code != 1 ||
		!strings.Contains(out.String(), `--device "gamepad" is not a Bluetooth address`) {
		t.Errorf("pair --device gamepad: %d %q", code, out.String())
	}
	out.Reset()
	if code := Execute(t.Context(), "dev", streams, []string{"pair", "--device", "zz", "--kubeconfig", "/nonexistent"}); code != 1 ||
		!strings.Contains(out.String(), `--device "zz" is not a Bluetooth address`) {
		t.Errorf("pair --device zz before the kubeconfig is read: %d %q", code, out.String())
	}
	out.Reset()
	if code := Execute(t.Context(), "dev", streams, []string{"pair", "--window", "1s", "--kubeconfig", "/nonexistent"}); code != 1 ||
		!strings.Contains(out.String(), "--window 1s is outside 15s to 15m") {
		t.Errorf("pair --window 1s before the kubeconfig is read: %d %q", code, out.String())
	}
	out.Reset()
	if code := Execute(t.Context(), "dev", streams, []string{"pair", "--window", "8760h", "--server", "https://127.0.0.1:1"}); code != 1 ||
		!strings.Contains(out.String(), "--window 8760h0m0s is outside 15s to 15m") {
		t.Errorf("pair --window a year: %d %q", code, out.String())
	}
	// The help spells the range as the error does.
	out.Reset()
	if code := Execute(t.Context(), "dev", streams, []string{"pair", "--help"}); code != 0 ||
		!strings.Contains(out.String(), "discoverable, 15s to 15m") {
		t.Errorf("pair --help: %d %q; want the --window range spelt 15s to 15m", code, out.String())
	}
}

// TestLongValuesAreNotEchoed: a 10 KB value in a flag or argument is
// refused with a message that quotes its first bytes and its length, and
// the whole output stays short.
func TestLongValuesAreNotEchoed(t *testing.T) {
	long := strings.Repeat("A", 10240)
	for _, args := range [][]string{
		{"pair", "--device", long, "--adapter", "00-1a-7d-da-71-13"},
		{"pair", "--adapter", long},
		{"pair", "--pin", long, "--adapter", "00-1a-7d-da-71-13"},
		{"unpair", long},
		{"completion", long},
	} {
		var out bytes.Buffer
		streams := genericiooptions.IOStreams{In: strings.NewReader(""), Out: &out, ErrOut: &out}
		code := Execute(t.Context(), "dev", streams, append(args, "--server", "https://127.0.0.1:1"))
		if code != 1 || out.Len() > 1024 || !strings.Contains(out.String(), `AAAA"... (10240 bytes)`) {
			t.Errorf("%s with a 10 KB value: exit %d, %d bytes of output: %.300q", args[0], code, out.Len(), out.String())
		}
	}
}

func TestQuote(t *testing.T) {
	for in, want := range map[string]string{
		"gamepad":               `"gamepad"`,
		strings.Repeat("é", 40): `"` + strings.Repeat("é", 32) + `"... (80 bytes)`,
		strings.Repeat("x", 64): `"` + strings.Repeat("x", 64) + `"`,
		strings.Repeat("x", 65): `"` + strings.Repeat("x", 64) + `"... (65 bytes)`,
		"a\x00b":                `"a\x00b"`,
	} {
		if got := quote(in); got != want {
			t.Errorf("quote(%.20q) = %s, want %s", in, got, want)
		}
	}
}
