// Package hcitest builds what package hci reads, for tests: a sysfs tree
// from a recorded manifest, a container /dev holding a claimed usbfs node,
// and a scripted kernel.
package hcitest

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"github.com/liken-sh/operators/internal/hci"
)

// BuildTree creates under dir the tree a manifest describes. The manifest
// has one entry a line, with paths relative to dir; blank lines and lines
// starting with # are ignored:
//
//	dir <path>
//	file <path> <content>    (content is the rest of the line; a newline is added)
//	link <path> <target>
//
// Parent directories are created as needed. A path that would leave dir,
// or a line of another shape, is an error naming the line.
func BuildTree(manifest []byte, dir string) error {
	sc := bufio.NewScanner(bytes.NewReader(manifest))
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		fields := strings.SplitN(line, " ", 3)
		if len(fields) < 2 || !filepath.IsLocal(fields[1]) {
			return fmt.Errorf("manifest line %d: %q", n, line)
		}
		path := filepath.Join(dir, fields[1])
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			return err
		}
		var err error
		switch {
		case fields[0] == "dir" && len(fields) == 2:
			err = os.MkdirAll(path, 0o755)
		case fields[0] == "file" && len(fields) == 3:
			err = os.WriteFile(path, []byte(fields[2]+"\n"), 0o644)
		case fields[0] == "link" && len(fields) == 3:
			err = os.Symlink(fields[2], path)
		default:
			return fmt.Errorf("manifest line %d: %q", n, line)
		}
		if err != nil {
			return fmt.Errorf("manifest line %d: %w", n, err)
		}
	}
	return sc.Err()
}

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
