// SPDX-License-Identifier: Apache-2.0

package audio

import (
	"fmt"
	"path"
	"slices"
	"strings"

	cdispec "tags.cncf.io/container-device-interface/specs-go"

	"github.com/liken-sh/operators/internal/audio/gate"
	"github.com/liken-sh/operators/internal/dra"
)

// EnvNodePrefix starts the variable that names one request's nodes: the
// request's name in capitals with '-' made '_' follows
// (LIKEN_AUDIO_NODE_FRONT for request "front"), and its value is the
// node.name of every device allocated for that request, space-separated,
// in allocation order (one name for a request of one device). A
// container reaches one output of a claim by it.
const EnvNodePrefix = "LIKEN_AUDIO_NODE_"

// EnvSuffix is the part of a request's variable after EnvNodePrefix: the
// top-level request name (a subrequest "tv/hdmi" is known to the pod as
// "tv") in capitals with '-' made '_'. A request name is a DNS label, so
// two requests of one claim never share a suffix.
func EnvSuffix(request string) string {
	top, _, _ := strings.Cut(request, "/")
	return strings.ReplaceAll(strings.ToUpper(top), "-", "_")
}

// ContainerDir is where a claim's socket directory is mounted in a
// consumer's container: a directory of the claim's own under RuntimeDir,
// so two claims' sockets never hide one another.
func ContainerDir(claimUID string) string {
	return path.Join(RuntimeDir, claimUID)
}

// Delivery is what every device of one claim gives its container. CDI
// applies each device's edits in turn and keeps the last value of a
// variable and the last mount at a path, so every device of a claim
// carries the same whole delivery: the container gets one value per
// variable, whatever the order.
type Delivery struct {
	// ClaimUID is the claim's UID.
	ClaimUID string
	// SocketDir is the claim's socket directory on the host
	// (gate.SocketDir).
	SocketDir string
	// Node is PIPEWIRE_NODE: the node a stream with no target of its
	// own plays to or records from.
	Node string
	// Requests are the node.names of each request's devices, by
	// top-level request name, in allocation order.
	Requests map[string][]string
	// Combine is the claim's combined sink (Node), when it holds more
	// than one output.
	Combine *gate.Combine
}

// Edits are the container edits of every device of the claim: the
// claim's socket directory mounted read-only at ContainerDir (a client
// needs to connect to the socket, which a read-only bind still allows,
// and must not replace it; the directory, not the socket, is bound, so
// the socket the gate binds anew after a PipeWire restart is the one the
// consumer sees), PIPEWIRE_REMOTE naming the socket in it,
// PIPEWIRE_NODE, and one EnvNodePrefix variable per request, sorted.
func (d Delivery) Edits() dra.ContainerEdits {
	dir := ContainerDir(d.ClaimUID)
	env := []string{
		"PIPEWIRE_REMOTE=" + path.Join(dir, SocketName),
		"PIPEWIRE_NODE=" + d.Node,
	}
	var vars []string
	for req, nodes := range d.Requests {
		vars = append(vars, EnvNodePrefix+EnvSuffix(req)+"="+strings.Join(nodes, " "))
	}
	slices.Sort(vars)
	return dra.ContainerEdits{
		Env: append(env, vars...),
		Mounts: []*cdispec.Mount{{
			HostPath: d.SocketDir, ContainerPath: dir, Type: "bind",
			Options: []string{"ro", "rbind", "rprivate", "nosuid", "nodev"},
		}},
	}
}

