// SPDX-License-Identifier: Apache-2.0

package guest

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

// Modprobe loads each module with the guest's modprobe (busybox's, over
// the modules.dep the initramfs carries). Loading a loaded module is not
// an error.
func Modprobe(names ...string) error {
	for _, n := range names {
		if out, err := exec.Command("modprobe", n).CombinedOutput(); err != nil {
			return fmt.Errorf("modprobe %s: %w: %s", n, err, strings.TrimSpace(string(out)))
		}
	}
	return nil
}

// WaitFor polls cond every 20 ms until it holds or timeout passes, and
// reports whether it held. Without udev there is nothing to wait on but
// sysfs and devtmpfs themselves.
func WaitFor(timeout time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(timeout)
	for {
		if cond() {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// Glob is filepath.Glob without the error (only a bad pattern errs, and
// the patterns here are constants).
func Glob(pattern string) []string {
	m, _ := filepath.Glob(pattern)
	return m
}

// Exists reports whether path exists.
func Exists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

// Entrypoint is where the VM tier puts the bluetoothd image's entrypoint
// (cmd/bluetoothd) in the guest.
const Entrypoint = "/usr/local/bin/liken-bluetoothd"

// InputRelay is where the VM tier puts the input relay sidecar's binary
// (cmd/bluetooth-input-relay), built as the image builds it.
const InputRelay = "/usr/local/bin/bluetooth-input-relay"
