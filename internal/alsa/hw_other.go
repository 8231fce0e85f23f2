// SPDX-License-Identifier: Apache-2.0

//go:build !(linux && (amd64 || arm64 || riscv64 || loong64 || s390x))

package alsa

import (
	"errors"
	"fmt"
)

// HWControl is the kernel's control interface; this platform has no build
// of it (the structures it mirrors hold C longs and the ioctl encoding is
// the generic one: 64-bit Linux on x86, arm64, riscv64, loong64, s390x).
type HWControl struct{ Control }

// OpenControl fails with errors.ErrUnsupported on this platform.
func OpenControl(path string) (*HWControl, error) {
	return nil, fmt.Errorf("open ALSA control node %s: %w", path, errors.ErrUnsupported)
}
