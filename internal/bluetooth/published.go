// SPDX-License-Identifier: Apache-2.0

package bluetooth

import (
	"sync"

	"github.com/liken-sh/operators/internal/dra"
)

// publishedSet holds the names of the device set the operator last handed
// to dra.Driver.SetDevices. Passes write it and Prepare reads it, on the
// kubelet's calls, so it is safe for concurrent use. The zero value holds
// no name.
type publishedSet struct {
	mu    sync.RWMutex
	names map[string]bool
}

// set makes devices the published set, replacing the previous one.
func (p *publishedSet) set(devices []dra.Device) {
	names := make(map[string]bool, len(devices))
	for _, d := range devices {
		names[d.Name] = true
	}
	p.mu.Lock()
	p.names = names
	p.mu.Unlock()
}

// has reports whether name is in the published set; it is the Published
// that Run gives Prepare.
func (p *publishedSet) has(name string) bool {
	p.mu.RLock()
	defer p.mu.RUnlock()
	return p.names[name]
}