// claimDelivery is the delivery of the claim req belongs to: every
// allocation result of this driver in it, looked up by lookup. The
// claim's node (PIPEWIRE_NODE) is its first output, else its first
// input.
// A result lookup does not know is left out (its own prepare fails). An
// error is a request's parameters that do not decode.
func claimDelivery(req dra.DeviceRequest[Params], runtimeDir string, lookup Lookup) (Delivery, error) {
	uid := string(req.Claim.UID)
	d := Delivery{ClaimUID: uid, SocketDir: gate.SocketDir(runtimeDir, uid), Requests: map[string][]string{}}
	results := []string{req.Result.Device}
	requests := []string{req.Result.Request}
	if a := req.Claim.Status.Allocation; a != nil {
		results, requests = nil, nil
		for _, r := range a.Devices.Results {
			if r.Driver == DriverName {
				results, requests = append(results, r.Device), append(requests, r.Request)
			}
		}
	}
	var outputs, inputs []string
	position := map[string]string{} // output node.name: its Params.Position
	for i, dev := range results {
		node, _, ok := lookup(dev)
		if !ok {
			continue
		}
		if top, _, _ := strings.Cut(requests[i], "/"); top != "" {
			d.Requests[top] = append(d.Requests[top], node)
		}
		switch {
		case strings.HasSuffix(dev, CaptureSuffix):
			if !slices.Contains(inputs, node) {
				inputs = append(inputs, node)
			}
		case !slices.Contains(outputs, node):
			outputs = append(outputs, node)
			p, err := dra.ParamsOf[Params](DriverName, req.Claim, requests[i])
			if err != nil {
				return d, fmt.Errorf("request %q: %w", requests[i], err)
			}
			position[node] = p.Position
		}
	}
	switch {
	case len(outputs) > 1:
		d.Node = gate.CombinedNodeName(uid)
		d.Combine = combineOf(outputs, position)
	case len(outputs) == 1:
		d.Node = outputs[0]
	case len(inputs) > 0:
		d.Node = inputs[0]
	}
	return d, nil
}

// renameNode replaces the node.name old by new wherever edits name it:
// PIPEWIRE_NODE and the per-request variables. ok is false when edits
// name it nowhere.
func renameNode(edits dra.ContainerEdits, old, new string) (dra.ContainerEdits, bool) {
	out := edits
	out.Env = slices.Clone(edits.Env)
	changed := false
	for i, e := range out.Env {
		key, value, _ := strings.Cut(e, "=")
		if key != "PIPEWIRE_NODE" && !strings.HasPrefix(key, EnvNodePrefix) {
			continue
		}
		names := strings.Fields(value)
		for j, n := range names {
			if n == old {
				names[j], changed = new, true
			}
		}
		out.Env[i] = key + "=" + strings.Join(names, " ")
	}
	return out, changed
}

// namedNodes lists the node.names edits name in PIPEWIRE_NODE and the
// per-request variables, each once.
func namedNodes(edits dra.ContainerEdits) []string {
	var out []string
	for _, e := range edits.Env {
		key, value, _ := strings.Cut(e, "=")
		if key != "PIPEWIRE_NODE" && !strings.HasPrefix(key, EnvNodePrefix) {
			continue
		}
		for _, n := range strings.Fields(value) {
			if !slices.Contains(out, n) {
				out = append(out, n)
			}
		}
	}
	return out
}

// positions are the channels of a combined sink each Params.Position
// plays, in the order a combined sink lists them.
var positions = map[string][]string{
	"":      {"FL", "FR"},
	"front": {"FL", "FR"},
	"rear":  {"RL", "RR"},
}

// combineOf is the combined sink of outputs (node.names, in allocation
// order), each playing the channels of its position onto its own front
// left and right: the combined sink has the channels of every position
// an output takes, front before rear.
func combineOf(outputs []string, position map[string]string) *gate.Combine {
	c := &gate.Combine{}
	for _, pos := range []string{"front", "rear"} {
		if slices.ContainsFunc(outputs, func(o string) bool { return slices.Equal(positions[position[o]], positions[pos]) }) {
			c.Positions = append(c.Positions, positions[pos]...)
		}
	}
	for _, o := range outputs {
		c.Outputs = append(c.Outputs, gate.CombineOutput{Node: o, From: positions[position[o]], To: []string{"FL", "FR"}})
	}
	return c
}
