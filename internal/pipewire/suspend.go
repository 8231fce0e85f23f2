// SPDX-License-Identifier: Apache-2.0

package pipewire

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/liken-sh/operators/internal/tailbuf"
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
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, DefaultWriteTimeout)
		defer cancel()
	}
	id := strconv.FormatUint(uint64(node), 10)
	cmd := r.tool(ctx, r.pwCli(), "send-command", id, "Suspend", "{}")
	stderr := tailbuf.New(2048)
	cmd.Stderr = stderr
	what := "pw-cli send-command " + id + " Suspend {}"
	if err := cmd.Run(); err != nil {
		if ctx.Err() != nil {
			err = fmt.Errorf("%w (%v)", ctx.Err(), err)
		}
		return fmt.Errorf("%s: %w%s", what, err, stderrQuote(stderr))
	}
	if line := errorLine(stderr.Bytes()); line != "" {
		if strings.Contains(line, "unknown global") {
			return fmt.Errorf("%s: %w: %s", what, ErrNoSuchObject, line)
		}
		return fmt.Errorf("%s: %s", what, line)
	}
	return nil
}
