// SPDX-License-Identifier: Apache-2.0

package audio

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"

	"github.com/liken-sh/operators/internal/alsa"
	"github.com/liken-sh/operators/internal/pipewire"
)

// ReasonChannelMapMismatch is the Warning Event of a Sink whose card's
// Playback Channel Map could not be set to its surround layout, or read
// back another map.
const ReasonChannelMapMismatch = "ChannelMapMismatch"

// surroundChannels is the fewest channels a layout needs for the card's
// channel map to be set: 5.1 and 7.1 need the HDMI audio infoframe's
// speaker allocation to say where each channel goes; stereo is the same
// in every allocation.
const surroundChannels = 6

// steerChannelMap sets the card's Playback Channel Map of an HDMI/DP
// output to the surround layout PipeWire runs it with (positions, the
// declared audio.position) and reads it back, so the monitor's audio
// infoframe places each channel where the stream has it. It acts only
// while PipeWire's node n holds the PCM open and not running (idle): the
// HDA HDMI driver (sound/hda/hdmi_chmap.c) discards a map written while
// the PCM is closed, refuses one while it runs, and forgets it at close.
// A refusal or a map that reads back different is a Warning Event on obj
// (nil: logged only) and a counted failure; a driver that offers no
// channel map is left alone.
func (o *operator) steerChannelMap(ctx context.Context, obj *corev1.ObjectReference, e Endpoint, positions []string, n *pipewire.Node) {
	if e.Capture() || !e.PCM.HasELD || len(positions) < surroundChannels || n == nil || n.State != pipewire.NodeStateIdle {
		return
	}
	want, err := alsa.ChannelPositions(positions)
	if err != nil || (len(e.PCM.ChannelMap) >= len(want) && slices.Equal(e.PCM.ChannelMap[:len(want)], want) && !slices.ContainsFunc(e.PCM.ChannelMap[len(want):], func(p uint32) bool { return p != 0 })) {
		return
	}
	ctl, err := o.cfg.Hardware.opener().Open(e.PCM.Card())
	if err == nil {
		_, err = alsa.SetChannelMap(ctl, e.PCM.Device(), 0, alsa.Playback, positions)
		ctl.Close()
	}
	switch {
	case errors.Is(err, alsa.ErrNoChannelMap):
		return
	case err != nil:
		o.metrics.controlFailures.WithLabelValues(operationChannelMap).Inc()
		msg := fmt.Sprintf("layout %s: card %d: %v", strings.Join(positions, ","), e.PCM.Card(), err)
		if obj == nil {
			klog.FromContext(ctx).Info("Setting the channel map failed", "output", e.Name, "problem", msg)
			return
		}
		o.warn(ctx, obj, ReasonChannelMapMismatch, msg)
	}
}
