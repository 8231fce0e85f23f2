// SPDX-License-Identifier: Apache-2.0

package bluez

import "github.com/liken-sh/operators/internal/safetext"

// MaxNameBytes is the longest name a device reports over the air: the
// remote name of the Bluetooth Core Specification (Vol 4, Part E, 7.1.19
// Remote Name Request) and the Complete Local Name it advertises are at
// most 248 bytes of UTF-8, and BlueZ's Name and Alias properties hold
// them as they came.
const MaxNameBytes = 248

// DisplayText returns s, a name or alias a device chose (BlueZ's Name or
// Alias property), as text that is safe to publish, store in a status or
// log: bytes that are not UTF-8 are dropped, and so is every character
// that is not printable (unicode.IsPrint): the C0 and C1 control
// characters (NUL, BEL, CR, LF, ESC and with it every terminal escape
// sequence's introducer, CSI), DEL, and the format characters (the bidi
// overrides and isolates U+202A..U+202E and U+2066..U+2069, zero-width
// characters). Other white space becomes one space, runs of spaces one,
// and the ends are trimmed. The result is cut to at most max bytes on a
// character boundary (max <= 0: MaxNameBytes).
func DisplayText(s string, max int) string {
	if max <= 0 {
		max = MaxNameBytes
	}
	return safetext.Clean(s, max)
}
