// SPDX-License-Identifier: Apache-2.0

//go:build kubelettier

package kubelettier

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/liken-sh/operators/internal/bdaddr"
	"github.com/liken-sh/operators/internal/bluetooth"
	"github.com/liken-sh/operators/internal/bonds"
	"github.com/liken-sh/operators/internal/inventory"
	"github.com/liken-sh/operators/test/bluezsim"
	"github.com/liken-sh/operators/test/e2e/harness"
	"github.com/liken-sh/operators/test/fakesys"
)

// The recorded gamepad (internal/bonds/testdata/8bitdo-nes30-pro.*): its
// address and its HID device in sysfs.
const (
	padAddress = "E4:17:D8:9A:F0:01"
	padHID     = "0005:2DC8:3820.0001"
)

// The stand-ins hostDevices makes on the host, at numbers no node of the
// host has: the gamepad's evdev number and node, and the usbfs device
// number on bus 1 of the desktop's adapter.
var (
	padEvent      int
	padEventNode  string
	adapterDevnum int
)

// busSocket is the Bluetooth pod's D-Bus socket on the host (the bus
// hostPath volume).
const busSocket = "/run/bluetooth.liken.sh/dbus/system_bus_socket"

// TestTier runs the steps in order; each needs the ones before it.
func TestTier(t *testing.T) {
	ctx := context.Background()
	steps := []struct {
		name string
		f    func(*testing.T, context.Context)
	}{
		{"Inventory", inventoryBase},
		{"BluetoothBase", bluetoothBase},
		{"BluetoothConsumer", bluetoothConsumer},
		{"AudioBase", audioBase},
		{"AudioConsumer", audioConsumer},
		{"Capture", captureTap},
		{"SharedSink", sharedSink},
		{"TwoOutputs", twoOutputs},
		{"PipeWireKill", pipewireKill},
		{"WirePlumberLosesBus", wireplumberLosesBus},
		{"KubeletRestart", kubeletRestart},
		{"PluginKilled", pluginKilled},
		{"PadSleeps", padSleeps},
		{"OperatorReplaced", operatorReplaced},
		{"RollingUpdate", rollingUpdate},
		{"UnprepareOnDelete", unprepareOnDelete},
	}
	for _, s := range steps {
		if !t.Run(s.name, func(t *testing.T) { s.f(t, ctx) }) {
			t.Fatalf("step %s failed; the later steps need it", s.name)
		}
	}
}

// inventoryBase applies deploy/inventory through the tier's overlay on a
// desktop's sysfs: the liken.sh driver a cluster without liken runs
// starts with no capability, registers with the kubelet through
// plugins_registry, and publishes the desktop's sound controller and the
// two interfaces btusb binds, which the two bases' pods then claim.
func inventoryBase(t *testing.T, ctx context.Context) {
	if _, err := fakesys.LayOutDesktop(InventoryDir); err != nil {
		t.Fatal(err)
	}
	// The adapter at the device number of its stand-in usbfs node.
	if _, _, err := fakesys.RenumberDesktopAdapter(InventorySys, adapterDevnum); err != nil {
		t.Fatal(err)
	}
	began := time.Now()
	kubectl(t, ctx, "apply", "-k", overlays.Inventory)
	p := waitDaemonPod(t, ctx, "liken-inventory", 2*time.Minute, "", podReady)
	t.Logf("FIGURE inventory: apply → pod Ready in %s", time.Since(began).Round(time.Millisecond))
	for _, hp := range containerProcs(t, p, "driver") {
		if hp.capEff != 0 || hp.capBnd != 0 || !hp.noNewPrivs {
			t.Errorf("driver: %s has capabilities %#x (bounding %#x), no_new_privs %v; want none and set", hp.comm, hp.capEff, hp.capBnd, hp.noNewPrivs)
		}
	}
	waitRegistered(t, inventory.DriverName)
	want := []string{harness.SoundControllerDevice, harness.BluetoothAdapterDevice, "usb-1-8-1-1"}
	slices.Sort(want)
	poll(t, "the desktop's devices published", time.Minute, func() (bool, string) {
		list, err := cluster.Client().ResourceV1().ResourceSlices().List(ctx, metav1.ListOptions{FieldSelector: "spec.driver=" + inventory.DriverName})
		if err != nil {
			return false, err.Error()
		}
		var names []string
		for _, sl := range list.Items {
			if sl.Spec.NodeName == nil || *sl.Spec.NodeName != theNode.Name() {
				continue
			}
			for _, d := range sl.Spec.Devices {
				names = append(names, d.Name)
			}
		}
		slices.Sort(names)
		return slices.Equal(names, want), strings.Join(names, ",")
	})
	t.Logf("FIGURE inventory: apply → the desktop's devices published in %s", time.Since(began).Round(time.Millisecond))
}

