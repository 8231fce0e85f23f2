// SPDX-License-Identifier: Apache-2.0

package pipewire

import (
	"context"
	"errors"
	"strconv"
)

// SuspendNode sends the Suspend command to node (a node id from a Graph
// read from the same PipeWire) with `pw-cli send-command <node> Suspend {}`:
// PipeWire closes the node's device and leaves its error state, so the
// next stream linked to it opens the device again (PipeWire itself never
// retries an ALSA open that failed: a node whose open failed with EBUSY
// stays in error). Without a deadline on ctx it applies
// DefaultWriteTimeout. The errors are SetVolume's: node id 0 is refused,
// and an unknown id wraps ErrNoSuchObject.
func (r Remote) SuspendNode(ctx context.Context, node uint32) error {
	if node == 0 {
		return errors.New("suspend: node id 0 is PipeWire's core, not a node")
	}
	return r.runPwCli(ctx, "send-command", strconv.FormatUint(uint64(node), 10), "Suspend", "{}")
}
