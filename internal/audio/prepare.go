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
	// Codec names codecs from the device's codecs attribute, one or
	// several separated by single spaces. On a Bluetooth speaker it is
	// the one codec the speaker is switched to for the claim ("sbc",
	// "aac", "aptx" ...). On an HDMI/DP output it is the compressed
	// formats a player may pass through to the receiver while the claim
	// holds the output ("ac3", "eac3 ac3", from eld.PassthroughNames);
	// the claim must hold the output whole (passthrough.go). Prepare
	// fails on any other output, and for a codec the device does not
	// offer, naming those it offers.
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

// Validate refuses a codec that is not spelt as one or a list of them
// (codecNames: 1 to 32 lower-case letters, digits and '_' each, separated
// by single spaces, at most MaxCodecText bytes), naming its length rather
// than repeating a long value.
func (p *Params) Validate() error {
	if err := validateShare(p.Volume, p.Role); err != nil {
		return err
	}
	if _, ok := positions[p.Position]; !ok {
		return fmt.Errorf("position %q is not one of front, rear", p.Position)
	}
	if p.Codec == "" {
		return nil
	}
	_, err := codecNames(p.Codec)
	return err
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
	// Passthrough returns the passthrough names (eld.Passthrough) the
	// monitor of an HDMI/DP output lists in its ELD, nil while it has no
	// valid ELD; hdmi is false for a device that is not an HDMI/DP
	// output.
	Passthrough(device string) (offered []string, hdmi bool)
	// SetPassthrough makes the HDMI/DP output's node pass codecs
	// (PipeWire's IEC 958 names, pipewire.IEC958AC3 ...) through, beside
	// PCM, and returns once the graph shows it, bounded; errors name the
	// output and what did not happen (a node that takes no IEC 958
	// codecs at all among them).
	SetPassthrough(ctx context.Context, device string, codecs []string) error
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
// speakers and reads pods: a claim's codec parameter switches a speaker
// to that codec (codecs.Switch) before its node is looked up, since the
// node is rebuilt, and on an HDMI/DP output held whole makes its node
// pass those codecs through (codecs.SetPassthrough, recorded in the
// claim file, passthrough.go). A codec on any other output fails, and so
// does one the device does not offer, with the list it offers, and
// passthrough on a share of the output. Nil codecs has no speakers and no
// passthrough. together, when not nil, fails a claim that shares a
// container with another audio claim (ContainersAlone).
func PrepareWithCodecs(lookup Lookup, codecs Codecs, together Together, runtimeDir string, wait time.Duration) dra.PrepareFunc[Params] {
	return func(ctx context.Context, req dra.DeviceRequest[Params]) (dra.ContainerEdits, error) {
		name := req.Result.Device
		if together != nil {
			if err := together(ctx, req.Claim); err != nil {
				return dra.ContainerEdits{}, err
			}
		}
		pass, err := applyCodec(ctx, codecs, req)
		if err != nil {
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
			Volume: req.Params.Volume, Role: req.Params.Role, Passthrough: claimPassthrough(req, lookup, codecs, pass)}
		if d.Combine != nil {
			c.Nodes = append(c.Nodes, d.Node)
		}
		if err := gate.WriteClaim(runtimeDir, c); err != nil {
			return dra.ContainerEdits{}, fmt.Errorf("output %s: %w", name, err)
		}
		if len(pass) > 0 {
			if err := codecs.SetPassthrough(ctx, name, pass); err != nil {
				return dra.ContainerEdits{}, err
			}
		}
		if err := waitForSocket(ctx, gate.SocketPath(runtimeDir, uid), wait); err != nil {
			return dra.ContainerEdits{}, fmt.Errorf("output %s: %w", name, err)
		}
		edits := d.Edits()
		edits.Env = append(edits.Env, gate.RoleEnv(req.Params.Role)...)
		return edits, nil
	}
}

// applyCodec acts on req's codec parameter: it switches a speaker to
// its codec, or checks what an HDMI/DP output is asked to pass through
// and returns PipeWire's names of those codecs for the caller to set
// once the claim file records them. Nothing else takes a codec.
func applyCodec(ctx context.Context, codecs Codecs, req dra.DeviceRequest[Params]) ([]string, error) {
	name, codec := req.Result.Device, req.Params.Codec
	if codec == "" {
		return nil, nil
	}
	names, err := codecNames(codec)
	if err != nil {
		return nil, err
	}
	var offered []string
	var current string
	speaker, hdmi := false, false
	if codecs != nil {
		offered, current, speaker = codecs.Offered(name)
		if !speaker {
			offered, hdmi = codecs.Passthrough(name)
		}
	}
	switch {
	case hdmi:
		return checkPassthrough(name, names, offered, req)
	case !speaker:
		return nil, fmt.Errorf("output %s is neither a Bluetooth speaker nor an HDMI/DP output: the codec parameter (%q) applies to those only", name, codec)
	case len(names) > 1:
		return nil, fmt.Errorf("speaker %s runs one codec at a time; codec %q names %d", name, codec, len(names))
	case len(offered) == 0:
		return nil, fmt.Errorf("speaker %s offers no codec right now (PipeWire has no Bluetooth device for it: switched off, or out of range); codec %q cannot be set", name, codec)
	case !slices.Contains(offered, codec):
		return nil, fmt.Errorf("speaker %s does not offer codec %q; it offers %s", name, codec, strings.Join(offered, ", "))
	case current == codec:
		return nil, nil
	}
	return nil, codecs.Switch(ctx, name, codec)
}

// claimPassthrough is what the claim file records of passthrough: by
// node.name, the IEC 958 codecs of every HDMI/DP output of this driver
// the claim holds whose request asks for them and may have them, pass
// for the output being prepared; nil when there are none. Each device's
// prepare writes the claim's whole file, so each records them all.
func claimPassthrough(req dra.DeviceRequest[Params], lookup Lookup, codecs Codecs, pass []string) map[string][]string {
	out := map[string][]string{}
	if node, _, ok := lookup(req.Result.Device); ok && len(pass) > 0 {
		out[node] = pass
	}
	if req.Claim.Status.Allocation != nil && codecs != nil {
		for _, r := range req.Claim.Status.Allocation.Devices.Results {
			if r.Driver != DriverName || r.Device == req.Result.Device {
				continue
			}
			p, err := dra.ParamsOf[Params](DriverName, req.Claim, r.Request)
			if err != nil || p.Codec == "" {
				continue
			}
			names, err := codecNames(p.Codec)
			offered, hdmi := codecs.Passthrough(r.Device)
			if err != nil || !hdmi {
				continue
			}
			pc, err := checkPassthrough(r.Device, names, offered, dra.DeviceRequest[Params]{Result: r})
			if node, _, ok := lookup(r.Device); ok && err == nil {
				out[node] = pc
			}
		}
	}
	if len(out) == 0 {
		return nil
	}
	return out
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