// bluetoothBase applies deploy/bluetooth through the tier's overlay, with
// the recorded gamepad's bond stored in a Secret, and checks the pod
// deploy/bluetooth/operator.yaml describes: bondfetch first, restoring the bond into the emptyDir;
// the bluetoothd sidecar's dbus-daemon under deploy/bluetooth/operator.yaml's capabilities,
// dropped to messagebus; the operator last, with no capability,
// registered with the kubelet and publishing the gamepad.
func bluetoothBase(t *testing.T, ctx context.Context) {
	client := cluster.Client()
	adapter, err := bdaddr.Parse(AdapterAddress)
	must(t, err)
	pad, err := bdaddr.Parse(padAddress)
	must(t, err)
	info, err := os.ReadFile(filepath.Join(root, "testdata/fixtures/bluez/8bitdo-nes30-pro.info"))
	must(t, err)
	cache, err := os.ReadFile(filepath.Join(root, "testdata/fixtures/bluez/8bitdo-nes30-pro.cache"))
	must(t, err)
	if _, err := fakesys.BluetoothHID(BluetoothSys, padHID, "8Bitdo NES30 Pro", padAddress, AdapterAddress, padEvent); err != nil {
		t.Fatal(err)
	}
	// The namespace exists already: the inventory base made it.
	_, err = client.CoreV1().Secrets(ns).Create(ctx, bonds.EncodeSecret(ns, bonds.Bond{Adapter: adapter, Device: pad, Info: info, Cache: cache}), metav1.CreateOptions{})
	must(t, err)

	began := time.Now()
	kubectl(t, ctx, "apply", "-k", overlays.Bluetooth)
	p := waitDaemonPod(t, ctx, "bluetooth-operator", 3*time.Minute, "", podReady)
	t.Logf("FIGURE bluetooth base: apply → pod Ready in %s", time.Since(began).Round(time.Millisecond))

	// Order: bondfetch ran to completion before bluetoothd started, and
	// the operator started after bluetoothd.
	bf := containerStatus(t, p, "bondfetch")
	if bf.State.Terminated == nil || bf.State.Terminated.ExitCode != 0 {
		t.Fatalf("bondfetch did not complete: %+v", bf.State)
	}
	if bt := startedAt(t, p, "bluetoothd"); bt.Before(bf.State.Terminated.FinishedAt.Time) {
		t.Errorf("bluetoothd started at %s, before bondfetch finished at %s", bt, bf.State.Terminated.FinishedAt)
	}
	if op, bt := startedAt(t, p, "operator"), startedAt(t, p, "bluetoothd"); op.Before(bt) {
		t.Errorf("the operator started at %s, before bluetoothd at %s", op, bt)
	}
	logs, err := client.CoreV1().Pods(ns).GetLogs(p.Name, &corev1.PodLogOptions{Container: "bondfetch"}).DoRaw(ctx)
	must(t, err)
	if !strings.Contains(string(logs), "restored 1 bonds of "+AdapterAddress) {
		t.Errorf("bondfetch did not restore the bond:\n%s", logs)
	}

	// The bluetoothd container: dbus-daemon dropped to messagebus with no
	// capability left; the simulator in bluetoothd's place holds exactly
	// deploy/bluetooth/operator.yaml's five.
	manifestCaps := caps(capNetAdmin, capNetRaw, capNetBindService, capSetuid, capSetgid)
	var sawBus, sawSim bool
	for _, hp := range containerProcs(t, p, "bluetoothd") {
		if hp.capBnd != manifestCaps {
			t.Errorf("bluetoothd container: %s (pid %d) has bounding set %#x, want deploy/bluetooth/operator.yaml's %#x", hp.comm, hp.pid, hp.capBnd, manifestCaps)
		}
		if !hp.noNewPrivs {
			t.Errorf("bluetoothd container: %s (pid %d) may gain privileges (allowPrivilegeEscalation is false)", hp.comm, hp.pid)
		}
		switch {
		case hp.comm == "dbus-daemon":
			sawBus = true
			if hp.uid != 100 || hp.capEff != 0 {
				t.Errorf("dbus-daemon runs as uid %d with capabilities %#x, want messagebus (100) with none", hp.uid, hp.capEff)
			}
		case strings.HasPrefix(hp.comm, "python"):
			sawSim = true
			if hp.uid != 0 || hp.capEff != manifestCaps {
				t.Errorf("the simulated bluetoothd runs as uid %d with capabilities %#x, want root with %#x", hp.uid, hp.capEff, manifestCaps)
			}
		}
	}
	if !sawBus || !sawSim {
		t.Errorf("bluetoothd container: dbus-daemon seen %v, simulator seen %v", sawBus, sawSim)
	}
	for _, hp := range containerProcs(t, p, "operator") {
		if hp.capEff != 0 || hp.capBnd != 0 {
			t.Errorf("operator: %s has capabilities %#x (bounding %#x), want none", hp.comm, hp.capEff, hp.capBnd)
		}
	}

	// The restored bond is the paired gamepad; it connects, and the
	// operator publishes it untainted with its input node.
	sim, err := bluezsim.Attach("unix:path="+busSocket, "")
	must(t, err)
	defer sim.Stop()
	must(t, sim.WaitBlueZ(ctx, time.Minute))
	t.Logf("FIGURE bluetooth base: apply → org.bluez owned in %s", time.Since(began).Round(time.Millisecond))
	waitRegistered(t, bluetooth.DriverName)
	must(t, sim.Connect(AdapterName, padAddress))
	padDevice := bluetooth.ControllerName(pad)
	poll(t, "gamepad published untainted", 60*time.Second, func() (bool, string) {
		list, err := client.ResourceV1().ResourceSlices().List(ctx, metav1.ListOptions{FieldSelector: "spec.driver=" + bluetooth.DriverName})
		if err != nil {
			return false, err.Error()
		}
		var names []string
		for _, s := range list.Items {
			for _, d := range s.Spec.Devices {
				names = append(names, d.Name)
				if d.Name == padDevice && len(d.Taints) == 0 && s.Spec.NodeName != nil && *s.Spec.NodeName == theNode.Name() {
					return true, ""
				}
			}
		}
		return false, strings.Join(names, ",")
	})
}

