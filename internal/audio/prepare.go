// SPDX-License-Identifier: Apache-2.0

package audio

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/liken-sh/operators/internal/audio/gate"
	"github.com/liken-sh/operators/internal/dra"
	"github.com/liken-sh/operators/internal/pipewire"
)

// RuntimeDir is the PipeWire runtime directory: a hostPath in deploy/audio/operator.yaml,
// mounted at the same path in the operator's pod. A consumer's container
// gets its claim's socket directory mounted under this path
// (ContainerDir), while the node's own sockets (pipewire-0,
// pipewire-0-manager) are not in it.
const RuntimeDir = "/var/run/audio.liken.sh"

// SocketName is PipeWire's default socket in RuntimeDir.
const SocketName = pipewire.SocketName

// Params is the operator's opaque claim configuration
// (config[].opaque.parameters of a claim or class naming DriverName). The
// core's strict decoding refuses any other key and a value of another
// JSON type.
type Params struct {
	// Codec is the codec a Bluetooth speaker is switched to for the
	// claim ("sbc", "aac", "aptx" ...: one of the device's codecs
	// attribute). Prepare fails on a wired output, and on a speaker that
	// does not offer it, naming those it offers.
	Codec string `json:"codec,omitempty"`
	// Volume is the gain of the claim's own streams, in percent of
	// unity (linear, 0 to 100), apart from the Sink's spec.volume; the
	// claim gate sets it on each stream. Absent leaves the streams as
	// they set themselves.
	Volume *int `json:"volume,omitempty"`
	// Role is what the claim plays, one of gate.RoleNames ("music",
	// "announcement", ...): its streams carry the matching media.role,
	// and an announcement ducks the other claims' streams on its output
	// while it plays (the Sink's spec.duckDecibels).
	Role string `json:"role,omitempty"`
	// Position is which channels of a claim's combined sink the output
	// plays, when the claim holds more than one output: "front" (the
	// default: front left and right) or "rear" (rear left and right, a
	// surround pair's). The output plays them on its own front left and
	// right. It has no effect on a claim of one output.
	Position string `json:"position,omitempty"`
}

// Validate refuses a codec that is not spelt as one (1 to 32 lower-case
// letters, digits and '_'), naming its length rather than repeating a
// long value.
func (p *Params) Validate() error {
	if err := validateShare(p.Volume, p.Role); err != nil {
		return err
	}
	if _, ok := positions[p.Position]; !ok {
		return fmt.Errorf("position %q is not one of front, rear", p.Position)
	}
	if p.Codec == "" || pipewire.CodecNameValid(p.Codec) {
		return nil
	}
	if len(p.Codec) > 32 {
		return fmt.Errorf("codec: %d bytes of text is not a codec name (1 to 32 lower-case letters, digits and '_', as a speaker's codecs attribute lists them)", len(p.Codec))
	}
	return fmt.Errorf("codec %q is not a codec name (1 to 32 lower-case letters, digits and '_', as a speaker's codecs attribute lists them)", p.Codec)
}

// Codecs is what prepare asks of the operator about Bluetooth speakers.
type Codecs interface {
	// Offered returns the codecs device offers and the one it runs now;
	// speaker is false for a device that is not a Bluetooth speaker.
	Offered(device string) (offered []string, current string, speaker bool)
	// Switch switches the speaker to codec and returns once the graph
	// shows its node running it (the node is rebuilt under a new id),
	// bounded; errors name the speaker and what did not happen.
	Switch(ctx context.Context, device, codec string) error
}

// Lookup resolves a device name to what prepare needs now: the endpoint's
// PipeWire node.name, and whether PipeWire holds that node. ok is false
// for a name this operator does not publish.
type Lookup func(device string) (nodeName string, live bool, ok bool)

// DefaultSocketWait bounds prepare's wait for the claim gate to serve a
// new claim's socket; the gate sees the claim file through inotify and
// serves it within milliseconds (measured: under 50 ms).
const DefaultSocketWait = 5 * time.Second

// Prepare returns the core's prepare function. A consumer gets a PipeWire
// socket of its claim's own, PIPEWIRE_REMOTE, PIPEWIRE_NODE and a
// variable per request (Delivery): the claim file names the claim's
// nodes (every device of this driver in the claim), the claim gate
// beside PipeWire serves the socket (gate.SocketDir under runtimeDir),
// and the consumer's mount holds that directory alone, at ContainerDir,
// so the node's own sockets are not in its container. A device with no
// sink right now fails with that reason, as does a socket the gate has
// not served within wait; the kubelet retries.
func Prepare(lookup Lookup, runtimeDir string, wait time.Duration) dra.PrepareFunc[Params] {
	return PrepareWithCodecs(lookup, nil, nil, runtimeDir, wait)
}

