// SPDX-License-Identifier: Apache-2.0

package e2e

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	resourceapi "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"tags.cncf.io/container-device-interface/pkg/cdi"

	audiov1 "github.com/liken-sh/operators/api/audio/v1alpha1"
	"github.com/liken-sh/operators/internal/audio"
	"github.com/liken-sh/operators/internal/bluetooth"
	"github.com/liken-sh/operators/internal/bluez"
	"github.com/liken-sh/operators/internal/dra"
	"github.com/liken-sh/operators/internal/pipewire"
	"github.com/liken-sh/operators/test/bluezsim"
	"github.com/liken-sh/operators/test/e2e/harness"
	"github.com/liken-sh/operators/test/e2e/kubelet"
	"github.com/liken-sh/operators/test/pwtest"
)

// speakerUntainted: the speaker's device is there with no taint.
func speakerUntainted(name string) func(*resourceapi.ResourceSlice) bool {
	return func(s *resourceapi.ResourceSlice) bool {
		return slices.ContainsFunc(s.Spec.Devices, func(d resourceapi.Device) bool { return d.Name == name && len(d.Taints) == 0 })
	}
}

// TestBluetoothSpeakerEndToEnd: both operators on one node. The audio
// pod's sound-card claim (allocationMode All) takes the card and the
// Bluetooth operator's media bus, whose CDI spec delivers
// DBUS_SYSTEM_BUS_ADDRESS; WirePlumber on that bus registers its A2DP
// endpoints, the paired speaker connects and is published by the audio
// operator with a Sink; a consumer claim selecting connectionType ==
// "bluetooth" with a codec is allocated by the real scheduler and
// prepared (the speaker switched to the codec, its node in the CDI spec
// and, through the claim's socket, the only node there is); the Sink's
// spec.volume reaches the speaker's route; the speaker switched off is tainted within the settle window;
// and after the bus restarts (the bluetoothd pod restarted) and
// WirePlumber alone restarts, the speaker comes back untainted while the
// card's output stays untainted throughout.
func TestBluetoothSpeakerEndToEnd(t *testing.T) {
	ctx, cluster := startBluetoothCluster(t, "deploy/audio/deviceclasses.yaml")
	client := cluster.Client()
	must(t, cluster.ApplyCRDs(ctx, "deploy/audio/crds"))

	dir := t.TempDir()
	sim, startBT := mediaBusNode(t, ctx, cluster, dir)
	must(t, ignore(sim.AddSpeaker("hci0", speakerAddr, bluezsim.Speaker{Name: "Kitchen",
		Codecs: []bluezsim.Codec{bluezsim.SBC, bluezsim.AptX}, AbsoluteVolume: true, Volume: 100})))
	btOpts := bluetoothDRA(dir)
	bt := startBT()
	media := bluetooth.MediaBusName(mustAddr(t, adapterAddr))
	waitForDriverSlice(t, ctx, cluster, bluetooth.DriverName, func(s *resourceapi.ResourceSlice) bool { return hasDevice(s, media) })

	// The audio pod's own claim, as deploy/audio's template makes it:
	// every device of the sound-card class, the card and the bus.
	own := &resourceapi.ResourceClaim{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "sound-card"},
		Spec: resourceapi.ResourceClaimSpec{Devices: resourceapi.DeviceClaim{Requests: []resourceapi.DeviceRequest{{
			Name: "controller", Exactly: &resourceapi.ExactDeviceRequest{DeviceClassName: "sound-card", AllocationMode: resourceapi.DeviceAllocationModeAll},
		}}}},
	}
	own = createWithPod(t, ctx, cluster, own, "audio-operator")
	var drivers []string
	for _, r := range own.Status.Allocation.Devices.Results {
		drivers = append(drivers, r.Driver)
	}
	if !slices.Contains(drivers, bluetooth.DriverName) || !slices.Contains(drivers, harness.LikenDriver) {
		t.Fatalf("the audio pod's claim got drivers %v, want the card (%s) and the media bus (%s)", drivers, harness.LikenDriver, bluetooth.DriverName)
	}
	kl := kubelet.New(client, btOpts.RegistrarDir)
	t.Cleanup(func() { kl.Close() })
	btPlugin, err := kl.Discover(ctx, bluetooth.DriverName)
	must(t, err)
	busDev := prepareOK(t, ctx, btPlugin, own)
	_, env := runtimeEdits(t, btOpts.CDIDir, busDev.CdiDeviceIds[0])
	if env != bluetooth.BusAddress {
		t.Fatalf("the media bus delivers DBUS_SYSTEM_BUS_ADDRESS %q, want %q", env, bluetooth.BusAddress)
	}
	// In the pod that address names the mounted bus directory; here the
	// simulator's socket stands for it.
	busAddress := sim.Address()

	hw, _, outputs := declaredXPS(t, dir)
	pw := pwtest.New(t, pwtest.Options{Outputs: outputs, MediaBus: busAddress})
	objs, err := dynamic.NewForConfig(cluster.RESTConfig())
	must(t, err)
	// A cap far past every bound below: a slice write the operator's
	// passes held back would come at the cap, which no loaded host's
	// delay reaches.
	audioOpts := dra.Options{
		RegistrarDir: btOpts.RegistrarDir, PluginDir: filepath.Join(dir, "plugins", audio.DriverName),
		CDIDir: btOpts.CDIDir, SettleQuiet: 300 * time.Millisecond, SettleCap: 3 * time.Minute,
	}
	opCtx, stopOp := context.WithCancel(ctx)
	opDone := make(chan error, 1)
	go func() {
		opDone <- audio.Run(opCtx, audio.Config{Node: node, KubeClient: client, Hardware: hw, Objects: objs,
			Remote: pw.Remote(), PipeWireDir: pw.PipeWireConfD, DRA: audioOpts, BusAddress: busAddress})
	}()
	t.Cleanup(func() { stopOp(); <-opDone })

	dp := node + "-pci-0000-00-1f-3-hdmi-3"
	speaker := mustAddr(t, speakerAddr).Key()
	waitForDriverSlice(t, ctx, cluster, audio.DriverName, func(s *resourceapi.ResourceSlice) bool {
		return hasDevice(s, speaker) && !deviceTainted(s, dp)
	})
	_, err = sim.WaitEndpoints(ctx, "hci0", bluezsim.A2DPSourceUUID, 60*time.Second)
	must(t, err)
	// Switched on. While the consumer's claim holds it the Bluetooth
	// operator pages it, but its wait may have grown long by now, and
	// the claim may have been released with the pod the disconnected
	// taint evicted: the speaker connects itself, unless the operator
	// was first.
	must(t, sim.SetSwitchedOn("hci0", speakerAddr, true))
	if err := sim.Connect("hci0", speakerAddr); err != nil && bluez.ErrorName(err) != "org.bluez.Error.AlreadyConnected" {
		t.Fatal(err)
	}
	waitForDriverSlice(t, ctx, cluster, audio.DriverName, speakerUntainted(speaker))

	// Its Sink.
	sinks := objs.Resource(audiov1.SinksResource)
	var codecs []string
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		u, err := sinks.Get(ctx, speaker, metav1.GetOptions{})
		if err == nil {
			addr, _, _ := unstructured.NestedString(u.Object, "status", "bluetooth", "address")
			codecs, _, _ = unstructured.NestedStringSlice(u.Object, "status", "bluetooth", "codecs")
			if addr == speakerAddr && len(codecs) > 0 {
				break
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("the speaker's Sink has no status.bluetooth within 30 s (%v)", err)
		}
	}
	if !slices.Contains(codecs, "sbc") || !slices.Contains(codecs, "aptx") {
		t.Fatalf("the Sink's codecs %v, want sbc and aptx", codecs)
	}

	// A consumer's claim: a Bluetooth sink, in SBC.
	consumer := &resourceapi.ResourceClaim{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "kitchen-speaker"},
		Spec: resourceapi.ResourceClaimSpec{Devices: resourceapi.DeviceClaim{
			Requests: []resourceapi.DeviceRequest{{Name: "out", Exactly: &resourceapi.ExactDeviceRequest{DeviceClassName: "audio-sink",
				Selectors: []resourceapi.DeviceSelector{{CEL: &resourceapi.CELDeviceSelector{
					Expression: `has(device.attributes["audio.liken.sh"].connectionType) && device.attributes["audio.liken.sh"].connectionType == "bluetooth"`}}}}}},
			Config: []resourceapi.DeviceClaimConfiguration{{Requests: []string{"out"}, DeviceConfiguration: resourceapi.DeviceConfiguration{
				Opaque: &resourceapi.OpaqueDeviceConfiguration{Driver: audio.DriverName, Parameters: runtime.RawExtension{Raw: []byte(`{"codec":"sbc"}`)}}}}},
		}},
	}
	consumer = createWithPod(t, ctx, cluster, consumer, "radio")
	if got := consumer.Status.Allocation.Devices.Results[0].Device; got != speaker {
		t.Fatalf("the consumer's claim got %s, want the speaker %s", got, speaker)
	}
	audioPlugin, err := kl.Discover(ctx, audio.DriverName)
	must(t, err)
	dev := prepareOK(t, ctx, audioPlugin, consumer)
	spec, err := cdi.ReadSpec(filepath.Join(audioOpts.CDIDir, audio.DriverName+"-"+string(consumer.UID)+".json"), 0)
	must(t, err)
	_, _, name, _ := cdiParts(dev.CdiDeviceIds[0])
	edits := spec.GetDevice(name).ContainerEdits
	g, err := pw.Remote().Dump(ctx)
	must(t, err)
	n, _, ok := g.SpeakerNode(speakerAddr)
	if !ok || n.Props[pipewire.PropBlueZCodec] != "sbc" {
		t.Fatalf("after prepare the speaker's node is %+v (found %v), want it running sbc", n.Props, ok)
	}
	if !slices.Contains(edits.Env, "PIPEWIRE_NODE="+n.Name) {
		t.Fatalf("CDI edits %v do not name the speaker's node %s", edits.Env, n.Name)
	}
	t.Logf("prepared: %v; node %s (id %d) runs sbc", edits.Env, n.Name, n.ID)
	// Through the claim's own socket the speaker's node is the one node
	// there is.
	if len(edits.Mounts) != 1 {
		t.Fatalf("CDI mounts %+v", edits.Mounts)
	}
	dumpCmd := pw.Command(ctx, "pw-dump", "-N")
	dumpCmd.Env = append(dumpCmd.Env, "PIPEWIRE_REMOTE="+filepath.Join(edits.Mounts[0].HostPath, "pipewire-0"))
	seen, err := dumpCmd.Output()
	must(t, err)
	if cg, err := pipewire.ParseDump(seen); err != nil || len(cg.Nodes) != 1 || cg.Nodes[0].Name != n.Name {
		t.Fatalf("through the claim socket: %+v, %v; want the speaker's node alone", cg, err)
	}

	// The Sink steers the speaker's volume through its bluez5 route,
	// which reports it back (the transport is logged: whether the plugin
	// turned it into AVRCP absolute volume is its own choice).
	_, err = sinks.Patch(ctx, speaker, types.MergePatchType, []byte(`{"spec":{"volume":40}}`), metav1.PatchOptions{})
	must(t, err)
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		u, err := sinks.Get(ctx, speaker, metav1.GetOptions{})
		if err == nil {
			if v, _, _ := unstructured.NestedInt64(u.Object, "status", "observed", "volume"); v == 40 {
				break
			}
		}
		if time.Now().After(deadline) {
			u, _ := sinks.Get(ctx, speaker, metav1.GetOptions{})
			t.Fatalf("the speaker's observed volume never became 40: %v", u.Object["status"])
		}
	}
	trs, err := sim.Transports()
	must(t, err)
	t.Logf("spec.volume 40: transports %+v", trs)

	// spec.codec is the speaker's resting codec: not applied while the
	// claim holds it, applied once the claim is unprepared.
	_, err = sinks.Patch(ctx, speaker, types.MergePatchType, []byte(`{"spec":{"codec":"aptx"}}`), metav1.PatchOptions{})
	must(t, err)
	time.Sleep(2 * time.Second)
	if g, err := pw.Remote().Dump(ctx); err == nil {
		if n, _, ok := g.SpeakerNode(speakerAddr); ok && n.Props[pipewire.PropBlueZCodec] != "sbc" {
			t.Fatalf("the resting codec was applied under the claim: the node runs %s", n.Props[pipewire.PropBlueZCodec])
		}
	}
	uresp, err := audioPlugin.Unprepare(ctx, consumer)
	must(t, err)
	if e := uresp.Claims[string(consumer.UID)].GetError(); e != "" {
		t.Fatalf("unprepare: %s", e)
	}
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(200 * time.Millisecond) {
		g, err := pw.Remote().Dump(ctx)
		if err == nil {
			if n, _, ok := g.SpeakerNode(speakerAddr); ok && n.Props[pipewire.PropBlueZCodec] == "aptx" {
				break
			}
		}
		if time.Now().After(deadline) {
			t.Fatal("the speaker never went to its resting codec aptx once the claim was unprepared")
		}
	}
	// The slice says so after the settle window, although the graph and
	// the Sink's status keep the operator's passes going meanwhile: the
	// wait's 30 s end long before the cap that passes holding the write
	// back would leave it to.
	switched := time.Now()
	waitForDriverSlice(t, ctx, cluster, audio.DriverName, func(s *resourceapi.ResourceSlice) bool {
		return slices.ContainsFunc(s.Spec.Devices, func(d resourceapi.Device) bool {
			a := d.Attributes["codec"]
			return d.Name == speaker && a.StringValue != nil && *a.StringValue == "aptx"
		})
	})
	t.Logf("the codec switch reached the slice after %s (settle window %s)", time.Since(switched), audioOpts.SettleQuiet)

	// A spec the speaker cannot follow is said in SpecApplied, naming the
	// field and its value; spec.volume still holds.
	specApplied := func(want metav1.ConditionStatus, reason string, parts ...string) {
		t.Helper()
		var last any
		for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
			u, err := sinks.Get(ctx, speaker, metav1.GetOptions{})
			if err != nil {
				continue
			}
			conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
			last = conds
			for _, c := range conds {
				m, _ := c.(map[string]any)
				msg, _ := m["message"].(string)
				has := m["type"] == audiov1.ConditionSpecApplied && m["status"] == string(want) && m["reason"] == reason
				for _, p := range parts {
					has = has && strings.Contains(msg, p)
				}
				if has {
					return
				}
			}
		}
		t.Fatalf("the Sink never had SpecApplied %s %s with %q: %v", want, reason, parts, last)
	}
	specApplied(metav1.ConditionTrue, audiov1.ReasonApplied)
	_, err = sinks.Patch(ctx, speaker, types.MergePatchType, []byte(`{"spec":{"codec":"ldac","layout":["FL","FR"]}}`), metav1.PatchOptions{})
	must(t, err)
	specApplied(metav1.ConditionFalse, audiov1.ReasonUnsupportedCodec, `spec.codec "ldac"`, "spec.layout [FL FR]")
	if u, err := sinks.Get(ctx, speaker, metav1.GetOptions{}); err == nil {
		if v, _, _ := unstructured.NestedInt64(u.Object, "spec", "volume"); v != 40 {
			t.Errorf("spec.volume %d after the bad codec and layout, want 40", v)
		}
	}
	_, err = sinks.Patch(ctx, speaker, types.MergePatchType, []byte(`{"spec":{"codec":"aptx","layout":null}}`), metav1.PatchOptions{})
	must(t, err)
	specApplied(metav1.ConditionTrue, audiov1.ReasonApplied)
	// A control value past int32, which only the admission policy (not
	// applied here) refuses, is named; the Sink is kept in step.
	_, err = sinks.Patch(ctx, speaker, types.MergePatchType, []byte(`{"spec":{"volume":45,"controls":{"PCM Playback Volume":2147483648}}}`), metav1.PatchOptions{})
	must(t, err)
	specApplied(metav1.ConditionFalse, audiov1.ReasonInvalidSpec, `spec.controls["PCM Playback Volume"]`, "2147483648")
	observedVolume := func(want int64) {
		t.Helper()
		for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(100 * time.Millisecond) {
			u, err := sinks.Get(ctx, speaker, metav1.GetOptions{})
			if err == nil {
				if v, _, _ := unstructured.NestedInt64(u.Object, "status", "observed", "volume"); v == want {
					return
				}
			}
			if time.Now().After(deadline) {
				t.Fatalf("the speaker's observed volume never became %d beside an undecodable control", want)
			}
		}
	}
	observedVolume(45)
	_, err = sinks.Patch(ctx, speaker, types.MergePatchType, []byte(`{"spec":{"volume":40,"controls":null}}`), metav1.PatchOptions{})
	must(t, err)
	specApplied(metav1.ConditionTrue, audiov1.ReasonApplied)
	observedVolume(40)

	// Bad input on other claims: a speaker's codec on the DP output,
	// whose monitor lists no compressed format to pass through, and 10 KB
	// of codec text, each fail their own claim with a short error. (The
	// API server itself refuses opaque parameters past 10240 bytes, so
	// the text is just under that.)
	for i, tc := range []struct{ codec, want string }{
		{`"sbc"`, `cannot pass codec "sbc" through: its monitor's ELD lists no compressed format`},
		{`"` + strings.Repeat("x", 10000) + `"`, "10000 bytes of text is not a codec name"},
	} {
		bad := &resourceapi.ResourceClaim{
			ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "wired-codec-" + string(rune('a'+i))},
			Spec: resourceapi.ResourceClaimSpec{Devices: resourceapi.DeviceClaim{
				Requests: []resourceapi.DeviceRequest{{Name: "out", Exactly: &resourceapi.ExactDeviceRequest{DeviceClassName: "audio-sink",
					Selectors: []resourceapi.DeviceSelector{{CEL: &resourceapi.CELDeviceSelector{
						Expression: `device.attributes["audio.liken.sh"].sink == "` + dp + `"`}}}}}},
				Config: []resourceapi.DeviceClaimConfiguration{{Requests: []string{"out"}, DeviceConfiguration: resourceapi.DeviceConfiguration{
					Opaque: &resourceapi.OpaqueDeviceConfiguration{Driver: audio.DriverName, Parameters: runtime.RawExtension{Raw: []byte(`{"codec":` + tc.codec + `}`)}}}}},
			}},
		}
		bad = createWithPod(t, ctx, cluster, bad, bad.Name)
		resp, err := audioPlugin.Prepare(ctx, bad)
		must(t, err)
		msg := resp.Claims[string(bad.UID)].GetError()
		if !strings.Contains(msg, tc.want) || len(msg) > 400 {
			t.Fatalf("claim %s: prepare error %q, want a short one saying %q", bad.Name, msg, tc.want)
		}
		t.Logf("claim %s refused: %s", bad.Name, msg)
		deleteRefused(t, ctx, client, bad.Name)
	}

	// Switched off: tainted after the settle window (and the time the
	// graph and BlueZ take to say so), well before the cap. (A speaker
	// that only dropped its link would be connected again at once by the
	// Bluetooth operator, since the consumer's claim holds it.)
	start := time.Now()
	must(t, sim.SetSwitchedOn("hci0", speakerAddr, false))
	waitForDriverSlice(t, ctx, cluster, audio.DriverName, func(s *resourceapi.ResourceSlice) bool {
		return slices.ContainsFunc(s.Spec.Devices, func(d resourceapi.Device) bool {
			return d.Name == speaker && slices.ContainsFunc(d.Taints, func(t resourceapi.DeviceTaint) bool { return t.Key == audio.TaintDisconnected })
		})
	})
	t.Logf("switched off: %s tainted %s after %s (settle window %s)", speaker, audio.TaintDisconnected, time.Since(start), audioOpts.SettleQuiet)

	// bluetoothd's pod restarts: a new bus at the same path. The
	// Bluetooth operator exits and is started again by the kubelet;
	// WirePlumber alone is restarted by its liveness probe.
	must(t, sim.RestartBus(ctx))
	select {
	case <-bt.Exited():
	case <-time.After(30 * time.Second):
		t.Fatal("the Bluetooth operator did not exit on its bus going")
	}
	startBT()
	pw.StopWirePlumber()
	must(t, pw.StartWirePlumber(ctx))
	_, err = sim.WaitEndpoints(ctx, "hci0", bluezsim.A2DPSourceUUID, 60*time.Second)
	must(t, err)
	// Switched on. While the consumer's claim holds it the Bluetooth
	// operator pages it, but its wait may have grown long by now, and
	// the claim may have been released with the pod the disconnected
	// taint evicted: the speaker connects itself, unless the operator
	// was first.
	must(t, sim.SetSwitchedOn("hci0", speakerAddr, true))
	if err := sim.Connect("hci0", speakerAddr); err != nil && bluez.ErrorName(err) != "org.bluez.Error.AlreadyConnected" {
		t.Fatal(err)
	}
	final := waitForDriverSlice(t, ctx, cluster, audio.DriverName, speakerUntainted(speaker))
	if deviceTainted(final, dp) {
		t.Fatalf("the card's output %s is tainted after the bus restart", dp)
	}
	if strings.Contains(string(mustRead(t, pw.DeclarationPath())), speakerAddr) {
		t.Fatal("the speaker ended up in the card declaration")
	}
}

func mustRead(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	must(t, err)
	return b
}
