// SPDX-License-Identifier: Apache-2.0

package audio

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"
	corev1 "k8s.io/api/core/v1"

	"github.com/liken-sh/operators/internal/alsa"
	"github.com/liken-sh/operators/internal/pipewire"
)

// keepingNothing is a card whose channel-map writes are taken and not
// kept, as the HDA HDMI driver does with a PCM no stream holds.
type keepingNothing struct{ alsa.Control }

func (keepingNothing) Write(alsa.ElemID, alsa.Value) error { return nil }

type discardingOpener struct{ alsa.Opener }

func (d discardingOpener) Open(card int) (alsa.Control, error) {
	c, err := d.Opener.Open(card)
	return keepingNothing{c}, err
}

// A 5.1 layout on the recorded DP output sets its Playback Channel Map
// while PipeWire's node holds the PCM idle, and only then; a map that
// reads back different is a Warning naming both maps and a counted
// failure; a stereo layout and a USB output are left alone.
func TestSteerChannelMap(t *testing.T) {
	hw := xpsHardware(t)
	opener := &countingOpener{Opener: hw.opener(), opens: map[int]int{}}
	hw.Opener = opener
	cards, _, err := hw.Cards()
	if err != nil {
		t.Fatal(err)
	}
	eps, _ := Endpoints("n", cards)
	clear(opener.opens)
	i := slices.IndexFunc(eps, func(e Endpoint) bool { return e.Name == "n-pci-0000-00-1f-3-hdmi-3" })
	usb := slices.IndexFunc(eps, func(e Endpoint) bool { return strings.Contains(e.Name, "usb") && !e.Capture() })
	if i < 0 || usb < 0 {
		t.Fatalf("no DP or USB output among %d endpoints", len(eps))
	}
	o := &operator{cfg: Config{Hardware: hw}, metrics: newMetrics(nil), warned: map[string]bool{}}
	ctx := context.Background()
	ref := &corev1.ObjectReference{Kind: "Sink", Name: eps[i].Name}
	surround := []string{"FL", "FR", "RL", "RR", "FC", "LFE"}
	for _, state := range []string{pipewire.NodeStateSuspended, pipewire.NodeStateRunning} {
		o.steerChannelMap(ctx, ref, eps[i], surround, &pipewire.Node{State: state})
	}
	o.steerChannelMap(ctx, ref, eps[i], []string{"FL", "FR"}, &pipewire.Node{State: pipewire.NodeStateIdle})
	o.steerChannelMap(ctx, ref, eps[usb], surround, &pipewire.Node{State: pipewire.NodeStateIdle})
	if len(opener.opens) != 0 {
		t.Fatalf("opened %v for a closed or running PCM, a stereo layout or a USB output", opener.opens)
	}
	o.cfg.Hardware.Opener = discardingOpener{opener}
	o.steerChannelMap(ctx, ref, eps[i], surround, &pipewire.Node{State: pipewire.NodeStateIdle})
	if len(o.warned) != 1 {
		t.Fatalf("a map not kept: warnings %v", o.warned)
	}
	for k := range o.warned {
		if !strings.Contains(k, "wrote FL,FR,RL,RR,FC,LFE, reads ?,?") {
			t.Errorf("warning %q does not name both maps", k)
		}
	}
	if n := testutil.ToFloat64(o.metrics.controlFailures.WithLabelValues(operationChannelMap)); n != 1 {
		t.Errorf("%v channel-map failures counted, want 1", n)
	}
	o.cfg.Hardware.Opener = opener
	o.steerChannelMap(ctx, ref, eps[i], surround, &pipewire.Node{State: pipewire.NodeStateIdle})
	if opener.opens[eps[i].PCM.Card()] != 2 || len(o.warned) != 1 {
		t.Fatalf("idle: opens %v, warnings %v", opener.opens, o.warned)
	}
	ctl, err := opener.Open(eps[i].PCM.Card())
	if err != nil {
		t.Fatal(err)
	}
	defer ctl.Close()
	if m, err := alsa.ReadChannelMap(ctl, eps[i].PCM.Device(), 0, alsa.Playback); err != nil || alsa.SpellChannelMap(m) != "FL,FR,RL,RR,FC,LFE,?,?" {
		t.Errorf("the card's map reads %s, %v", alsa.SpellChannelMap(m), err)
	}
}
