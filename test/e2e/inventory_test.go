// SPDX-License-Identifier: Apache-2.0

package e2e

import (
	"context"
	"errors"
	"fmt"
	"github.com/liken-sh/operators/test/poll"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	resourceapi "k8s.io/api/resource/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"
	"k8s.io/klog/v2/ktesting"
	"sigs.k8s.io/yaml"
	"tags.cncf.io/container-device-interface/pkg/cdi"

	"github.com/liken-sh/operators/internal/dra"
	"github.com/liken-sh/operators/internal/inventory"
	"github.com/liken-sh/operators/internal/uevent"
	"github.com/liken-sh/operators/test/e2e/harness"
	"github.com/liken-sh/operators/test/e2e/kubelet"
	"github.com/liken-sh/operators/test/fakesys"
)

// fakeEvents is a uevent source the test feeds: storms of any size,
// without sending the machine's other listeners a single datagram.
type fakeEvents struct {
	ev   chan uevent.Event
	errs chan error
	done chan struct{}
}

func newFakeEvents() *fakeEvents {
	return &fakeEvents{ev: make(chan uevent.Event), errs: make(chan error), done: make(chan struct{})}
}

func (f *fakeEvents) Events() <-chan uevent.Event { return f.ev }
func (f *fakeEvents) Errors() <-chan error        { return f.errs }
func (f *fakeEvents) Done() <-chan struct{}       { return f.done }
func (f *fakeEvents) Err() error                  { return nil }

func (f *fakeEvents) send(action, subsystem, devpath string) {
	f.ev <- uevent.Event{Action: action, Subsystem: subsystem, DevPath: devpath}
}

// templateClaim is a claim with the spec of the ResourceClaimTemplate
// named name in a deploy base's operator.yaml: the claim the operator's
// DaemonSet pod gets on a node.
func templateClaim(t *testing.T, base, name, claim string) *resourceapi.ResourceClaim {
	t.Helper()
	root, err := harness.ModuleRoot()
	must(t, err)
	data, err := os.ReadFile(filepath.Join(root, "deploy", base, "operator.yaml"))
	must(t, err)
	for _, doc := range regexp.MustCompile(`(?m)^---\s*$`).Split(string(data), -1) {
		var rct resourceapi.ResourceClaimTemplate
		if yaml.Unmarshal([]byte(doc), &rct) != nil || rct.Kind != "ResourceClaimTemplate" || rct.Name != name {
			continue
		}
		return &resourceapi.ResourceClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: claim}, Spec: rct.Spec.Spec}
	}
	t.Fatalf("no ResourceClaimTemplate %s in deploy/%s/operator.yaml", name, base)
	return nil
}

func deviceNames(s *resourceapi.ResourceSlice) []string {
	var out []string
	for _, d := range s.Spec.Devices {
		out = append(out, d.Name)
	}
	slices.Sort(out)
	return out
}

// cdiNodes reads the device-node paths of a prepared claim's CDI device.
func cdiNodes(t *testing.T, dir string, claim *resourceapi.ResourceClaim, id string) []string {
	t.Helper()
	spec, err := cdi.ReadSpec(filepath.Join(dir, inventory.DriverName+"-"+string(claim.UID)+".json"), 0)
	must(t, err)
	_, _, name, err := cdiParts(id)
	must(t, err)
	edits := spec.GetDevice(name).ContainerEdits
	if len(edits.Mounts)+len(edits.Env)+len(edits.Hooks) > 0 {
		t.Errorf("claim %s: CDI edits deliver more than device nodes: %+v", claim.Name, edits)
	}
	var out []string
	for _, n := range edits.DeviceNodes {
		if n.Type == "" {
			out = append(out, n.Path+" (no numbers)")
			continue
		}
		out = append(out, n.Path)
	}
	return out
}

