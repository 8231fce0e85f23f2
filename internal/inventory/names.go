// SPDX-License-Identifier: Apache-2.0

package inventory

import (
	"strings"

	resourceapi "k8s.io/api/resource/v1"

	"github.com/liken-sh/operators/internal/safetext"
)

// maxNameLength is the longest device name: a DNS label (RFC 1123).
const maxNameLength = 63

// DeviceName returns the published name of a device on bus at address:
// "<bus>-<address>", lowercase, every run of characters other than a-z and
// 0-9 turned into one dash, cut to 63 characters, with no dash at either
// end ("pci", "0000:00:1f.3" gives "pci-0000-00-1f-3"). It returns "" when
// nothing of a name is left.
func DeviceName(bus, address string) string {
	var b strings.Builder
	dash := false
	for _, r := range strings.ToLower(bus + "-" + address) {
		if (r >= 'a' && r <= 'z') || (r >= '0' && r <= '9') {
			if dash && b.Len() > 0 {
				b.WriteByte('-')
			}
			dash = false
			b.WriteRune(r)
			continue
		}
		dash = true
	}
	name := b.String()
	if len(name) > maxNameLength {
		name = strings.TrimRight(name[:maxNameLength], "-")
	}
	return name
}

// attributeText turns a string the hardware or the kernel supplied (a USB
// product string, a driver name) into an attribute value: invalid UTF-8
// and control characters dropped, runs of white space made one space,
// trimmed, and cut on a character boundary to the API's 64-byte limit of a
// string attribute. ok is false when nothing is left, so that the
// attribute is left out rather than published empty.
func attributeText(s string) (string, bool) {
	out := safetext.Clean(s, resourceapi.DeviceAttributeMaxValueLength)
	return out, out != ""
}
