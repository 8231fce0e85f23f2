// SPDX-License-Identifier: Apache-2.0

// Package hcitest builds what package hci reads, for tests: a container
// /dev holding a claimed usbfs node, and a scripted kernel. Sysfs trees
// come from recorded manifests through fakesys.BuildTree.
package hcitest

import (
	"fmt"
	"os"
	"path/filepath"
	"sync"

	"github.com/liken-sh/operators/internal/hci"
)

// ClaimNode creates <dev>/bus/usb/BBB/DDD as the runtime does when a claim
// delivers a usbfs node, as a plain file (a test cannot count on
// CAP_MKNOD), and returns its path.
func ClaimNode(dev string, busnum, devnum int) (string, error) {
	path := filepath.Join(dev, "bus", "usb", fmt.Sprintf("%03d", busnum), fmt.Sprintf("%03d", devnum))
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return "", err
	}
	return path, os.WriteFile(path, nil, 0o644)
}

// Answer is one scripted reply to HCIGETDEVINFO.
type Answer struct {
	Info hci.DevInfo
	Err  error
}

// Kernel is a scripted hci.Kernel. Each index answers its script in order
// and then repeats the last answer; an index with no script answers
// hci.ErrNoDevice, as the kernel does. It is safe for concurrent use.
type Kernel struct {
	mu      sync.Mutex
	scripts map[uint16][]Answer
	calls   map[uint16]int
}

// NewKernel returns a Kernel with no adapters.
func NewKernel() *Kernel {
	return &Kernel{scripts: map[uint16][]Answer{}, calls: map[uint16]int{}}
}

// Script sets the answers for index id.
func (k *Kernel) Script(id uint16, answers ...Answer) {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.scripts[id] = answers
}

// DevInfo implements hci.Kernel.
func (k *Kernel) DevInfo(id uint16) (hci.DevInfo, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	script := k.scripts[id]
	n := k.calls[id]
	k.calls[id]++
	if len(script) == 0 {
		return hci.DevInfo{}, fmt.Errorf("HCIGETDEVINFO hci%d: %w", id, hci.ErrNoDevice)
	}
	a := script[min(n, len(script)-1)]
	return a.Info, a.Err
}

// Calls returns how many times index id was asked.
func (k *Kernel) Calls(id uint16) int {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.calls[id]
}