// TestInventoryDriver runs the liken.sh inventory driver over the
// desktop's sysfs against the real control plane: the slice it publishes,
// the bluetooth and audio operators' own claims allocated against it by
// the real scheduler and prepared through its socket, a card unplugged
// and plugged in again behind a storm of 10,000 uevents, bad sysfs (a
// link loop, names of 300 characters), and the refusal to run beside
// another liken.sh driver.
func TestInventoryDriver(t *testing.T) {
	logger := ktesting.NewLogger(t, ktesting.NewConfig(ktesting.BufferLogs(true)))
	logs := logger.GetSink().(ktesting.Underlier).GetBuffer()
	ctx, cancel := context.WithCancel(klog.NewContext(context.Background(), logger))
	t.Cleanup(cancel)
	cluster, err := harness.Start(ctx, harness.Options{Logf: t.Logf})
	must(t, err)
	t.Cleanup(cluster.Stop)
	client := cluster.Client()
	must(t, ignore(cluster.AddNode(ctx, node)))
	must(t, cluster.ApplyDeviceClassesFile(ctx, "deploy/bluetooth/deviceclasses.yaml"))
	must(t, cluster.ApplyDeviceClassesFile(ctx, "deploy/audio/deviceclasses.yaml"))
	must(t, ignore(cluster.WaitForServiceAccount(ctx, "default", "default")))

	dir := t.TempDir()
	desk, err := fakesys.LayOutDesktop(dir)
	must(t, err)
	events := newFakeEvents()
	draOpts := dra.Options{
		RegistrarDir: filepath.Join(dir, "plugins_registry"), PluginDir: filepath.Join(dir, "plugins", inventory.DriverName),
		CDIDir: filepath.Join(dir, "cdi"), SettleQuiet: 300 * time.Millisecond,
	}
	cfg := inventory.Config{
		NodeName: node, KubeClient: client, SysRoot: desk.Sys, DevRoot: desk.Dev,
		DRA: draOpts, Events: events, RescanQuiet: 200 * time.Millisecond,
	}
	runCtx, stopRun := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- inventory.Run(runCtx, cfg) }()
	t.Cleanup(func() {
		stopRun()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
	})

	desktop := []string{harness.SoundControllerDevice, harness.BluetoothAdapterDevice, "usb-1-8-1-1"}
	slices.Sort(desktop)
	slice := waitForDriverSlice(t, ctx, cluster, inventory.DriverName, func(s *resourceapi.ResourceSlice) bool {
		return slices.Equal(deviceNames(s), desktop)
	})
	if slice.Spec.NodeName == nil || *slice.Spec.NodeName != node {
		t.Fatalf("slice %s is not on node %s", slice.Name, node)
	}
	// What the operators' own tests publish in liken's place is a subset
	// of what this driver publishes.
	for _, want := range harness.LikenDevices() {
		i := slices.IndexFunc(slice.Spec.Devices, func(d resourceapi.Device) bool { return d.Name == want.Name })
		for k, v := range want.Attributes {
			if got := slice.Spec.Devices[i].Attributes[k]; !apiequality.Semantic.DeepEqual(got, v) {
				t.Errorf("%s: attribute %s is %v, liken publishes %v", want.Name, k, got, v)
			}
		}
	}

	// The operators' DaemonSet claims, from their bases, allocate here.
	adapterClaim := createWithPod(t, ctx, cluster, templateClaim(t, "bluetooth", "bluetooth-adapter", "adapter"), "bluetooth-operator")
	soundClaim := createWithPod(t, ctx, cluster, templateClaim(t, "audio", "sound-card", "controllers"), "audio-operator")
	adapter := adapterClaim.Status.Allocation.Devices.Results[0].Device
	if adapter != harness.BluetoothAdapterDevice && adapter != "usb-1-8-1-1" {
		t.Fatalf("bluetooth-adapter claim allocated %s", adapter)
	}
	if r := soundClaim.Status.Allocation.Devices.Results; len(r) != 1 || r[0].Device != harness.SoundControllerDevice {
		t.Fatalf("sound-card claim (allocationMode All) allocated %v, want the one controller", r)
	}
	kl := kubelet.New(client, draOpts.RegistrarDir)
	t.Cleanup(func() { kl.Close() })
	plugin, err := kl.Discover(ctx, inventory.DriverName)
	must(t, err)
	gotSound := cdiNodes(t, draOpts.CDIDir, soundClaim, prepareOK(t, ctx, plugin, soundClaim).CdiDeviceIds[0])
	wantSound := []string{"/dev/input/event5", "/dev/input/event6", "/dev/snd/controlC0", "/dev/snd/hwC0D0", "/dev/snd/hwC0D2",
		"/dev/snd/pcmC0D0c", "/dev/snd/pcmC0D0p", "/dev/snd/pcmC0D3p", "/dev/snd/seq", "/dev/snd/timer"}
	if !slices.Equal(gotSound, wantSound) {
		t.Errorf("sound controller delivers %q, want %q", gotSound, wantSound)
	}
	gotAdapter := cdiNodes(t, draOpts.CDIDir, adapterClaim, prepareOK(t, ctx, plugin, adapterClaim).CdiDeviceIds[0])
	if len(gotAdapter) != 35 || gotAdapter[0] != "/dev/bus/usb/001/005" ||
		!slices.Contains(gotAdapter, "/dev/uinput") || !slices.Contains(gotAdapter, "/dev/uhid") ||
		!slices.Contains(gotAdapter, "/dev/input/event0") || !slices.Contains(gotAdapter, "/dev/input/event31") {
		t.Errorf("adapter delivers %q, want its usbfs node, uinput, uhid and event0..31", gotAdapter)
	}

	// Network churn wakes nothing; a card unplugged leaves the slice.
	writes := func() int { return strings.Count(logs.String(), "Published devices") }
	before := writes()
	for range 500 {
		events.send("add", "net", "/devices/virtual/net/veth0")
		events.send("remove", "queues", "/devices/virtual/net/veth0/queues/rx-0")
	}
	card := filepath.Join(desk.Sys, "class", "sound", "card0")
	must(t, os.Rename(card, card+".gone"))
	events.send("remove", "sound", "/devices/pci0000:00/0000:00:1f.3/sound/card0")
	waitForDriverSlice(t, ctx, cluster, inventory.DriverName, func(s *resourceapi.ResourceSlice) bool {
		return !hasDevice(s, harness.SoundControllerDevice) && hasDevice(s, harness.BluetoothAdapterDevice)
	})
	if n := writes() - before; n != 1 {
		t.Errorf("%d slice writes for 1,000 network uevents and one card removal, want 1", n)
	}
	// The prepared claim on the card that left names its nodes without
	// numbers, so its next container does not start with whatever device
	// takes them.
	poll.WaitFor(t, ctx, "the gone card's claim spec", 30*time.Second, func() (bool, string) {
		got := cdiNodes(t, draOpts.CDIDir, soundClaim, prepareOK(t, ctx, plugin, soundClaim).CdiDeviceIds[0])
		return len(got) == len(wantSound) && strings.HasSuffix(got[0], "(no numbers)"), fmt.Sprint(got)
	})

	// The card comes back, behind a storm of 10,000 uevents, beside a
	// card whose class link loops and two devices named with 300
	// characters (a product string; a directory name stops at the 255
	// bytes of NAME_MAX, so the board device's is that long): one rescan,
	// one clear line for the storm and one for the loop, and a slice the
	// API server accepts.
	long := strings.Repeat("x", 250)
	must(t, os.Symlink("card7", filepath.Join(desk.Sys, "class", "sound", "card7")))
	must(t, fakesys.BuildTree([]byte(strings.Join([]string{
		"link devices/platform/" + long + ".0/subsystem /bus/platform",
		"link devices/platform/" + long + ".0/driver /bus/platform/drivers/snd_dummy",
		"link devices/platform/" + long + ".0/sound/card3/device /devices/platform/" + long + ".0",
		"link class/sound/card3 /devices/platform/" + long + ".0/sound/card3",
		"file devices/pci0000:00/0000:00:14.0/usb1/1-8/1-8.1/product " + strings.Repeat("Radio ", 50)[:300],
		// The adapter, plugged in again in the same port: a new number.
		`file devices/pci0000:00/0000:00:14.0/usb1/1-8/1-8.1/uevent "MAJOR=189\nMINOR=5\nDEVNAME=bus/usb/001/006\nDEVTYPE=usb_device"`,
	}, "\n")), desk.Sys))
	must(t, os.Rename(card+".gone", card))
	before = writes()
	start := time.Now()
	for i := range 10000 {
		events.send("add", "sound", fmt.Sprintf("/devices/virtual/sound/storm%d", i))
	}
	t.Logf("10,000 uevents handed over in %s", time.Since(start))
	longName := inventory.DeviceName("platform", long+".0")
	slice = waitForDriverSlice(t, ctx, cluster, inventory.DriverName, func(s *resourceapi.ResourceSlice) bool {
		return hasDevice(s, harness.SoundControllerDevice) && hasDevice(s, longName)
	})
	time.Sleep(time.Second) // a second write would come within the windows
	if n := writes() - before; n != 1 {
		t.Errorf("%d slice writes for the storm, want 1", n)
	}
	if len(longName) != 63 {
		t.Errorf("300-character device named %q (%d characters)", longName, len(longName))
	}
	for _, d := range slice.Spec.Devices {
		if d.Name == harness.BluetoothAdapterDevice {
			if n := *d.Attributes["name"].StringValue; len(n) > 64 || !strings.HasPrefix(n, "Radio Radio") {
				t.Errorf("300-character product published as name %q", n)
			}
		}
	}
	// The prepared claims follow: the card's nodes are back, the adapter's
	// claim names its new usbfs node.
	poll.WaitFor(t, ctx, "the prepared claims' specs after the storm", 30*time.Second, func() (bool, string) {
		sound := cdiNodes(t, draOpts.CDIDir, soundClaim, prepareOK(t, ctx, plugin, soundClaim).CdiDeviceIds[0])
		adapter := cdiNodes(t, draOpts.CDIDir, adapterClaim, prepareOK(t, ctx, plugin, adapterClaim).CdiDeviceIds[0])
		return slices.Equal(sound, wantSound) && adapter[0] == "/dev/bus/usb/001/006", fmt.Sprint(sound, adapter[:1])
	})
	for _, line := range []string{"One rescan for a burst of uevents uevents=10000", `card7: the links loop`} {
		if !strings.Contains(logs.String(), line) {
			t.Errorf("log has no %q", line)
		}
	}

	// A second copy on this node, and a copy on a node liken serves,
	// refuse to start and say why.
	second := cfg
	second.Events = newFakeEvents()
	second.DRA.PluginDir = filepath.Join(dir, "second")
	second.DRA.CDIDir = filepath.Join(dir, "cdi2")
	err = inventory.Run(ctx, second)
	if !errors.Is(err, inventory.ErrNotAlone) || !strings.Contains(err.Error(), "liken.sh-reg.sock answers") {
		t.Errorf("a second driver on %s: %v", node, err)
	}
	must(t, cluster.AddLikenNode(ctx, "liken-node"))
	onLiken := cfg
	onLiken.NodeName, onLiken.Events = "liken-node", newFakeEvents()
	onLiken.DRA.RegistrarDir = filepath.Join(dir, "registry3")
	err = inventory.Run(ctx, onLiken)
	if !errors.Is(err, inventory.ErrNotAlone) || !strings.Contains(err.Error(), "ResourceSlice liken.sh-liken-node") {
		t.Errorf("the driver on a node liken serves: %v", err)
	}
}
