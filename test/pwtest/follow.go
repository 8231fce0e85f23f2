// SPDX-License-Identifier: Apache-2.0

package pwtest

import (
	"context"
	"os"
	"time"
)

// FollowDeclaration does what the pod's pipewire sidecar does
// (internal/audio/modes): whenever the declaration is modified after
// PipeWire last started, it restarts PipeWire (and WirePlumber) so the new
// declaration is loaded. It polls every 200 ms until stop is called or ctx
// ends; a failed restart is passed to onError (nil: ignored) and tried
// again at the next change.
func (d *Daemons) FollowDeclaration(ctx context.Context, onError func(error)) (stop func()) {
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	started := time.Now()
	go func() {
		defer close(done)
		tick := time.NewTicker(200 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
			fi, err := os.Stat(d.DeclarationPath())
			if err != nil || !fi.ModTime().After(started) {
				continue
			}
			started = time.Now()
			if err := d.Restart(ctx); err != nil && onError != nil && ctx.Err() == nil {
				onError(err)
			}
		}
	}()
	return func() { cancel(); <-done }
}
