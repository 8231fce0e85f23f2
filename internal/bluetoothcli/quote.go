// SPDX-License-Identifier: Apache-2.0

package bluetoothcli

import (
	"fmt"
	"unicode/utf8"
)

// maxEcho is how many bytes of a value a message quotes: enough for any
// address, adapter or Peripheral name (a DNS subdomain is 253), and no
// room for a pasted file to flood the terminal.
const maxEcho = 64

// quote is %q of s when s is at most maxEcho bytes, and otherwise %q of
// its first maxEcho bytes (cut at a character boundary) followed by how
// long the whole value was, e.g. "AAAA…"... (10240 bytes).
func quote(s string) string {
	if len(s) <= maxEcho {
		return fmt.Sprintf("%q", s)
	}
	n := maxEcho
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return fmt.Sprintf("%q... (%d bytes)", s[:n], len(s))
}