// bluetoothConsumer claims the gamepad and checks that containerd gave the
// consumer exactly its input node and nothing else from /dev/input.
func bluetoothConsumer(t *testing.T, ctx context.Context) {
	r, claim, _, took := startConsumer(t, ctx, directMode(claimFor("gamepad", "bluetooth-input", "")), consumerPod("gamepad", "report", "gamepad", false))
	t.Logf("FIGURE bluetooth consumer: pod with a claim created → running in %s", took.Round(time.Millisecond))
	if n := len(claim.Status.ReservedFor); n != 1 {
		t.Errorf("claim reserved for %d consumers", n)
	}
	var inputs []string
	for path, kind := range r.Dev {
		if strings.HasPrefix(path, "/dev/input/") {
			inputs = append(inputs, path+" "+kind)
		}
	}
	slices.Sort(inputs)
	want := []string{padEventNode + " c 13:" + itoa(64+padEvent)}
	if !slices.Equal(inputs, want) {
		t.Errorf("the consumer's /dev/input holds %q, want exactly %q", inputs, want)
	}
	// The claim's variables name the node, and say it is the pad's own
	// (the claim asked for direct delivery).
	suffix := bluetooth.EnvSuffix(bdaddr.MustParse(padAddress))
	if got := r.Env[bluetooth.EnvInputPrefix+suffix]; got != padEventNode {
		t.Errorf("%s%s = %q, want %q", bluetooth.EnvInputPrefix, suffix, got, padEventNode)
	}
	if got := r.Env[bluetooth.EnvDeliveryPrefix+suffix]; got != bluetooth.ModeDirect {
		t.Errorf("%s%s = %q, want %q", bluetooth.EnvDeliveryPrefix, suffix, got, bluetooth.ModeDirect)
	}
	deletePod(t, ctx, "default", "gamepad")
	poll(t, "the gamepad claim's CDI spec removed", 30*time.Second, func() (bool, string) {
		specs := cdiSpecs(t, bluetooth.DriverName)
		return len(specs) == 0, strings.Join(specs, ",")
	})
	must(t, cluster.Client().ResourceV1().ResourceClaims("default").Delete(ctx, "gamepad", metav1.DeleteOptions{}))
}

