// SPDX-License-Identifier: Apache-2.0

package bluez

import (
	"strings"
	"testing"
	"unicode/utf8"
)

func TestDisplayText(t *testing.T) {
	for in, want := range map[string]string{
		"8Bitdo NES30 Pro":           "8Bitdo NES30 Pro",
		"  Kitchen\tspeaker \r\n":    "Kitchen speaker",
		"pad\x1b]0;owned\x07\x1b[2J": "pad]0;owned[2J",
		"a\x00b\x7fc\u009b31md":      "abc31md",
		"evil\u202egnp.exe":          "evilgnp.exe",
		"iso\u2066late\u2069d\u200b": "isolated",
		"bad \xff\xfe utf8":          "bad utf8",
		"Living\u00a0room\u2028TV":   "Living room TV",
		"\x1b\x1b\x1b":               "",
		"Café Ünïcode 🎧":             "Café Ünïcode 🎧",
	} {
		if got := DisplayText(in, 0); got != want {
			t.Errorf("DisplayText(%q) = %q, want %q", in, got, want)
		}
	}
	long := strings.Repeat("é", 200) // 400 bytes
	got := DisplayText(long, 0)
	if len(got) > MaxNameBytes || !utf8.ValidString(got) || len(got) < MaxNameBytes-1 {
		t.Errorf("a 400-byte name became %d bytes (valid %v)", len(got), utf8.ValidString(got))
	}
	if got := DisplayText("ab  cd", 4); got != "ab c" {
		t.Errorf("cut to 4: %q", got)
	}
}

// FuzzDisplayText: whatever a device calls itself, the text is valid
// UTF-8, printable, within the bound, and cleaning it again changes
// nothing.
func FuzzDisplayText(f *testing.F) {
	f.Add("pad\x1b[31m\u202e\x00", 64)
	f.Add(strings.Repeat("\u00e9", 130), 0)
	f.Fuzz(func(t *testing.T, s string, max int) {
		max %= 300
		got := DisplayText(s, max)
		limit := max
		if limit <= 0 {
			limit = MaxNameBytes
		}
		if len(got) > limit || !utf8.ValidString(got) {
			t.Fatalf("%q -> %q", s, got)
		}
		for _, r := range got {
			if r != ' ' && (r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0) || strings.ContainsRune("\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069", r)) {
				t.Fatalf("%q -> %q keeps %U", s, got, r)
			}
		}
		if again := DisplayText(got, max); again != got {
			t.Fatalf("not stable: %q -> %q -> %q", s, got, again)
		}
	})
}
