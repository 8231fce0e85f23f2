// SPDX-License-Identifier: Apache-2.0

package speakers

import (
	"strings"
	"testing"

	"github.com/liken-sh/operators/internal/bluez"
)

// A speaker's alias, which it chose over the air, reaches the operator
// (and so the Sink's status.bluetooth.name) with its escape sequences,
// line breaks, bells, NULs and bidi overrides gone.
func TestHostileAliasIsClean(t *testing.T) {
	hostile := "Kitchen\x1b[2J\x1b]0;pwned\x07\r\nroot# \u202etxt.exe\x00" + strings.Repeat("x", 300)
	list, problems := FromObjects(bluez.Objects{Devices: []bluez.Device{{
		Path: "/org/bluez/hci0/dev_A0_AB_51_33_B7_12", Address: "A0:AB:51:33:B7:12",
		Alias: hostile, Paired: true, UUIDs: []string{AudioSinkUUID},
	}}})
	if len(problems) != 0 || len(list) != 1 {
		t.Fatalf("speakers %+v, problems %v", list, problems)
	}
	alias := list[0].Alias
	if strings.ContainsAny(alias, "\x1b\x07\r\n\x00\u202e") || len(alias) > bluez.MaxNameBytes || !strings.HasPrefix(alias, "Kitchen[2J]0;pwned root# txt.exe") {
		t.Errorf("alias %q", alias)
	}
}
