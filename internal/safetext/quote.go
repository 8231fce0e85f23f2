// SPDX-License-Identifier: Apache-2.0

package safetext

import (
	"fmt"
	"unicode/utf8"
)

// MaxEcho is how many bytes of a value Quote shows: enough for any
// address or object name (a DNS subdomain is 253), and no room for a
// pasted file to flood a terminal.
const MaxEcho = 64

// Quote is %q of s when s is at most MaxEcho bytes, and otherwise %q of
// its first MaxEcho bytes (cut at a character boundary) followed by how
// long the whole value was, e.g. "AAAA…"... (10240 bytes). Messages that
// repeat a user's input quote it with this.
func Quote(s string) string {
	if len(s) <= MaxEcho {
		return fmt.Sprintf("%q", s)
	}
	n := MaxEcho
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return fmt.Sprintf("%q... (%d bytes)", s[:n], len(s))
}
