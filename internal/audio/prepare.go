package audio

import (
	"context"
	"fmt"
	"path"

	cdispec "tags.cncf.io/container-device-interface/specs-go"

	"github.com/liken-sh/operators/internal/dra"
)

// RuntimeDir is the PipeWire runtime directory: a hostPath in the seed,
// mounted at the same path in the operator's pod and, through CDI, in every
// consumer's container, so the socket path is the same on both sides.
const RuntimeDir = "/var/run/audio.liken.sh"

// SocketName is PipeWire's default socket in RuntimeDir.
const SocketName = "pipewire-0"

// Params is the operator's opaque claim configuration. It has no fields
// yet, so the core's strict decoding refuses any key.
type Params struct{}

// Lookup resolves a device name to what prepare needs now: the endpoint's
// PipeWire node.name, and whether PipeWire holds that node. ok is false
// for a name this operator does not publish.
type Lookup func(device string) (nodeName string, live bool, ok bool)

// Prepare returns the core's prepare function: a consumer gets the runtime
// directory mounted read-only and PIPEWIRE_REMOTE and PIPEWIRE_NODE, so a
// PipeWire client in the container connects to this node's PipeWire and
// plays to exactly that sink. A device with no sink right now fails with
// that reason; the kubelet retries.
func Prepare(lookup Lookup) dra.PrepareFunc[Params] {
	return func(_ context.Context, req dra.DeviceRequest[Params]) (dra.ContainerEdits, error) {
		name := req.Result.Device
		node, live, ok := lookup(name)
		if !ok {
			return dra.ContainerEdits{}, fmt.Errorf("output %s is not one this operator publishes", name)
		}
		if !live {
			return dra.ContainerEdits{}, fmt.Errorf("output %s has no PipeWire sink right now", name)
		}
		return Edits(node), nil
	}
}

// Edits are the container edits of one output whose node is nodeName.
// The mount is read-only: a client needs to connect to the socket, which
// a read-only bind still allows, and must not replace it.
func Edits(nodeName string) dra.ContainerEdits {
	return dra.ContainerEdits{
		Env: []string{
			"PIPEWIRE_REMOTE=" + path.Join(RuntimeDir, SocketName),
			"PIPEWIRE_NODE=" + nodeName,
		},
		Mounts: []*cdispec.Mount{{
			HostPath: RuntimeDir, ContainerPath: RuntimeDir, Type: "bind",
			Options: []string{"ro", "rbind", "rprivate", "nosuid", "nodev"},
		}},
	}
}