// PrepareWithCodecs is Prepare for an operator that publishes Bluetooth
// speakers and reads pods: a claim's codec parameter switches the speaker
// to that codec (codecs.Switch) before its node is looked up, since the
// node is rebuilt. A codec on a wired output fails, and so does one the
// speaker does not offer, with the list it offers. Nil codecs has no
// speakers. together, when not nil, fails a claim that shares a
// container with another audio claim (ContainersAlone).
func PrepareWithCodecs(lookup Lookup, codecs Codecs, together Together, runtimeDir string, wait time.Duration) dra.PrepareFunc[Params] {
	return func(ctx context.Context, req dra.DeviceRequest[Params]) (dra.ContainerEdits, error) {
		name := req.Result.Device
		if together != nil {
			if err := together(ctx, req.Claim); err != nil {
				return dra.ContainerEdits{}, err
			}
		}
		if err := switchCodec(ctx, codecs, name, req.Params.Codec); err != nil {
			return dra.ContainerEdits{}, err
		}
		_, live, ok := lookup(name)
		if !ok {
			return dra.ContainerEdits{}, fmt.Errorf("output %s is not one this operator publishes", name)
		}
		if !live {
			return dra.ContainerEdits{}, fmt.Errorf("output %s has no PipeWire sink right now", name)
		}
		uid := string(req.Claim.UID)
		d, err := claimDelivery(req, runtimeDir, lookup)
		if err != nil {
			return dra.ContainerEdits{}, err
		}
		c := gate.Claim{UID: uid, Nodes: claimNodes(req, lookup), Streams: claimStreams(req), Combine: d.Combine,
			Volume: req.Params.Volume, Role: req.Params.Role}
		if d.Combine != nil {
			c.Nodes = append(c.Nodes, d.Node)
		}
		if err := gate.WriteClaim(runtimeDir, c); err != nil {
			return dra.ContainerEdits{}, fmt.Errorf("output %s: %w", name, err)
		}
		if err := waitForSocket(ctx, gate.SocketPath(runtimeDir, uid), wait); err != nil {
			return dra.ContainerEdits{}, fmt.Errorf("output %s: %w", name, err)
		}
		edits := d.Edits()
		edits.Env = append(edits.Env, gate.RoleEnv(req.Params.Role)...)
		return edits, nil
	}
}

func switchCodec(ctx context.Context, codecs Codecs, name, codec string) error {
	if codec == "" {
		return nil
	}
	var offered []string
	var current string
	speaker := false
	if codecs != nil {
		offered, current, speaker = codecs.Offered(name)
	}
	switch {
	case !speaker:
		return fmt.Errorf("output %s is not a Bluetooth speaker: the codec parameter (%q) applies to speakers only", name, codec)
	case len(offered) == 0:
		return fmt.Errorf("speaker %s offers no codec right now (PipeWire has no Bluetooth device for it: switched off, or out of range); codec %q cannot be set", name, codec)
	case !slices.Contains(offered, codec):
		return fmt.Errorf("speaker %s does not offer codec %q; it offers %s", name, codec, strings.Join(offered, ", "))
	case current == codec:
		return nil
	}
	return codecs.Switch(ctx, name, codec)
}

// claimNodes returns the node.names of every device of this driver that
// claim req belongs to holds, the one being prepared first.
func claimNodes(req dra.DeviceRequest[Params], lookup Lookup) []string {
	node, _, _ := lookup(req.Result.Device)
	out := []string{node}
	if req.Claim.Status.Allocation == nil {
		return out
	}
	for _, r := range req.Claim.Status.Allocation.Devices.Results {
		if r.Driver != DriverName || r.Device == req.Result.Device {
			continue
		}
		if n, _, ok := lookup(r.Device); ok && !slices.Contains(out, n) {
			out = append(out, n)
		}
	}
	return out
}

// claimStreams is how many streams the claim req belongs to may have:
// the streams every allocation result of this driver in it consumed
// (consumedStreams), a device the claim holds twice (two requests, two
// shares) counted twice. The claim's clients share one socket, so the
// gate counts their streams together.
func claimStreams(req dra.DeviceRequest[Params]) int {
	if req.Claim.Status.Allocation == nil {
		return consumedStreams(req.Result)
	}
	n := 0
	for _, r := range req.Claim.Status.Allocation.Devices.Results {
		if r.Driver == DriverName {
			n += consumedStreams(r)
		}
	}
	return max(n, consumedStreams(req.Result))
}

// waitForSocket polls for the socket at path from 1 ms, doubling to
// 20 ms: the gate serves a claim within a few milliseconds of its file,
// and a first poll as coarse as the last would add its whole period to
// every prepare.
func waitForSocket(ctx context.Context, path string, wait time.Duration) error {
	deadline := time.Now().Add(wait)
	pause := time.Millisecond
	for {
		st, err := os.Stat(path)
		if err == nil && st.Mode()&os.ModeSocket != 0 {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("the claim's PipeWire socket %s was not served within %s (is the pipewire container's claim gate running?)", path, wait)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(pause):
		}
		pause = min(2*pause, 20*time.Millisecond)
	}
}
