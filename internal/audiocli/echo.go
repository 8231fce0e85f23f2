// SPDX-License-Identifier: Apache-2.0

package audiocli

import (
	"strconv"
	"strings"

	"github.com/liken-sh/operators/internal/safetext"
)

// echo is s as the plugin's messages show a value the user typed (a -t
// span, an -o path): as it is when it is short and every character is
// printable, so "-t 5,2" and a path with spaces read naturally, and
// quoted with escapes otherwise (safetext.Quote), so that a control
// character or terminal escape sequence in it never reaches the terminal.
func echo(s string) string {
	if len(s) <= safetext.MaxEcho && !strings.ContainsFunc(s, func(r rune) bool { return !strconv.IsPrint(r) && r != ' ' }) {
		return s
	}
	return safetext.Quote(s)
}