// audioBase applies deploy/audio through the tier's overlay on the
// recorded laptop's cards and checks deploy/audio/operator.yaml's order and security
// contexts from the real image, the startup probes, and registration.
func audioBase(t *testing.T, ctx context.Context) {
	if _, err := fakesys.XPS17(root, SoundDir); err != nil {
		t.Fatal(err)
	}
	began := time.Now()
	kubectl(t, ctx, "apply", "--server-side", "-k", overlays.Audio)
	p := waitDaemonPod(t, ctx, "audio-operator", 4*time.Minute, "", podReady)
	t.Logf("FIGURE audio base: apply → pod Ready in %s", time.Since(began).Round(time.Millisecond))
	api := waitDaemonPod(t, ctx, "audio-api", 2*time.Minute, "", podReady)
	t.Logf("FIGURE audio base: apply → audio-api Ready in %s", time.Since(began).Round(time.Millisecond))
	// hostNetwork pods take the Node's InternalIP, which test/node sets
	// to the loopback: audio-api dials the capture container there.
	for _, pod := range []*corev1.Pod{p, api} {
		if pod.Status.PodIP != "127.0.0.1" {
			t.Errorf("pod %s has IP %q, want the Node's 127.0.0.1", pod.Name, pod.Status.PodIP)
		}
	}

	d := containerStatus(t, p, "declare")
	if d.State.Terminated == nil || d.State.Terminated.ExitCode != 0 {
		t.Fatalf("declare did not complete: %+v", d.State)
	}
	order := []string{"pipewire", "wireplumber", "operator", "capture"}
	prev := d.State.Terminated.FinishedAt.Time
	prevName := "declare"
	for _, name := range order {
		at := startedAt(t, p, name)
		if at.Before(prev) {
			t.Errorf("%s started at %s, before %s (%s)", name, at, prevName, prev)
		}
		prev, prevName = at, name
	}
	for _, name := range []string{"pipewire", "wireplumber"} {
		if c := containerStatus(t, p, name); c.Started == nil || !*c.Started {
			t.Errorf("%s: startup probe has not passed", name)
		}
	}
	// deploy/audio/operator.yaml drops every capability in every container.
	for _, name := range order {
		if c := containerStatus(t, p, name); c.State.Running == nil {
			t.Errorf("%s is not running: %+v", name, c.State)
			continue
		}
		for _, hp := range containerProcs(t, p, name) {
			if hp.capEff != 0 || hp.capBnd != 0 || !hp.noNewPrivs {
				t.Errorf("%s: %s has capabilities %#x (bounding %#x), no_new_privs %v; want none and set", name, hp.comm, hp.capEff, hp.capBnd, hp.noNewPrivs)
			}
		}
	}
	waitRegistered(t, "audio.liken.sh")
	poll(t, "audio sinks published", 60*time.Second, func() (bool, string) {
		n := len(sinks(t, ctx))
		return n > 0, itoa(n) + " sinks"
	})
}

// sinks lists the published audio.liken.sh devices that are sinks.
func sinks(t testing.TB, ctx context.Context) []resourceapi.Device {
	list, err := cluster.Client().ResourceV1().ResourceSlices().List(ctx, metav1.ListOptions{FieldSelector: "spec.driver=audio.liken.sh"})
	must(t, err)
	var out []resourceapi.Device
	for _, s := range list.Items {
		for _, d := range s.Spec.Devices {
			if _, ok := d.Attributes["audio.liken.sh/sink"]; ok {
				out = append(out, d)
			} else if _, ok := d.Attributes["sink"]; ok {
				out = append(out, d)
			}
		}
	}
	return out
}

// monitorSink selects the output with the Samsung monitor attached.
const monitorSink = `has(device.attributes["audio.liken.sh"].monitorName) && device.attributes["audio.liken.sh"].monitorName == "U28E590"`

