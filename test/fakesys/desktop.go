// SPDX-License-Identifier: Apache-2.0

package fakesys

import (
	_ "embed"
	"os"
	"path/filepath"
)

//go:embed desktop.tree
var desktopTree []byte

// Desktop is a desktop's raw hardware as the liken.sh driver reads it: an
// Intel HDA controller at PCI 0000:00:1f.3 with its card, jacks, timer and
// sequencer, and a Realtek Bluetooth adapter whose interfaces btusb binds
// at USB port 1-8.1 (desktop.tree says what else). Sys and Dev are the
// sysfs and /dev roots to point a driver at.
type Desktop struct {
	Sys, Dev string
}

// DesktopNodes are the /dev entries of Desktop, below Dev; each is a
// regular file standing in for the node, since a test may not mknod.
var DesktopNodes = []string{
	"snd/controlC0", "snd/pcmC0D0p", "snd/pcmC0D0c", "snd/pcmC0D3p", "snd/hwC0D0", "snd/hwC0D2",
	"snd/timer", "snd/seq", "input/event5", "input/event6", "bus/usb/001/005", "uinput", "uhid",
}

// LayOutDesktop writes Desktop under dir (dir/sys and dir/dev).
func LayOutDesktop(dir string) (Desktop, error) {
	d := Desktop{Sys: filepath.Join(dir, "sys"), Dev: filepath.Join(dir, "dev")}
	if err := BuildTree(desktopTree, d.Sys); err != nil {
		return d, err
	}
	for _, n := range DesktopNodes {
		p := filepath.Join(d.Dev, n)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return d, err
		}
		if err := os.WriteFile(p, nil, 0o644); err != nil {
			return d, err
		}
	}
	return d, nil
}
