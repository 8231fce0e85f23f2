// SPDX-License-Identifier: Apache-2.0

package pwtest

import (
	"bytes"
	"context"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/liken-sh/operators/internal/pipewire"
)

// LinkedStream returns the node of the stream that process pid made
// (the node of the client whose application.process.id is pid) and the
// node's links; ok is false while there is no such node or it has no
// link yet. A failing pw-dump is an error.
func (d *Daemons) LinkedStream(ctx context.Context, pid int) (node pipewire.Node, links []pipewire.Link, ok bool, err error) {
	objs, err := d.RawDump(ctx)
	if err != nil {
		return pipewire.Node{}, nil, false, err
	}
	client := ""
	for _, o := range objs {
		if o.Type == "PipeWire:Interface:Client" && fmt.Sprint(o.InfoProps()["application.process.id"]) == strconv.Itoa(pid) {
			client = fmt.Sprint(o.ID)
		}
	}
	if client == "" {
		return pipewire.Node{}, nil, false, nil
	}
	g, err := d.Remote().Dump(ctx)
	if err != nil {
		return pipewire.Node{}, nil, false, err
	}
	for _, n := range g.Nodes {
		if n.Props["client.id"] == client {
			if ls := g.LinksOf(n.ID); len(ls) > 0 {
				return n, ls, true, nil
			}
		}
	}
	return pipewire.Node{}, nil, false, nil
}

// SetLatencyOffset sets the latency offset of the node named name
// (its Props param's latencyOffsetNsec, which PipeWire's ALSA nodes add
// to the latency they report, as latency.offset.nsec does), the delay
// an output states: what a receiver's audio sync delay or a speaker's
// transport adds after the sink. It errors when there is no such node
// or pw-cli fails.
func (d *Daemons) SetLatencyOffset(ctx context.Context, name string, offset time.Duration) error {
	g, err := d.Remote().Dump(ctx)
	if err != nil {
		return err
	}
	n, ok := g.NodeByName(name)
	if !ok {
		return fmt.Errorf("no node %s to set a latency offset on", name)
	}
	set := d.Command(ctx, "pw-cli", "set-param", strconv.Itoa(int(n.ID)), "Props", fmt.Sprintf("{ latencyOffsetNsec: %d }", offset.Nanoseconds()))
	if out, err := set.CombinedOutput(); err != nil {
		return fmt.Errorf("pw-cli set-param %s Props: %w: %s", name, err, bytes.TrimSpace(out))
	}
	return nil
}

// monitorPositions are the channel positions of RecordMonitors'
// recorder, one a sink.
var monitorPositions = []string{"FL", "FR", "RL", "RR", "FC", "LFE", "SL", "SR"}

// RecordMonitors starts one recorder, node.name name, that WirePlumber
// leaves alone (node.autoconnect = false), with a channel for each of
// sinks (node.names, at most 8): its channel i is linked by hand
// (pw-link) to the first monitor port of sinks[i] (monitor_FL, or a
// positionless sink's first). One recorder for all of them puts their
// samples on one clock, so the frame at which a sound reaches each sink
// can be compared. It records interleaved s16le at rate Hz and returns
// once every link is made; it errors when a sink shows no monitor port
// or a link is not made within 30 s, and stops the recorder then.
func (d *Daemons) RecordMonitors(ctx context.Context, name string, rate int, sinks ...string) (*Recording, error) {
	if len(sinks) == 0 || len(sinks) > len(monitorPositions) {
		return nil, fmt.Errorf("a recorder of %d sinks' monitors; want 1 to %d", len(sinks), len(monitorPositions))
	}
	positions := monitorPositions[:len(sinks)]
	r, err := d.record(ctx, "", []string{"-P", "{ node.name = " + name + " node.autoconnect = false }",
		"--channel-map", strings.Join(positions, ",")}, rate, len(sinks))
	if err != nil {
		return nil, err
	}
	deadline := time.Now().Add(30 * time.Second)
	for i, sink := range sinks {
		var port string
		for {
			out, err := d.Command(ctx, "pw-link", "-o").Output()
			port = firstMonitor(string(out), sink)
			if err == nil && port != "" && d.Command(ctx, "pw-link", port, name+":input_"+positions[i]).Run() == nil {
				break
			}
			if time.Now().After(deadline) || ctx.Err() != nil {
				_, _ = r.Stop()
				return nil, fmt.Errorf("linking %s's monitor (port %q) to recorder %s: not within 30s", sink, port, name)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	return r, nil
}

// firstMonitor is sink's first monitor port among pw-link -o's lines:
// monitor_FL, else the first monitor port listed.
func firstMonitor(ports, sink string) string {
	first := ""
	for _, l := range strings.Split(ports, "\n") {
		l = strings.TrimSpace(l)
		if !strings.HasPrefix(l, sink+":monitor_") {
			continue
		}
		if l == sink+":monitor_FL" {
			return l
		}
		if first == "" {
			first = l
		}
	}
	return first
}

// FrontRearMap is FrontRear's channel map, as pw-play's --channel-map
// takes it.
const FrontRearMap = "FL,FR,RL,RR"

// FrontRear returns lead of silence, then length of frontHz on the
// front pair and rearHz on the rear pair, each at amplitude (a fraction
// of full scale), as one four-channel stream (FrontRearMap,
// interleaved s16le at rate Hz).
func FrontRear(frontHz, rearHz, amplitude float64, rate int, lead, length time.Duration) []byte {
	front := Tone(frontHz, amplitude, rate, 1, length)
	rear := Tone(rearHz, amplitude, rate, 1, length)
	pcm := make([]byte, int(lead.Seconds()*float64(rate))*4*2, len(front)*4+int(lead.Seconds()*float64(rate))*4*2)
	for i := 0; i+1 < len(front); i += 2 {
		pcm = append(pcm, front[i], front[i+1], front[i], front[i+1], rear[i], rear[i+1], rear[i], rear[i+1])
	}
	return pcm
}

// Onset is the index of the first sample of x louder than threshold (a
// fraction of full scale), or -1.
func Onset(x []float64, threshold float64) int {
	for i, v := range x {
		if math.Abs(v) > threshold {
			return i
		}
	}
	return -1
}
