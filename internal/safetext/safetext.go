// SPDX-License-Identifier: Apache-2.0

// Package safetext turns text a device or the kernel supplied (a
// Bluetooth name, a USB product string) into text that is safe to publish
// as an attribute, store in a status, or log.
package safetext

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// Clean returns s with bytes that are not UTF-8 dropped, and every
// character that is not printable (unicode.IsPrint): the C0 and C1 control
// characters (ESC and with it every terminal escape sequence), DEL, and the
// format characters (bidi overrides and isolates, zero-width characters).
// Other white space becomes one space, runs of spaces one, and the ends are
// trimmed. The result is cut to at most max bytes (max > 0) on a character
// boundary.
func Clean(s string, max int) string {
	var b strings.Builder
	space := false
	for _, r := range strings.ToValidUTF8(s, "") {
		switch {
		case unicode.IsSpace(r):
			space = true
			continue
		case !unicode.IsPrint(r):
			continue
		}
		if space && b.Len() > 0 {
			b.WriteByte(' ')
		}
		space = false
		b.WriteRune(r)
		if b.Len() > max {
			break
		}
	}
	out := b.String()
	if len(out) > max {
		cut := max
		for cut > 0 && !utf8.RuneStart(out[cut]) {
			cut--
		}
		out = strings.TrimRight(out[:cut], " ")
	}
	return out
}
