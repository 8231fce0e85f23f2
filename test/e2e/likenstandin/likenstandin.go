// Package likenstandin stands in for liken's own liken.sh inventory driver
// on a node with a real kubelet: it publishes the node's raw hardware as
// [harness.LikenDevices] names it (a btusb Bluetooth adapter, a sound
// controller) and prepares the claims the operators' own pods make on it,
// so the kubelet's NodePrepareResources for driver liken.sh is answered
// by a real DRA plugin through plugins_registry. It runs on the shared
// driver core (internal/dra) in the test process.
//
// It is kept to what the operators' pods read from such a claim, so that
// the inventory driver itself (cmd/liken-inventory) can take its place:
// the adapter's claim delivers its usbfs node, the sound controller's an
// environment variable naming it (the audio pods of the kubelet tier read
// recorded cards, not device nodes).
package likenstandin

import (
	"context"
	"fmt"

	cdispec "tags.cncf.io/container-device-interface/specs-go"

	"github.com/liken-sh/operators/internal/dra"
	"github.com/liken-sh/operators/test/e2e/harness"
)

// EnvDevice is the variable every prepared device sets: its device name.
const EnvDevice = "LIKEN_SH_DEVICE"

// Options say what the stand-in hands out besides the core's options.
type Options struct {
	// AdapterUSBNode is the host path of the adapter's usbfs node
	// (/dev/bus/usb/BBB/DDD), which must exist as a character device.
	AdapterUSBNode string
}

// Driver is a running stand-in.
type Driver struct {
	*dra.Driver
}

// Start runs the stand-in with core options opts (DriverName and CDIClass
// are set here) and publishes the liken devices.
func Start(ctx context.Context, opts dra.Options, o Options) (*Driver, error) {
	opts.DriverName, opts.CDIClass = harness.LikenDriver, "device"
	prepare := func(_ context.Context, req dra.DeviceRequest[struct{}]) (dra.ContainerEdits, error) {
		edits := dra.ContainerEdits{Env: []string{EnvDevice + "=" + req.Result.Device}}
		switch req.Result.Device {
		case harness.BluetoothAdapterDevice:
			edits.DeviceNodes = []*cdispec.DeviceNode{{Path: o.AdapterUSBNode}}
		case harness.SoundControllerDevice:
		default:
			return dra.ContainerEdits{}, fmt.Errorf("device %q is not published by this node", req.Result.Device)
		}
		return edits, nil
	}
	core, err := dra.Start(ctx, opts, prepare)
	if err != nil {
		return nil, err
	}
	var devices []dra.Device
	for _, d := range harness.LikenDevices() {
		devices = append(devices, dra.Device{Name: d.Name, Attributes: d.Attributes})
	}
	if err := core.SetDevices(devices); err != nil {
		core.Stop()
		return nil, err
	}
	return &Driver{core}, nil
}
