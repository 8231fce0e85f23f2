// SPDX-License-Identifier: Apache-2.0

package main

import (
	"context"
	"fmt"
	"log"
	"path/filepath"
	"slices"
	"time"

	resourceapi "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"

	audiov1 "github.com/liken-sh/operators/api/audio/v1alpha1"
	"github.com/liken-sh/operators/internal/audio"
	"github.com/liken-sh/operators/internal/bdaddr"
	"github.com/liken-sh/operators/internal/dra"
	"github.com/liken-sh/operators/internal/pipewire"
	"github.com/liken-sh/operators/test/bluezsim"
	"github.com/liken-sh/operators/test/e2e/harness"
	"github.com/liken-sh/operators/test/fakesys"
	"github.com/liken-sh/operators/test/pwtest"
)

// audioDemo runs declare and the audio operator on a recorded laptop's
// sound hardware with real PipeWire and WirePlumber, then shows a claim on
// the output whose monitor is a Samsung U28E590, a TV (that output) with
// its surround pair (the analog output) in one claim, the monitor being
// unplugged, and two pods sharing the USB headset, an announcement
// ducking the music.
func audioDemo(ctx context.Context, c *harness.Cluster, nodeName string, show func() error, sim *bluezsim.Sim) (stop func(), listen func(capture string) (stop func(), apiAddress, sink string, err error), err error) {
	root := filepath.Join(c.Dir(), "node")
	if err := c.ApplyDeviceClassesFile(ctx, "deploy/audio/deviceclasses.yaml"); err != nil {
		return nil, nil, err
	}
	if err := c.ApplyCRDs(ctx, "deploy/audio/crds"); err != nil {
		return nil, nil, err
	}
	objs, err := dynamic.NewForConfig(c.RESTConfig())
	if err != nil {
		return nil, nil, err
	}
	moduleRoot, err := harness.ModuleRoot()
	if err != nil {
		return nil, nil, err
	}
	sc, err := fakesys.XPS17(moduleRoot, filepath.Join(root, "sound"))
	if err != nil {
		return nil, nil, err
	}
	hw := audio.Hardware{DevSnd: sc.DevSnd, Sysfs: sc.Sysfs, Opener: sc.Cards}
	// ALSA's null device stands in for hw:<card>,<pcm>: there is no card.
	res, err := audio.Declare(audio.DeclareConfig{Hardware: hw, Node: nodeName,
		PipeWireDir: filepath.Join(root, "pipewire.conf.d"), WirePlumberDir: filepath.Join(root, "wireplumber.conf.d"),
		ALSAPath: "null", Rate: 48000})
	if err != nil {
		return nil, nil, err
	}
	outputs, err := pipewire.ReadDeclaration(res.Declaration)
	if err != nil {
		return nil, nil, err
	}
	// Stereo where no layout says otherwise, and paced at real time, as
	// the cards' PCMs would be, not the 64 clockless channels of ALSA's
	// null device.
	outputs = pwtest.LikeHardware(outputs)
	fmt.Printf("declare: %d outputs of 3 recorded cards declared to PipeWire in %s\n", len(outputs), res.Declaration)
	// The media bus the Bluetooth operator's device delivers: WirePlumber
	// registers its A2DP endpoints with the (simulated) bluetoothd on it,
	// and the operator reads BlueZ's speakers there.
	pw, err := pwtest.Start(ctx, pwtest.Options{Outputs: outputs, MediaBus: sim.Address()})
	if err != nil {
		return nil, nil, err
	}
	opts := dra.Options{
		RegistrarDir: filepath.Join(root, "plugins_registry"), PluginDir: filepath.Join(root, "plugins", audio.DriverName),
		CDIDir: filepath.Join(root, "cdi"), SettleQuiet: 300 * time.Millisecond,
	}
	opCtx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() {
		done <- audio.Run(opCtx, audio.Config{Node: nodeName, KubeClient: c.Client(), Objects: objs, Hardware: hw,
			Remote: pw.Remote(), PipeWireDir: pw.PipeWireConfD, DRA: opts, BusAddress: sim.Address()})
	}()
	// PipeWire restarts on a new declaration (a Sink's layout), as the
	// pod's pipewire sidecar does it.
	unfollow := pw.FollowDeclaration(ctx, func(err error) { log.Printf("restarting PipeWire: %v", err) })
	stop = func() { cancel(); <-done; unfollow(); pw.Stop() } //nolint:errcheck // the demo is ending; the daemons' exits are in their logs
	fail := func(err error) (func(), func(string) (func(), string, string, error), error) {
		stop()
		return nil, nil, err
	}

	dp := nodeName + "-pci-0000-00-1f-3-hdmi-3"
	untainted := func(s *resourceapi.ResourceSlice) bool {
		return slices.ContainsFunc(s.Spec.Devices, func(d resourceapi.Device) bool { return d.Name == dp && len(d.Taints) == 0 })
	}
	if err := waitForSlice(ctx, c, audio.DriverName, untainted); err != nil {
		return fail(err)
	}
	if err := speakerDemo(ctx, c, sim, nodeName, opts); err != nil {
		return fail(err)
	}
	if err := show(); err != nil {
		return fail(err)
	}
	claim := &resourceapi.ResourceClaim{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "desk-speakers"},
		Spec: resourceapi.ResourceClaimSpec{Devices: resourceapi.DeviceClaim{Requests: []resourceapi.DeviceRequest{{
			Name: "speakers", Exactly: &resourceapi.ExactDeviceRequest{DeviceClassName: "audio-sink",
				Selectors: []resourceapi.DeviceSelector{{CEL: &resourceapi.CELDeviceSelector{
					Expression: `has(device.attributes["audio.liken.sh"].monitorName) && device.attributes["audio.liken.sh"].monitorName == "U28E590"`}}}},
		}}}},
	}
	fmt.Printf("\nclaim default/desk-speakers (DeviceClass audio-sink, selector: monitorName == \"U28E590\")\n")
	if err := allocateAndPrepare(ctx, c, claim, "music", nodeName, audio.DriverName, opts); err != nil {
		return fail(err)
	}

	if err := sinksDemo(ctx, c, objs, dp); err != nil {
		return fail(err)
	}
	nodeOf := map[string]string{} // output: its node.name
	for _, o := range outputs {
		nodeOf[o.Output] = o.Name
	}
	if err := theatreDemo(ctx, c, pw, nodeName, dp, nodeName+"-pci-0000-00-1f-3-jack-out", nodeOf, opts); err != nil {
		return fail(err)
	}

	rec, err := sc.Cards.Recorded(0)
	if err != nil {
		return fail(err)
	}
	start := time.Now()
	if err := rec.SetELD(7, nil); err != nil {
		return fail(err)
	}
	if err := waitForSlice(ctx, c, audio.DriverName, func(s *resourceapi.ResourceSlice) bool {
		return slices.ContainsFunc(s.Spec.Devices, func(d resourceapi.Device) bool {
			return d.Name == dp && slices.ContainsFunc(d.Taints, func(t resourceapi.DeviceTaint) bool { return t.Key == audio.TaintNoMonitor })
		})
	}); err != nil {
		return fail(err)
	}
	fmt.Printf("\nthe monitor was unplugged (its ELD went, an ALSA control event): %s gained %s:NoExecute and %s:NoSchedule after %s\n",
		dp, audio.TaintDisconnected, audio.TaintNoMonitor, time.Since(start).Round(10*time.Millisecond))
	if err := finishEviction(ctx, c, "default", "music", "desk-speakers", audio.DriverName, opts.RegistrarDir, start); err != nil {
		return fail(err)
	}
	// The USB headset (its channel map says stereo), still connected
	// unlike the monitor just unplugged, is shared, then listened to.
	speaker := nodeName + "-usb-1532-0526-00000000-usb-audio"
	sinkNode, ok := nodeOf[speaker]
	if !ok {
		return fail(fmt.Errorf("the recorded laptop declared no output for its USB headset"))
	}
	if err := sharedDemo(ctx, c, objs, pw, nodeName, speaker, sinkNode, opts); err != nil {
		return fail(err)
	}
	listen = func(capture string) (func(), string, string, error) {
		stop, addr, err := listenDemo(ctx, c, pw, nodeName, speaker, sinkNode, capture)
		return stop, addr, speaker, err
	}
	return stop, listen, nil
}

