// SPDX-License-Identifier: Apache-2.0

package audio

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"k8s.io/klog/v2"

	"github.com/liken-sh/operators/internal/audio/gate"
	"github.com/liken-sh/operators/internal/pipewire"
)

// SetIEC958CodecsFunc writes the IEC 958 codecs a PipeWire node passes
// through, in PipeWire's names, PCM aside (pipewire.Remote.SetIEC958Codecs
// in the pod; tests may count calls).
type SetIEC958CodecsFunc func(ctx context.Context, node uint32, codecs []string) error

// iec958Write is the last IEC 958 codecs a pass wrote to a node.
type iec958Write struct {
	node   uint32
	codecs []string
	at     time.Time
}

// Passthrough implements Codecs from the latest pass: an output with an
// ELD control is an HDMI/DP output, and its valid ELD says what its
// monitor takes.
func (o *operator) Passthrough(device string) ([]string, bool) {
	o.mu.Lock()
	e, ok := o.known[device]
	o.mu.Unlock()
	if !ok || e.Capture() || !e.PCM.HasELD {
		return nil, false
	}
	if e.PCM.ELD.ELD == nil {
		return nil, true
	}
	return e.PCM.ELD.ELD.Passthrough(), true
}

// compressed is codecs without PCM, which every node that takes IEC 958
// codecs lists.
func compressed(codecs []string) []string {
	return slices.DeleteFunc(slices.Clone(codecs), func(c string) bool { return c == pipewire.IEC958PCM })
}

// sameCodecs reports whether a and b name the same codecs, in any order.
func sameCodecs(a, b []string) bool {
	return slices.Equal(slices.Sorted(slices.Values(a)), slices.Sorted(slices.Values(b)))
}

// SetPassthrough implements Codecs: it writes codecs to the output's
// node and reads the graph every 100 ms, bounded by CodecWait, until the
// node lists them. Only a node the claim gate recorded as declared is
// taken for the output, as in the passes. A node that lists no IEC 958
// codecs at all cannot take them: PipeWire offers IEC 958 only on an ALSA
// path that starts with hdmi or iec958 (pipewire/iec958.go).
func (o *operator) SetPassthrough(ctx context.Context, device string, codecs []string) error {
	o.mu.Lock()
	e, ok := o.known[device]
	o.mu.Unlock()
	if !ok {
		return fmt.Errorf("output %s is not one this operator publishes", device)
	}
	deadline := time.Now().Add(o.cfg.CodecWait)
	wrote := false
	var shown []string
	for {
		// A read may take all the wait that is left: a pw-dump on a
		// loaded host has taken seconds.
		read, cancel := context.WithDeadline(ctx, deadline)
		g, err := o.cfg.Remote.Dump(read)
		cancel()
		if err == nil {
			trust, _ := gate.ReadTrusted(o.cfg.runtimeDir())
			if n, ok := g.NodeByName(e.NodeName); ok && trust.Trusts(g.Cookie, n.Name, n.ID) {
				if n.IEC958Codecs == nil {
					return fmt.Errorf("output %s cannot pass codecs through: PipeWire's node %s takes no IEC 958 format (it does so only on an ALSA path starting with hdmi or iec958; this one's is %q)",
						device, e.NodeName, n.Props[pipewire.PropALSAPath])
				}
				shown = compressed(n.IEC958Codecs)
				if sameCodecs(shown, codecs) {
					return nil
				}
				if !wrote {
					if err := o.cfg.SetIEC958Codecs(ctx, n.ID, codecs); err != nil {
						return fmt.Errorf("output %s: setting IEC 958 codecs %s on node %d: %w", device, strings.Join(codecs, " "), n.ID, err)
					}
					wrote = true
					klog.FromContext(ctx).Info("Output passes a claim's codecs through", "output", device, "node", n.ID, "codecs", codecs)
				}
			}
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("output %s: PipeWire did not show IEC 958 codecs %s within %s (it shows %v)", device, strings.Join(codecs, " "), o.cfg.CodecWait, shown)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// syncPassthrough keeps every declared node that takes IEC 958 codecs at
// the codecs the claim files name for it (files, by claim UID), and at PCM
// alone when none does: a claim unprepared, or a PipeWire restarted, is
// put right by the next pass. A write the node does not show yet is not
// repeated within rewriteAfter. Errors are logged once each. Nil files
// (the claim files could not be read) writes nothing.
func (o *operator) syncPassthrough(ctx context.Context, g *pipewire.Graph, files map[string]gate.Claim) {
	if g == nil || files == nil {
		return
	}
	want := map[string][]string{}
	for _, c := range files {
		for node, codecs := range c.Passthrough {
			for _, codec := range codecs {
				if !slices.Contains(want[node], codec) {
					want[node] = append(want[node], codec)
				}
			}
		}
	}
	for _, n := range g.Nodes {
		if n.Declared == nil || n.IEC958Codecs == nil {
			continue
		}
		w := want[n.Name]
		if sameCodecs(compressed(n.IEC958Codecs), w) {
			delete(o.iec958Writes, n.Name)
			continue
		}
		if last, ok := o.iec958Writes[n.Name]; ok && last.node == n.ID && sameCodecs(last.codecs, w) && time.Since(last.at) < rewriteAfter {
			continue
		}
		o.iec958Writes[n.Name] = iec958Write{node: n.ID, codecs: w, at: time.Now()}
		logger := klog.FromContext(ctx)
		if err := o.cfg.SetIEC958Codecs(ctx, n.ID, w); err != nil {
			o.claimProblem(logger, fmt.Errorf("node %s: setting IEC 958 codecs %v: %w", n.Name, w, err))
			continue
		}
		logger.Info("Node's IEC 958 codecs set to what the prepared claims ask", "node", n.Name, "codecs", w, "had", compressed(n.IEC958Codecs))
	}
}
