// SPDX-License-Identifier: Apache-2.0

package bluetooth

import (
	"strings"
	"testing"

	"github.com/liken-sh/operators/internal/bdaddr"
	"github.com/liken-sh/operators/internal/bluez"
)

// A name a device chose reaches the slice with its escape sequences,
// line breaks, bells, NULs and bidi overrides gone, within 64 bytes.
func TestHostileNameIsCleanInTheSlice(t *testing.T) {
	peer := bdaddr.MustParse("11:22:33:44:55:66")
	for _, d := range []bluez.Device{
		{Alias: "pad\x1b[2J\x1b]0;pwned\x07\r\nroot# \u202etxt.exe\x00" + strings.Repeat("x", 100)},
		{Name: "pad\x1b[2J\x1b]0;pwned\x07\r\nroot# \u202etxt.exe\x00" + strings.Repeat("x", 100)},
	} {
		v, ok := controllerAttributes(peer, d, true)["name"]
		if !ok || v.StringValue == nil {
			t.Fatalf("no name attribute for %+v", d)
		}
		name := *v.StringValue
		if strings.ContainsAny(name, "\x1b\x07\r\n\x00\u202e") || len(name) > maxStringAttribute || !strings.HasPrefix(name, "pad[2J]0;pwned root# txt.exe") {
			t.Errorf("name attribute %q", name)
		}
	}
}