// audioConsumer claims the monitor's sink and plays a tone: containerd
// gives the consumer the socket mount and PIPEWIRE_REMOTE/PIPEWIRE_NODE,
// and PipeWire's graph links the stream to exactly that node.
func audioConsumer(t *testing.T, ctx context.Context) {
	r, claim, _, took := startConsumer(t, ctx, claimFor("speaker", "audio-sink", monitorSink), consumerPod("speaker", "tone", "speaker", false))
	t.Logf("FIGURE audio consumer: pod with a claim created → running in %s", took.Round(time.Millisecond))
	if claim.Status.Allocation == nil || len(claim.Status.Allocation.Devices.Results) != 1 {
		t.Fatalf("claim not allocated to one device: %+v", claim.Status)
	}
	if want := "/var/run/audio.liken.sh/" + string(claim.UID) + "/pipewire-0"; r.Env["PIPEWIRE_REMOTE"] != want {
		t.Errorf("PIPEWIRE_REMOTE = %q", r.Env["PIPEWIRE_REMOTE"])
	}
	node := r.Env["PIPEWIRE_NODE"]
	if node == "" {
		t.Fatalf("no PIPEWIRE_NODE in the consumer's environment")
	}
	if !slices.ContainsFunc(r.Mounts, func(m string) bool { return strings.HasSuffix(m, "/run/audio.liken.sh/"+string(claim.UID)) }) {
		t.Errorf("the consumer has no mount of the PipeWire runtime directory: %v", r.Mounts)
	}
	waitLinked(t, ctx, node, 30*time.Second)
	speakerNode = node
	// What the consumer's container holds of the runtime directory, read
	// through a process of it: its claim's socket alone, never the node's
	// own pipewire-0 or pipewire-0-manager beside it on the host.
	var held []string
	var inside os.FileInfo
	for _, hp := range containerProcs(t, getPod(t, ctx, "default", "speaker"), "consumer") {
		dir := fmt.Sprintf("/proc/%d/root/var/run/audio.liken.sh/%s", hp.pid, claim.UID)
		entries, err := os.ReadDir(dir)
		if err != nil {
			continue // a pw-cat that just ended
		}
		held = held[:0]
		for _, e := range entries {
			held = append(held, e.Name())
		}
		inside, _ = os.Stat(dir + "/pipewire-0")
		break
	}
	if !slices.Equal(held, []string{"pipewire-0"}) {
		t.Errorf("the consumer's /var/run/audio.liken.sh/%s holds %q, want its claim's socket pipewire-0 alone", claim.UID, held)
	}
	claimSocket, err := os.Stat(fmt.Sprintf("/run/audio.liken.sh/claims/%s/pipewire-0", claim.UID))
	if err != nil || inside == nil || !os.SameFile(inside, claimSocket) {
		t.Errorf("the consumer's pipewire-0 is not its claim's socket (claims/%s/pipewire-0: %v)", claim.UID, err)
	}
	if host, err := os.ReadDir("/run/audio.liken.sh"); err == nil {
		var names []string
		for _, e := range host {
			names = append(names, e.Name())
		}
		t.Logf("the host's runtime directory holds %v", names)
	}
}

func itoa(n int) string { return strconv.Itoa(n) }

// waitRegistered waits until the driver's registration socket is in the
// kubelet's plugins_registry and the kubelet has connected to it.
func waitRegistered(t testing.TB, driver string) {
	t.Helper()
	sock := "/var/lib/kubelet/plugins_registry/" + driver + "-reg.sock"
	poll(t, driver+" registered with the kubelet", time.Minute, func() (bool, string) {
		if _, err := os.Stat(sock); err != nil {
			entries, _ := os.ReadDir("/var/lib/kubelet/plugins_registry")
			var names []string
			for _, e := range entries {
				names = append(names, e.Name())
			}
			return false, "registry holds " + strings.Join(names, ",")
		}
		n := registrations(t, driver)
		return n > 0, "the kubelet has not connected to the plugin"
	})
}

// registrations counts the latest kubelet's connections to the driver's
// DRA socket after a registration (its DRA plugin manager logs each).
func registrations(t testing.TB, driver string) int {
	t.Helper()
	logs, err := os.ReadFile(theNode.KubeletLog())
	must(t, err)
	n := 0
	for _, line := range strings.Split(string(logs), "\n") {
		if strings.Contains(line, `"Connection changed"`) && strings.Contains(line, `driverName="`+driver+`"`) && strings.Contains(line, "connected=true") {
			n++
		}
	}
	return n
}
