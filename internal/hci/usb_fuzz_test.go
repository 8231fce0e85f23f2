// SPDX-License-Identifier: Apache-2.0

package hci

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"
)

// FuzzParseUSBNode: the node path comes from what the claim's CDI spec
// delivered into the container. An accepted path names two numbers in
// 1..999 that print back as its last two elements.
func FuzzParseUSBNode(f *testing.F) {
	for _, s := range []string{"/dev/bus/usb/001/005", "/dev/bus/usb/999/999", "/dev/bus/usb/000/001", "bus/usb/1/5", "/dev/bus/usb/001/005/", "/a/bus/usb/010/0x1"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, path string) {
		n, err := ParseUSBNode(path)
		if err != nil {
			return
		}
		if n.Busnum < 1 || n.Busnum > 999 || n.Devnum < 1 || n.Devnum > 999 {
			t.Fatalf("%q: bus %d device %d out of range", path, n.Busnum, n.Devnum)
		}
		if want, clean := fmt.Sprintf("/bus/usb/%03d/%03d", n.Busnum, n.Devnum), "/"+filepath.Clean(path); !strings.HasSuffix(clean, want) {
			t.Fatalf("%q parsed as bus %d device %d", path, n.Busnum, n.Devnum)
		}
	})
}
