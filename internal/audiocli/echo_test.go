// SPDX-License-Identifier: Apache-2.0

package audiocli

import (
	"strings"
	"testing"
)

// A value the user typed is echoed as it is when it is plain, and quoted
// with its control characters escaped otherwise, so no terminal escape
// sequence reaches the terminal through a message.
func TestEchoEscapesWhatATerminalWouldRun(t *testing.T) {
	for in, want := range map[string]string{
		"5,2":                "5,2",
		"my capture.wav":     "my capture.wav",
		"a\x1b[31mred.wav":   `"a\x1b[31mred.wav"`,
		"1\x1b[31m,2":        `"1\x1b[31m,2"`,
		"line\nbreak":        `"line\nbreak"`,
		"bidi\u202eevil.wav": `"bidi\u202eevil.wav"`,
	} {
		if got := echo(in); got != want {
			t.Errorf("echo(%q) = %s, want %s", in, got, want)
		}
	}
	if got := echo(strings.Repeat("x", 500)); !strings.HasPrefix(got, `"`) || strings.Contains(got, strings.Repeat("x", 300)) {
		t.Errorf("a 500-byte value is echoed as %d bytes, want it quoted and cut", len(got))
	}
}

// The -t value of a refused span is echoed escaped.
func TestRefusedSpanIsEchoedEscaped(t *testing.T) {
	code, msg := run(t, "capture", "x", "-t", "1\x1b[31m,2")
	if code == 0 || strings.Contains(msg, "\x1b") || !strings.Contains(msg, `-t "1\x1b[31m,2"`) {
		t.Errorf("exit %d, message %q; want a failure echoing the span escaped", code, msg)
	}
}