// speakerDemo turns the paired speaker on once WirePlumber holds its
// endpoints, waits for its untainted device, and claims it by
// connectionType with a codec, as examples/bluetooth-speaker does.
func speakerDemo(ctx context.Context, c *harness.Cluster, sim *bluezsim.Sim, nodeName string, opts dra.Options) error {
	if _, err := sim.WaitEndpoints(ctx, "hci0", bluezsim.A2DPSourceUUID, 60*time.Second); err != nil {
		return fmt.Errorf("WirePlumber's A2DP endpoints: %w", err)
	}
	start := time.Now()
	if err := sim.Connect("hci0", speakerAddr); err != nil {
		return err
	}
	name := bdaddr.MustParse(speakerAddr).Key()
	if err := waitForSlice(ctx, c, audio.DriverName, func(s *resourceapi.ResourceSlice) bool {
		return slices.ContainsFunc(s.Spec.Devices, func(d resourceapi.Device) bool { return d.Name == name && len(d.Taints) == 0 })
	}); err != nil {
		return err
	}
	fmt.Printf("\nthe Kitchen speaker connected: WirePlumber made its bluez_output node and %s is published untainted beside the card outputs after %s\n",
		name, time.Since(start).Round(10*time.Millisecond))
	claim := &resourceapi.ResourceClaim{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "kitchen-speaker"},
		Spec: resourceapi.ResourceClaimSpec{Devices: resourceapi.DeviceClaim{
			Requests: []resourceapi.DeviceRequest{{
				Name: "out", Exactly: &resourceapi.ExactDeviceRequest{DeviceClassName: "audio-sink",
					Selectors: []resourceapi.DeviceSelector{{CEL: &resourceapi.CELDeviceSelector{
						Expression: `has(device.attributes["audio.liken.sh"].connectionType) && device.attributes["audio.liken.sh"].connectionType == "bluetooth"`}}}},
			}},
			Config: []resourceapi.DeviceClaimConfiguration{{Requests: []string{"out"}, DeviceConfiguration: resourceapi.DeviceConfiguration{
				Opaque: &resourceapi.OpaqueDeviceConfiguration{Driver: audio.DriverName, Parameters: runtime.RawExtension{Raw: []byte(`{"codec":"sbc"}`)}}}}},
		}},
	}
	fmt.Printf("\nclaim default/kitchen-speaker (DeviceClass audio-sink, selector: connectionType == \"bluetooth\", opaque config {\"codec\":\"sbc\"})\n")
	if err := allocateAndPrepare(ctx, c, claim, "radio", nodeName, audio.DriverName, opts); err != nil {
		return err
	}
	// The codec switch remakes the speaker's bluez_output node; the
	// table that follows is shown once it is back.
	prepared := time.Now()
	if err := waitForSlice(ctx, c, audio.DriverName, func(s *resourceapi.ResourceSlice) bool {
		return slices.ContainsFunc(s.Spec.Devices, func(d resourceapi.Device) bool {
			codec := d.Attributes["codec"]
			return d.Name == name && len(d.Taints) == 0 && codec.StringValue != nil && *codec.StringValue == "sbc"
		})
	}); err != nil {
		return fmt.Errorf("the speaker's node after its codec switch: %w", err)
	}
	fmt.Printf("  switching to sbc remade the speaker's bluez_output node; while it was remade the device carried audio.liken.sh/no-sink:NoSchedule,\n"+
		"  which schedules nothing new onto it and evicts nothing (default/radio kept its claim); back untainted with codec=\"sbc\" %s after the prepare\n",
		time.Since(prepared).Round(10*time.Millisecond))
	return nil
}

