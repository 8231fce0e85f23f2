// SPDX-License-Identifier: Apache-2.0

package dra

import (
	"fmt"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"
)

// lockFile is beside the checkpoint. During a rolling update two driver
// processes share the plugin directory: the kubelet may prepare a claim
// through the new pod and unprepare it through the old one, so the
// checkpoint must be read fresh and written under a lock both processes
// honour. flock(2) is released by the kernel if a holder dies.
const lockFile = "checkpoint.lock"

// lockState takes the in-process mutex and the cross-process file lock,
// then re-reads the checkpoint if another process changed it. The returned
// function releases both. Errors: the lock file cannot be opened or locked,
// or the checkpoint another process wrote cannot be read.
func (d *Driver) lockState() (func(), error) {
	d.mu.Lock()
	f, err := os.OpenFile(filepath.Join(d.opts.PluginDir, lockFile), os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		d.mu.Unlock()
		return nil, fmt.Errorf("checkpoint lock: %w", err)
	}
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX); err != nil {
		f.Close()
		d.mu.Unlock()
		return nil, fmt.Errorf("checkpoint lock: %w", err)
	}
	unlock := func() {
		f.Close() // drops the flock
		d.mu.Unlock()
	}
	if err := d.cp.refresh(); err != nil {
		unlock()
		return nil, err
	}
	return unlock, nil
}
