// SPDX-License-Identifier: Apache-2.0

package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	resourceapi "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/liken-sh/operators/internal/audio"
	"github.com/liken-sh/operators/internal/audio/speakers"
	"github.com/liken-sh/operators/internal/bluetooth"
	"github.com/liken-sh/operators/internal/bluez"
	"github.com/liken-sh/operators/internal/pipewire"
	"github.com/liken-sh/operators/test/bluezsim"
	"github.com/liken-sh/operators/test/e2e/harness"
	"github.com/liken-sh/operators/test/poll"
)

// publishSpeakerSlice writes the audio driver's slice of the node as the
// audio operator publishes a connected speaker whose node PipeWire holds:
// the devices audio.SpeakerDevices makes, untainted. No PipeWire runs:
// the Bluetooth operator reads nothing of it.
func publishSpeakerSlice(t *testing.T, ctx context.Context, c *harness.Cluster, address, alias string) {
	t.Helper()
	sp := speakers.Speaker{Address: mustAddr(t, address), Alias: alias, Connected: true}
	eps := []audio.SpeakerEndpoint{{Speaker: sp, Node: &pipewire.Node{Name: "bluez_output." + strings.ReplaceAll(address, ":", "_") + ".1"}}}
	var devices []resourceapi.Device
	for _, d := range audio.SpeakerDevices(eps) {
		if d.Tainted() {
			t.Fatalf("a connected speaker with its node is tainted: %+v", d.Taints)
		}
		devices = append(devices, resourceapi.Device{Name: d.Name, Attributes: d.Attributes})
	}
	n := node
	slice := &resourceapi.ResourceSlice{
		ObjectMeta: metav1.ObjectMeta{Name: audio.DriverName + "-" + node},
		Spec: resourceapi.ResourceSliceSpec{Driver: audio.DriverName, NodeName: &n,
			Pool: resourceapi.ResourcePool{Name: node, Generation: 1, ResourceSliceCount: 1}, Devices: devices},
	}
	_, err := c.Client().ResourceV1().ResourceSlices().Create(ctx, slice, metav1.CreateOptions{})
	must(t, err)
}

// TestBluetoothReconnectsHeldSpeaker: the whole Bluetooth operator on a
// node whose paired speaker the real scheduler allocated to a claim of
// the audio driver (selected by its name, as examples/bluetooth-speaker
// does). The speaker is switched off: the operator pages it again and
// again, each page failing with the page timeout, and puts an Event on
// the claim. The speaker is switched on and nothing else is done: the
// operator's next page connects it.
func TestBluetoothReconnectsHeldSpeaker(t *testing.T) {
	ctx, cluster := startBluetoothCluster(t, "deploy/audio/deviceclasses.yaml")
	dir := t.TempDir()
	sim := bluezsim.New(t, bluezsim.Options{StorageDir: filepath.Join(dir, "bluetooth"), PageTimeout: 200 * time.Millisecond})
	must(t, ignore(sim.AddAdapter("hci0", adapterAddr)))
	must(t, ignore(sim.AddSpeaker("hci0", speakerAddr, bluezsim.Speaker{Name: "Kitchen"})))
	must(t, sim.Connect("hci0", speakerAddr))
	sysRoot := filepath.Join(dir, "sys")
	must(t, os.MkdirAll(filepath.Join(sysRoot, "bus", "hid", "devices"), 0o755))
	runBluetoothOperator(t, ctx, cluster, bluetooth.Config{
		Bus: bluez.Options{Address: sim.Address()}, BondsRoot: sim.StorageDir(),
		SysRoot: sysRoot, DRA: bluetoothDRA(dir), BondSettle: 300 * time.Millisecond,
		ReconnectFirst: 300 * time.Millisecond, ReconnectCeiling: 1200 * time.Millisecond,
	})
	publishSpeakerSlice(t, ctx, cluster, speakerAddr, "Kitchen")

	claim := &resourceapi.ResourceClaim{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "kitchen-speaker"},
		Spec: resourceapi.ResourceClaimSpec{Devices: resourceapi.DeviceClaim{Requests: []resourceapi.DeviceRequest{{
			Name: "out", Exactly: &resourceapi.ExactDeviceRequest{DeviceClassName: "audio-sink", Selectors: []resourceapi.DeviceSelector{{
				CEL: &resourceapi.CELDeviceSelector{Expression: `device.attributes["audio.liken.sh"].connectionType == "bluetooth" && device.attributes["audio.liken.sh"].name == "Kitchen"`},
			}}},
		}}}},
	}
	claim = createWithPod(t, ctx, cluster, claim, "player")
	if r := claim.Status.Allocation.Devices.Results; len(r) != 1 || r[0].Device != mustAddr(t, speakerAddr).Key() || r[0].Pool != node {
		t.Fatalf("allocation %+v, want the speaker %s of pool %s", r, mustAddr(t, speakerAddr).Key(), node)
	}

	must(t, sim.SetSwitchedOn("hci0", speakerAddr, false))
	poll.WaitFor(t, ctx, "the operator paging the speaker switched off", 60*time.Second, func() (bool, string) {
		calls, err := sim.ConnectCalls("hci0", speakerAddr)
		if err != nil {
			return false, err.Error()
		}
		failed := 0
		for _, c := range calls {
			if c.Error == "org.bluez.Error.Failed: br-connection-page-timeout" {
				failed++
			}
		}
		return failed >= 3, fmt.Sprintf("%+v", calls)
	})
	poll.WaitFor(t, ctx, "a SpeakerNotAnswering Event on the claim", 30*time.Second, func() (bool, string) {
		list, err := cluster.Client().EventsV1().Events("default").List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err.Error()
		}
		var seen []string
		for _, e := range list.Items {
			if e.Regarding.Kind == "ResourceClaim" && e.Regarding.Name == claim.Name {
				if e.Reason == bluetooth.ReasonSpeakerNotAnswering && strings.Contains(e.Note, "node "+node) {
					return true, ""
				}
				seen = append(seen, e.Reason)
			}
		}
		return false, fmt.Sprint(seen)
	})

	switchedOn := time.Now()
	must(t, sim.SetSwitchedOn("hci0", speakerAddr, true))
	poll.WaitFor(t, ctx, "the speaker connected by the operator", 60*time.Second, func() (bool, string) {
		v, err := sim.DeviceProperty("hci0", speakerAddr, "Connected")
		return err == nil && v == true, fmt.Sprint(v, err)
	})
	t.Logf("connected %v after it was switched on (ceiling 1.2 s)", time.Since(switchedOn).Round(time.Millisecond))
	calls, err := sim.ConnectCalls("hci0", speakerAddr)
	must(t, err)
	if last := calls[len(calls)-1]; last.Error != "" || last.Pending {
		t.Errorf("the last page %+v, want the one that connected it", last)
	}
}