// sinksDemo shows the Sinks and Sources the operator keeps, and a person
// turning the DP output down through its Sink.
func sinksDemo(ctx context.Context, c *harness.Cluster, objs dynamic.Interface, dp string) error {
	sinks := objs.Resource(audiov1.SinksResource)
	sources := objs.Resource(audiov1.SourcesResource)
	// Shown once the operator has an object for every device it
	// publishes and the claimed Sink names its claim, not half way.
	if err := until(ctx, 30*time.Second, func() bool {
		slices, err := c.Client().ResourceV1().ResourceSlices().List(ctx, metav1.ListOptions{FieldSelector: "spec.driver=" + audio.DriverName})
		if err != nil {
			return false
		}
		devices := 0
		for _, sl := range slices.Items {
			devices += len(sl.Spec.Devices)
		}
		ls, err1 := sinks.List(ctx, metav1.ListOptions{})
		lo, err2 := sources.List(ctx, metav1.ListOptions{})
		if err1 != nil || err2 != nil || devices == 0 || len(ls.Items)+len(lo.Items) < devices {
			return false
		}
		for _, u := range ls.Items {
			if u.GetName() == dp {
				claim, _, _ := unstructured.NestedString(u.Object, "status", "claim", "name")
				return claim != ""
			}
		}
		return false
	}); err != nil {
		return fmt.Errorf("the Sinks and Sources of every published device: %w", err)
	}
	out, err := c.Kubectl(ctx, "get", "sinks,sources", "-o", "wide")
	if err != nil {
		return err
	}
	fmt.Printf("\nkubectl get sinks,sources -o wide\n%s", out)
	if _, err := sinks.Patch(ctx, dp, types.MergePatchType, []byte(`{"spec":{"volume":40,"mute":false}}`), metav1.PatchOptions{}); err != nil {
		return err
	}
	start := time.Now()
	if err := until(ctx, 10*time.Second, func() bool {
		u, err := sinks.Get(ctx, dp, metav1.GetOptions{})
		if err != nil {
			return false
		}
		v, _, _ := unstructured.NestedInt64(u.Object, "status", "observed", "volume")
		return v == 40
	}); err != nil {
		return fmt.Errorf("the DP Sink's volume: %w", err)
	}
	fmt.Printf("\nkubectl patch sink %s --type merge -p '{\"spec\":{\"volume\":40}}': PipeWire's node set to 40%% of unity, status.observed.volume 40 after %s\n",
		dp, time.Since(start).Round(10*time.Millisecond))
	return nil
}

// until polls ok every 100 ms until it holds or timeout passes.
func until(ctx context.Context, timeout time.Duration, ok func() bool) error {
	deadline := time.Now().Add(timeout)
	for !ok() {
		if time.Now().After(deadline) {
			return fmt.Errorf("not within %s", timeout)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
	return nil
}
