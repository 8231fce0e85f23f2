// SPDX-License-Identifier: Apache-2.0

package inventory

import (
	"context"
	"fmt"

	"github.com/liken-sh/operators/internal/dra"
)

// Params are the opaque claim parameters of this driver. There are none:
// the empty struct, decoded strictly by the driver core, refuses any key,
// so a misspelt option fails the claim instead of being ignored.
type Params struct{}

// Prepare returns the driver core's prepare function. current returns the
// scan the driver published last; only a device of it is prepared, and
// its nodes are read from sysfs (under sysRoot) at the moment of the call,
// so a card's jack registered since the scan is delivered too.
//
// The edits are device nodes only (see Edits): no mount, no environment,
// no hook. Errors name the device: one this driver does not publish, or
// one whose nodes cannot be read (see Nodes); the kubelet retries and the
// pod waits in ContainerCreating.
func Prepare(current func() Scan, sysRoot, devRoot string) dra.PrepareFunc[Params] {
	return func(ctx context.Context, req dra.DeviceRequest[Params]) (dra.ContainerEdits, error) {
		name := req.Result.Device
		found, ok := current().Lookup(name)
		if !ok {
			return dra.ContainerEdits{}, fmt.Errorf("device %q is not one this driver publishes on this node now", name)
		}
		nodes, err := Nodes(sysRoot, devRoot, found)
		if err != nil {
			return dra.ContainerEdits{}, err
		}
		return Edits(nodes, devRoot), nil
	}
}
