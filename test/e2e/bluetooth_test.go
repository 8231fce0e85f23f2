// SPDX-License-Identifier: Apache-2.0

package e2e

import (
	"bytes"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	resourceapi "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"tags.cncf.io/container-device-interface/pkg/cdi"
	cdispec "tags.cncf.io/container-device-interface/specs-go"

	"github.com/liken-sh/operators/internal/bluetooth"
	"github.com/liken-sh/operators/internal/bluez"
	"github.com/liken-sh/operators/internal/bonds"
	"github.com/liken-sh/operators/test/bluezsim"
	"github.com/liken-sh/operators/test/e2e/kubelet"
	"github.com/liken-sh/operators/test/fakesys"
	"github.com/liken-sh/operators/test/poll"
)

const (
	adapterAddr = "00:1A:7D:DA:71:13"
	padAddr     = "E4:17:D8:C5:67:6D" // the 8BitDo NES30 Pro of the fixtures
	speakerAddr = "A0:AB:51:33:B7:12"
	hidUUID     = "00001124-0000-1000-8000-00805f9b34fb"
	a2dpSink    = "0000110b-0000-1000-8000-00805f9b34fb"
)

// TestBluetoothOperator runs the operator against the BlueZ simulator on a
// real bus, a recorded-shape sysfs, and the real control plane.
func TestBluetoothOperator(t *testing.T) {
	ctx, cluster := startBluetoothCluster(t)
	client := cluster.Client()

	dir := t.TempDir()
	sim, sysRoot := simulatedBluetoothNode(t, dir)
	draOpts := bluetoothDRA(dir)
	op := runBluetoothOperator(t, ctx, cluster, bluetooth.Config{
		Bus: bluez.Options{Address: sim.Address()}, BondsRoot: sim.StorageDir(),
		SysRoot: sysRoot, DRA: draOpts, BondSettle: 300 * time.Millisecond,
	})

	pad, speaker := bluetooth.ControllerName(mustAddr(t, padAddr)), bluetooth.ControllerName(mustAddr(t, speakerAddr))
	media := bluetooth.MediaBusName(mustAddr(t, adapterAddr))
	slice := waitForDriverSlice(t, ctx, cluster, bluetooth.DriverName, func(s *resourceapi.ResourceSlice) bool {
		return hasDevice(s, pad) && hasDevice(s, speaker) && hasDevice(s, media)
	})
	for _, d := range slice.Spec.Devices {
		if d.Name == media && !*d.Attributes["sound.liken.sh/supportsSound"].BoolValue {
			t.Fatal("media bus not stamped supportsSound")
		}
	}

	// A claim selecting input goes to the gamepad, never the speaker.
	claim := &resourceapi.ResourceClaim{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "pad"},
		Spec: resourceapi.ResourceClaimSpec{Devices: resourceapi.DeviceClaim{Requests: []resourceapi.DeviceRequest{{
			Name: "pad", Exactly: &resourceapi.ExactDeviceRequest{DeviceClassName: "bluetooth-input"},
		}}}},
	}
	allocated := createWithPod(t, ctx, cluster, claim, "player")
	if got := allocated.Status.Allocation.Devices.Results[0].Device; got != pad {
		t.Fatalf("input claim allocated %s, want the gamepad %s", got, pad)
	}
	kl := kubelet.New(client, draOpts.RegistrarDir)
	t.Cleanup(func() { kl.Close() })
	plugin, err := kl.Discover(ctx, bluetooth.DriverName)
	if err != nil {
		t.Fatal(err)
	}
	dev := prepareOK(t, ctx, plugin, allocated)
	spec, err := cdi.ReadSpec(filepath.Join(draOpts.CDIDir, bluetooth.DriverName+"-"+string(allocated.UID)+".json"), 0)
	if err != nil {
		t.Fatal(err)
	}
	_, _, name, _ := cdiParts(dev.CdiDeviceIds[0])
	edits := spec.GetDevice(name).ContainerEdits
	// By number, as sysfs gave it: the runtime creates the node from it
	// and looks no host path up. The variables name the node in the
	// container and say that it is the pad's own (no relay runs here).
	suffix := bluetooth.EnvSuffix(mustAddr(t, padAddr))
	wantEnv := []string{bluetooth.EnvInputPrefix + suffix + "=/dev/input/event7", bluetooth.EnvDeliveryPrefix + suffix + "=direct"}
	if len(edits.DeviceNodes) != 1 || len(edits.Mounts) != 0 || !slices.Equal(edits.Env, wantEnv) ||
		*edits.DeviceNodes[0] != (cdispec.DeviceNode{Path: "/dev/input/event7", Type: "c", Major: 13, Minor: 71}) {
		t.Fatalf("CDI edits %+v (node %+v), want exactly the gamepad's event7 (c 13:71) and %q", edits, edits.DeviceNodes, wantEnv)
	}

	// A claim allocated by hand to a well-formed name that this operator
	// never published (the broadcast address's media bus) is refused.
	forged := claim.DeepCopy()
	forged.ObjectMeta = metav1.ObjectMeta{Namespace: "default", Name: "forged"}
	forged, err = client.ResourceV1().ResourceClaims("default").Create(ctx, forged, metav1.CreateOptions{})
	must(t, err)
	forged.Status.Allocation = &resourceapi.AllocationResult{Devices: resourceapi.DeviceAllocationResult{Results: []resourceapi.DeviceRequestAllocationResult{{
		Request: "pad", Driver: bluetooth.DriverName, Pool: node, Device: "ff-ff-ff-ff-ff-ff-media",
	}}}}
	forged, err = client.ResourceV1().ResourceClaims("default").UpdateStatus(ctx, forged, metav1.UpdateOptions{})
	must(t, err)
	resp, err := plugin.Prepare(ctx, forged)
	must(t, err)
	if got := resp.Claims[string(forged.UID)].Error; !strings.Contains(got, `device "ff-ff-ff-ff-ff-ff-media" is not one this operator publishes`) {
		t.Fatalf("prepare of an unpublished media bus: error %q", got)
	}

	// The gamepad disconnecting taints it. Its HID device goes with the
	// link, and the claim's spec then names no node.
	must(t, fakesys.RemoveHID(sysRoot, filepath.Join(sysRoot, "devices/virtual/misc/uhid/0005:2DC8:3820.0001")))
	must(t, sim.Disconnect("hci0", padAddr, bluezsim.ReasonRemote))
	waitForDriverSlice(t, ctx, cluster, bluetooth.DriverName, func(s *resourceapi.ResourceSlice) bool {
		return slices.ContainsFunc(s.Spec.Devices, func(d resourceapi.Device) bool {
			return d.Name == pad && slices.ContainsFunc(d.Taints, func(t resourceapi.DeviceTaint) bool { return t.Key == bluetooth.TaintDisconnected })
		})
	})
	specPath := filepath.Join(draOpts.CDIDir, bluetooth.DriverName+"-"+string(allocated.UID)+".json")
	asleep := []string{bluetooth.EnvInputPrefix + suffix + "=", bluetooth.EnvDeliveryPrefix + suffix + "=direct"}
	waitForSpecEdits(t, specPath, name, "no node while the pad sleeps", func(e cdispec.ContainerEdits) bool {
		return len(e.DeviceNodes) == 0 && slices.Equal(e.Env, asleep)
	})
	// A USB keyboard takes the pad's old node and number (event7, 13:71),
	// and the pad wakes at event8 (13:72): the spec follows the pad.
	must(t, ignore(fakesys.USBHID(sysRoot, "0003:046D:C31C.0002", "Logitech USB Keyboard", 2, 7)))
	must(t, ignore(fakesys.BluetoothHID(sysRoot, "0005:2DC8:3820.0003", "8Bitdo NES30 Pro", padAddr, adapterAddr, 8)))
	must(t, sim.Connect("hci0", padAddr))
	awake := []string{bluetooth.EnvInputPrefix + suffix + "=/dev/input/event8", bluetooth.EnvDeliveryPrefix + suffix + "=direct"}
	waitForSpecEdits(t, specPath, name, "the pad's new node once it wakes", func(e cdispec.ContainerEdits) bool {
		return len(e.DeviceNodes) == 1 && *e.DeviceNodes[0] == (cdispec.DeviceNode{Path: "/dev/input/event8", Type: "c", Major: 13, Minor: 72}) &&
			slices.Equal(e.Env, awake)
	})

	// Every bond lands in its Secret, byte for byte, and so does a new pairing.
	newPad := "C8:3F:26:00:11:22"
	must(t, ignore(sim.AddDevice("hci0", newPad, bluezsim.Device{Name: "Wireless Controller", Class: 0x002508, UUIDs: []string{hidUUID}})))
	must(t, sim.Pair("hci0", newPad))
	for _, d := range []string{padAddr, speakerAddr, newPad} {
		waitForBondSecret(t, ctx, cluster, sim.StorageDir(), d)
	}

	// The pod restarts: bondfetch restores the Secrets into a fresh tree,
	// byte for byte, and the bluetoothd that loads it still has the
	// gamepad paired, so the new operator publishes it again.
	if err := op.Stop(); err != nil {
		t.Fatalf("operator on SIGTERM: %v", err)
	}
	fresh := filepath.Join(dir, "fresh-bonds")
	adapter := mustAddr(t, adapterAddr)
	fetched, err := bonds.Fetch(ctx, client.CoreV1().Secrets("liken-system"), "liken-system", adapter)
	must(t, err)
	if len(fetched.Skipped) != 0 || len(fetched.Bonds) != 3 {
		t.Fatalf("fetched %d bonds, skipped %v", len(fetched.Bonds), fetched.Skipped)
	}
	must(t, ignore(bonds.WriteTree(fresh, adapter, fetched.Bonds)))
	old, _, err := bonds.ReadTree(sim.StorageDir(), adapter)
	must(t, err)
	restored, _, err := bonds.ReadTree(fresh, adapter)
	must(t, err)
	if len(old) != len(restored) {
		t.Fatalf("restored %d bonds of %d", len(restored), len(old))
	}
	for i := range old {
		if old[i].Device != restored[i].Device || !bytes.Equal(old[i].Info, restored[i].Info) || !bytes.Equal(old[i].Cache, restored[i].Cache) {
			t.Fatalf("bond of %s not restored byte for byte", old[i].Device)
		}
	}
	sim2 := bluezsim.New(t, bluezsim.Options{StorageDir: fresh})
	must(t, ignore(sim2.AddAdapter("hci0", adapterAddr)))
	reg2 := prometheus.NewRegistry()
	op2 := runBluetoothOperator(t, ctx, cluster, bluetooth.Config{
		Bus: bluez.Options{Address: sim2.Address()}, BondsRoot: fresh, SysRoot: sysRoot, DRA: draOpts, Registerer: reg2,
	})
	pad2 := bluetooth.ControllerName(mustAddr(t, newPad))
	must(t, sim2.Connect("hci0", padAddr))
	// The first operator's slice is still there and may already look
	// like what is awaited below: the new operator must have published
	// its own set before bluetoothd goes, or it has nothing to taint.
	poll.WaitFor(t, ctx, "the new operator's first device set", 30*time.Second, func() (bool, string) {
		fams, err := reg2.Gather()
		if err != nil {
			return false, err.Error()
		}
		for _, f := range fams {
			if f.GetName() == "liken_dra_published_devices" && len(f.GetMetric()) == 1 && f.GetMetric()[0].GetGauge().GetValue() >= 3 {
				return true, ""
			}
		}
		return false, "no device set published yet"
	})
	untainted := func(d resourceapi.Device) bool { return len(d.Taints) == 0 }
	waitForDriverSlice(t, ctx, cluster, bluetooth.DriverName, func(s *resourceapi.ResourceSlice) bool {
		return hasDevice(s, pad2) && slices.ContainsFunc(s.Spec.Devices, func(d resourceapi.Device) bool {
			return d.Name == pad && untainted(d)
		}) && slices.ContainsFunc(s.Spec.Devices, func(d resourceapi.Device) bool { return d.Name == media && untainted(d) })
	})

	// bluetoothd leaves the bus: the operator exits with an error that
	// says so once, and by then the API server already holds every device
	// tainted, so nothing is scheduled onto a dead daemon while the
	// kubelet's backoff delays the restart.
	left := time.Now()
	must(t, sim2.StopBlueZ())
	var exitErr error
	select {
	case <-op2.Exited():
		exitErr = op2.Err()
		t.Logf("the operator exited %v after bluetoothd left: %v", time.Since(left).Round(time.Millisecond), exitErr)
	case <-time.After(30 * time.Second):
		t.Fatal("the operator did not exit within 30 s of bluetoothd leaving the bus")
	}
	if exitErr == nil || strings.Count(exitErr.Error(), "bluetoothd left the bus") != 1 {
		t.Fatalf("exit error %v, want one that says once that bluetoothd left the bus", exitErr)
	}
	list, err := client.ResourceV1().ResourceSlices().List(ctx, metav1.ListOptions{FieldSelector: "spec.driver=" + bluetooth.DriverName})
	must(t, err)
	seen := map[string]bool{}
	for _, s := range list.Items {
		for _, d := range s.Spec.Devices {
			seen[d.Name] = true
			if !slices.ContainsFunc(d.Taints, func(t resourceapi.DeviceTaint) bool { return t.Key == bluetooth.TaintDisconnected }) {
				t.Errorf("%s is not tainted %s when the operator has exited: %+v", d.Name, bluetooth.TaintDisconnected, d.Taints)
			}
		}
	}
	if !seen[pad] || !seen[pad2] || !seen[media] {
		t.Errorf("published after the exit: %v, want the pads and the media bus", seen)
	}

	// bluetoothd comes back and the kubelet restarts the operator: with
	// no one acting, every device is published untainted again.
	must(t, sim2.StartBlueZ(ctx))
	must(t, sim2.Connect("hci0", padAddr))
	back := time.Now()
	runBluetoothOperator(t, ctx, cluster, bluetooth.Config{
		Bus: bluez.Options{Address: sim2.Address()}, BondsRoot: fresh, SysRoot: sysRoot, DRA: draOpts,
	})
	waitForDriverSlice(t, ctx, cluster, bluetooth.DriverName, func(s *resourceapi.ResourceSlice) bool {
		return slices.ContainsFunc(s.Spec.Devices, func(d resourceapi.Device) bool { return d.Name == pad && untainted(d) }) &&
			slices.ContainsFunc(s.Spec.Devices, func(d resourceapi.Device) bool { return d.Name == media && untainted(d) })
	})
	t.Logf("untainted %v after bluetoothd was back", time.Since(back).Round(time.Millisecond))
}

// waitForSpecEdits waits up to 30 s for the CDI spec at path to give
// device the edits ok accepts, and fails naming what it waited for and
// the edits it last read.
func waitForSpecEdits(t *testing.T, path, device, what string, ok func(cdispec.ContainerEdits) bool) {
	t.Helper()
	last := "no spec"
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		spec, err := cdi.ReadSpec(path, 0)
		if err == nil {
			if d := spec.GetDevice(device); d != nil {
				if ok(d.ContainerEdits) {
					return
				}
				last = "nodes"
				for _, n := range d.ContainerEdits.DeviceNodes {
					last += fmt.Sprintf(" %s %s %d:%d", n.Path, n.Type, n.Major, n.Minor)
				}
				last += fmt.Sprintf(", env %q", d.ContainerEdits.Env)
			}
		} else {
			last = err.Error()
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("the claim's CDI spec never gave %s: last %s", what, last)
}
