// SPDX-License-Identifier: Apache-2.0

//go:build vmtier

package bluez

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/godbus/dbus/v5"
	"golang.org/x/sys/unix"
	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	kubefake "k8s.io/client-go/kubernetes/fake"
	clienttesting "k8s.io/client-go/testing"

	btv1 "github.com/liken-sh/operators/api/bluetooth/v1alpha1"
	"github.com/liken-sh/operators/internal/bdaddr"
	"github.com/liken-sh/operators/internal/bluetooth"
	"github.com/liken-sh/operators/internal/bluez"
	"github.com/liken-sh/operators/internal/bonds"
	"github.com/liken-sh/operators/internal/dra"
	"github.com/liken-sh/operators/internal/hci"
	"github.com/liken-sh/operators/test/vm/guest"
)

// The capabilities deploy/bluetooth/operator.yaml gives the bluetoothd
// container (everything else dropped), as setpriv(1) spells them, and
// their bits in /proc/<pid>/status's CapEff (linux/capability.h: SETGID
// 6, SETUID 7, NET_BIND_SERVICE 10, NET_ADMIN 12, NET_RAW 13).
const (
	bluetoothdCaps   = "-all,+net_admin,+net_raw,+net_bind_service,+setuid,+setgid"
	bluetoothdCapEff = 1<<6 | 1<<7 | 1<<10 | 1<<12 | 1<<13
)

// devInfoEnv makes this test binary, started again under setpriv with no
// capability, print one adapter's HCIGETDEVINFO flags and exit (TestMain).
const devInfoEnv = "LIKEN_VMTEST_DEVINFO_INDEX"

// gamepadDescriptor is a HID report descriptor of a gamepad: sixteen
// buttons and two 8-bit axes in report 1 (HID Usage Tables, Generic
// Desktop Game Pad).
const gamepadDescriptor = "05010905a1018501050919012910150025017501951081020501093009311581257f750895028102c0"

// hidRecord is the device side's SDP record of a HID gamepad (Bluetooth
// HID profile 1.1, section 5.3): the service class 0x1124, the control
// PSM 0x11 and interrupt PSM 0x13, and the HID attributes BlueZ's input
// plugin reads (profiles/input/device.c, extract_hid_record), among them
// the report descriptor the host's kernel builds the input device from.
var hidRecord = `<?xml version="1.0" encoding="UTF-8" ?>
<record>
  <attribute id="0x0001"><sequence><uuid value="0x1124"/></sequence></attribute>
  <attribute id="0x0004"><sequence>
    <sequence><uuid value="0x0100"/><uint16 value="0x0011"/></sequence>
    <sequence><uuid value="0x0011"/></sequence>
  </sequence></attribute>
  <attribute id="0x0005"><sequence><uuid value="0x1002"/></sequence></attribute>
  <attribute id="0x0009"><sequence><sequence><uuid value="0x1124"/><uint16 value="0x0101"/></sequence></sequence></attribute>
  <attribute id="0x000d"><sequence><sequence>
    <sequence><uuid value="0x0100"/><uint16 value="0x0013"/></sequence>
    <sequence><uuid value="0x0011"/></sequence>
  </sequence></sequence></attribute>
  <attribute id="0x0100"><text value="VM Gamepad"/></attribute>
  <attribute id="0x0201"><uint16 value="0x0111"/></attribute>
  <attribute id="0x0202"><uint8 value="0x08"/></attribute>
  <attribute id="0x0203"><uint8 value="0x00"/></attribute>
  <attribute id="0x0204"><boolean value="true"/></attribute>
  <attribute id="0x0205"><boolean value="true"/></attribute>
  <attribute id="0x0206"><sequence><sequence><uint8 value="0x22"/><text encoding="hex" value="` + gamepadDescriptor + `"/></sequence></sequence></attribute>
  <attribute id="0x0207"><sequence><sequence><uint16 value="0x0409"/><uint16 value="0x0100"/></sequence></sequence></attribute>
  <attribute id="0x020e"><boolean value="false"/></attribute>
</record>`

// profile is the device side's org.bluez.Profile1: it only holds the
// SDP record, so every call is acknowledged.
type profile struct{}

func (profile) Release() *dbus.Error { return nil }
func (profile) NewConnection(dbus.ObjectPath, dbus.UnixFD, map[string]dbus.Variant) *dbus.Error {
	return nil
}
func (profile) RequestDisconnection(dbus.ObjectPath) *dbus.Error { return nil }

func TestMain(m *testing.M) {
	if idx := os.Getenv(devInfoEnv); idx != "" {
		os.Exit(printDevInfo(idx))
	}
	os.Exit(m.Run())
}

// printDevInfo is the capability-less child: it prints its own CapEff
// and the adapter's HCIGETDEVINFO flags, read as the operator reads them.
func printDevInfo(idx string) int {
	n, err := strconv.ParseUint(idx, 10, 16)
	if err != nil {
		fmt.Println(err)
		return 2
	}
	status, _ := os.ReadFile("/proc/self/status")
	for _, l := range strings.Split(string(status), "\n") {
		if strings.HasPrefix(l, "CapEff:") {
			fmt.Println(strings.Join(strings.Fields(l), " "))
		}
	}
	sock, err := hci.OpenSocket()
	if err != nil {
		fmt.Println(err)
		return 1
	}
	defer sock.Close()
	info, err := sock.DevInfo(uint16(n))
	if err != nil {
		fmt.Println(err)
		return 1
	}
	fmt.Printf("flags %#x pscan %v iscan %v\n", info.Flags, info.PageScan(), info.InquiryScan())
	return 0
}

// The PS button, proven on BlueZ 5.66 and a real kernel: three btvirt
// controllers, the first the adapter the operator serves, the second a
// HID gamepad (its SDP record registered in the same bluetoothd), the
// third a device whose pairing is refused.
//
//  1. bluetoothd runs under the capabilities the pod gives it, and the
//     operator (bluetooth.Run) serves the first adapter; the API is
//     client-go's object tracker (the API server's behaviour is proven
//     against a real one elsewhere; this tier proves the radio).
//  2. A PairingRequest pairs the gamepad: the operator's agent puts the
//     comparison passkey the controllers derived into status.passkey,
//     the request answered with passkeyConfirmed=true pairs, and the
//     bond reaches its Secret. (btvirt's controllers always compare
//     numbers: emulator/btdev.c raises User Confirmation Request whatever
//     the IO capabilities and answers a passkey reply with ENOTSUP, so
//     typed passkeys are proven against the simulator instead.)
//  3. The pod restarts as the kubelet restarts it: the operator and
//     bluetoothd stop, the tree is emptied (the emptyDir goes with the
//     pod), bondfetch's library calls restore the adapter's bonds from
//     the Secrets, bluetoothd and then the operator start again. The
//     gamepad keeps its own key, as a real one keeps it in flash.
//  4. Page scan is on (read with no capability, HCIGETDEVINFO) while
//     the management interface's Connectable setting stays off: the
//     kernel page-scans for the bonded device bluetoothd put on its
//     accept list. The Adapter's PageScan condition says so.
//  5. The gamepad pages the host and opens the HID control and interrupt
//     channels, with no agent registered anywhere: the host accepts, the
//     kernel's hidp creates the input device, the Peripheral turns
//     Connected and Ready, and the ResourceSlice offers the controller
//     untainted.
//  6. A request for the third device answered passkeyConfirmed=false
//     ends Failed, saying so, and leaves no link key.
func TestVMReconnectAfterRestart(t *testing.T) {
	if err := guest.Modprobe("hidp", "hid-generic", "evdev"); err != nil {
		t.Fatal(err)
	}
	bv, err := guest.StartBtvirt(3)
	if err != nil {
		t.Fatal(err)
	}
	// Everything the test starts is ended by t.Cleanup, the last started
	// first, so a t.Fatal at any step leaves no operator, bluetoothd or
	// virtual controller behind.
	t.Cleanup(func() { _ = bv.Stop() })
	addrs := controllerAddresses(t, bv)
	host, pad, other := addrs[0], addrs[1], addrs[2]
	t.Logf("adapter hci%d %s, gamepad hci%d %s, a device to refuse hci%d %s", bv.Controllers[0], host, bv.Controllers[1], pad, bv.Controllers[2], other)
	os.RemoveAll(storage)
	os.MkdirAll(storage, 0o755)

	api := newFakeAPI(t)
	d := startBluetoothdAs(t, bluetoothdCaps)
	t.Cleanup(func() {
		if d != nil {
			d.stop()
		}
	})
	checkCapEff(t, d.cmd.Process.Pid, bluetoothdCapEff)
	paths := waitAdapters(t, d, addrs)
	padSide := newPadSide(t, paths[1])
	t.Cleanup(padSide.close)

	op := api.startOperator(t, host)
	api.waitAdapter(t, host, "created", func(a *btv1.Adapter) bool { return a.Status.Powered })

	paired := api.pairThroughRequest(t, padSide, host, pad, "accepted", true)
	if paired.Status.Phase != btv1.PhasePaired || paired.Status.Peripheral != pad.Key() {
		t.Fatalf("request answered passkeyConfirmed=true ended %q with peripheral %q, want Paired and %s: %+v",
			paired.Status.Phase, paired.Status.Peripheral, pad.Key(), paired.Status)
	}
	secret := api.waitBondSecret(t, host, pad)
	t.Logf("paired through the request; the bond is in Secret %s (%d keys)", secret.Name, len(secret.Data))
	// The window closes once nothing is open, and the agent goes with it.
	api.waitAdapter(t, host, "window closed", func(a *btv1.Adapter) bool { return !a.Status.Discoverable && !a.Status.Pairable })

	// The restart, in the kubelet's order.
	op.stop(t)
	d.stop()
	d = nil
	padFlash := storage + ".gamepad" // beside the tree: a rename stays on one filesystem
	if err := os.Rename(filepath.Join(storage, pad.String()), padFlash); err != nil {
		t.Fatal(err)
	}
	if err := os.RemoveAll(storage); err != nil {
		t.Fatal(err)
	}
	bondfetch(t, api.kube, host)
	if err := os.Rename(padFlash, filepath.Join(storage, pad.String())); err != nil {
		t.Fatal(err)
	}
	d = startBluetoothdAs(t, bluetoothdCaps)
	waitAdapters(t, d, addrs)
	api.startOperator(t, host)

	// Page scan: on, from the accept list, with Connectable off.
	if !waitObjects(d, 10*time.Second, func(o bluez.Objects) bool {
		for _, x := range o.Devices {
			if x.Path == devicePath(paths[0], pad) && x.Paired && x.Trusted {
				return true
			}
		}
		return false
	}) {
		t.Fatalf("after the restart, %s is not a paired, trusted device of %s\n%s", pad, host, d.output())
	}
	settings := currentSettings(t, bv.Controllers[0])
	if slices.Contains(settings, "connectable") {
		t.Errorf("the adapter's management settings say connectable (%q); BlueZ 5.66 keeps it off, and this test would prove nothing", settings)
	}
	var flags string
	if !guest.WaitFor(30*time.Second, func() bool {
		flags = devInfoWithoutCaps(t, bv.Controllers[0])
		return strings.Contains(flags, "pscan true")
	}) {
		t.Fatalf("after the restart the adapter does not page-scan: %s (settings %q)\n%s", flags, settings, d.output())
	}
	t.Logf("after the restart: management settings %q; HCIGETDEVINFO with no capability: %s", settings, flags)
	api.waitAdapter(t, host, "PageScan True", func(a *btv1.Adapter) bool {
		c := findCondition(a.Status.Conditions, btv1.ConditionPageScan)
		return c != nil && c.Status == metav1.ConditionTrue && c.Reason == btv1.ReasonPageScanOn
	})

	// The PS button, once the host's input plugin holds the gamepad (as
	// a person presses it seconds after the pod came back, not within
	// the first one): the gamepad pages the host and opens its channels.
	if !guest.WaitFor(30*time.Second, func() bool { return hasInterface(d, devicePath(paths[0], pad), "org.bluez.Input1") }) {
		t.Fatalf("after the restart bluetoothd's input plugin never took %s (no org.bluez.Input1)\n%s\n%s", pad, deviceState(devicePath(paths[0], pad), host, pad), d.output())
	}
	ctrl, intr, err := connectHID(t, pad, host)
	if err != nil {
		t.Logf("the first press failed (%v); pressing again in 2 s", err)
		time.Sleep(2 * time.Second)
		if ctrl, intr, err = connectHID(t, pad, host); err != nil {
			t.Fatalf("the gamepad could not reconnect: %v\n%s", err, d.output())
		}
	}
	defer unix.Close(ctrl)
	defer unix.Close(intr)
	per := api.waitPeripheral(t, pad, "Connected and Ready", func(p *btv1.Peripheral) bool {
		c := findCondition(p.Status.Conditions, btv1.ConditionConnected)
		r := findCondition(p.Status.Conditions, btv1.ConditionReady)
		return c != nil && c.Status == metav1.ConditionTrue && r != nil && r.Status == metav1.ConditionTrue
	})
	t.Logf("reconnected: Peripheral %s conditions %s", per.Name, conditions(per.Status.Conditions))
	api.waitSliceDevice(t, bluetooth.ControllerName(pad))

	// A comparison answered passkeyConfirmed=false fails visibly (with the
	// third controller as the device, so that the gamepad's proof above
	// never follows a failed authentication).
	otherSide := newPadSide(t, paths[2])
	defer otherSide.close()
	failed := api.pairThroughRequest(t, otherSide, host, other, "refused", false)
	c := findCondition(failed.Status.Conditions, btv1.ConditionPaired)
	if failed.Status.Phase != btv1.PhaseFailed || c == nil || !strings.Contains(c.Message, "passkeyConfirmed is false") {
		t.Fatalf("request answered passkeyConfirmed=false ended %q (%s), want Failed naming the refusal", failed.Status.Phase, conditions(failed.Status.Conditions))
	}
	t.Logf("refused comparison: phase %s, %s", failed.Status.Phase, conditions(failed.Status.Conditions))
	if _, err := os.Stat(filepath.Join(storage, host.String(), other.String(), "info")); err == nil {
		if got, _ := os.ReadFile(filepath.Join(storage, host.String(), other.String(), "info")); strings.Contains(string(got), "[LinkKey]") {
			t.Errorf("the refused device has a link key on the host:\n%s", got)
		}
	}
}

// padSide is the gamepad's half of bluetoothd: its SDP record, its
// adapter made discoverable and pairable, and an agent that confirms.
type padSide struct {
	t     *testing.T
	conn  *dbus.Conn
	agent *agent
}

const profilePath = dbus.ObjectPath("/sh/liken/vmtest/gamepad")

func newPadSide(t *testing.T, adapter dbus.ObjectPath) *padSide {
	t.Helper()
	conn, err := dbus.Connect(busAddress)
	if err != nil {
		t.Fatal(err)
	}
	s := &padSide{t: t, conn: conn, agent: &agent{}}
	if err := conn.Export(profile{}, profilePath, "org.bluez.Profile1"); err != nil {
		t.Fatal(err)
	}
	if err := conn.Export(s.agent, agentPath, "org.bluez.Agent1"); err != nil {
		t.Fatal(err)
	}
	// The input plugin holds the HID UUID (src/profile.c refuses it:
	// "UUID already registered"), so the profile goes under a UUID of its
	// own; the record it publishes is what says HID.
	s.call("/org/bluez", "org.bluez.ProfileManager1.RegisterProfile", profilePath, "6c696b65-6e00-4000-8000-766d67616d65",
		map[string]dbus.Variant{
			"Name": dbus.MakeVariant("VM Gamepad"), "Role": dbus.MakeVariant("server"),
			"ServiceRecord": dbus.MakeVariant(hidRecord), "AutoConnect": dbus.MakeVariant(false),
		})
	s.call("/org/bluez", "org.bluez.AgentManager1.RegisterAgent", agentPath, "DisplayYesNo")
	for _, p := range []struct {
		name string
		v    any
	}{{"DiscoverableTimeout", uint32(0)}, {"Pairable", true}, {"Discoverable", true}} {
		s.call(adapter, "org.freedesktop.DBus.Properties.Set", "org.bluez.Adapter1", p.name, dbus.MakeVariant(p.v))
	}
	return s
}

func (s *padSide) call(path dbus.ObjectPath, method string, args ...any) {
	s.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := s.conn.Object("org.bluez", path).CallWithContext(ctx, method, 0, args...).Err; err != nil {
		s.t.Fatalf("gamepad side: %s %s: %v", path, method, err)
	}
}

// answerIncoming makes the gamepad's agent bluetoothd's default, so that
// the pairing it did not start (the host's) asks it; the host's side asks
// the agent of the operator, which called Pair (src/device.c, agent_get).
func (s *padSide) answerIncoming() {
	s.call("/org/bluez", "org.bluez.AgentManager1.RequestDefaultAgent", agentPath)
}

func (s *padSide) close() { s.conn.Close() }

// fakeAPI is the cluster: client-go's object tracker behind the dynamic
// and typed clients, one Node.
type fakeAPI struct {
	dyn  *dynamicfake.FakeDynamicClient
	kube *kubefake.Clientset
	dirs string
}

const (
	nodeName  = "vm-node"
	namespace = "liken-system"
)

func newFakeAPI(t *testing.T) *fakeAPI {
	// The three kinds stay unstructured in the tracker, as they travel
	// from an API server: a scheme that knew their Go types would make
	// the tracker convert a non-empty list into them, which the
	// informers' unstructured lists cannot take.
	scheme := runtime.NewScheme()
	lists := map[schema.GroupVersionResource]string{
		btv1.AdaptersResource: "AdapterList", btv1.PeripheralsResource: "PeripheralList", btv1.PairingRequestsResource: "PairingRequestList",
	}
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: nodeName, UID: "6e6f6465-0000-0000-0000-000000000001"}}
	kube := kubefake.NewClientset(node)
	// The object tracker does not implement generateName, which the
	// ResourceSlice controller creates its slices with; the API server
	// would add a suffix, and so does this.
	var slices int
	kube.PrependReactor("create", "resourceslices", func(action clienttesting.Action) (bool, runtime.Object, error) {
		if s, ok := action.(clienttesting.CreateAction).GetObject().(*resourcev1.ResourceSlice); ok && s.Name == "" && s.GenerateName != "" {
			slices++
			s.Name = fmt.Sprintf("%s%05d", s.GenerateName, slices)
		}
		return false, nil, nil
	})
	return &fakeAPI{
		dyn:  dynamicfake.NewSimpleDynamicClientWithCustomListKinds(scheme, lists),
		kube: kube,
		dirs: t.TempDir(),
	}
}

// operatorRun is one run of the operator's container.
type operatorRun struct {
	cancel context.CancelFunc
	done   chan error
}

func (a *fakeAPI) startOperator(t *testing.T, adapter bdaddr.Address) *operatorRun {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	r := &operatorRun{cancel: cancel, done: make(chan error, 1)}
	cfg := bluetooth.Config{
		NodeName: nodeName, Namespace: namespace, KubeClient: a.kube, Dynamic: a.dyn, Adapter: adapter,
		Bus: bluez.Options{Address: busAddress, Wait: 20 * time.Second}, BondsRoot: storage,
		BondSettle: 200 * time.Millisecond,
		DRA: dra.Options{
			RegistrarDir: filepath.Join(a.dirs, "registry"), PluginDir: filepath.Join(a.dirs, "plugin"),
			CDIDir: filepath.Join(a.dirs, "cdi"), SettleQuiet: 100 * time.Millisecond, SettleCap: time.Second,
		},
	}
	go func() { r.done <- bluetooth.Run(ctx, cfg) }()
	t.Cleanup(func() { r.stop(t) })
	return r
}

// stop ends the run as SIGTERM does and waits for it; a run already
// stopped is left alone. startOperator's t.Cleanup stops a run the test
// did not.
func (r *operatorRun) stop(t *testing.T) {
	if r.cancel == nil {
		return
	}
	r.cancel()
	r.cancel = nil
	select {
	case err := <-r.done:
		if err != nil {
			t.Errorf("the operator ended with %v, want a clean exit", err)
		}
	case <-time.After(20 * time.Second):
		t.Errorf("the operator did not end within 20 s of its context")
	}
}

// get reads one object of the tracker into out.
func (a *fakeAPI) get(gvr schema.GroupVersionResource, ns, name string, out any) error {
	u, err := a.dyn.Resource(gvr).Namespace(ns).Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		return err
	}
	return runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, out)
}

func (a *fakeAPI) waitAdapter(t *testing.T, addr bdaddr.Address, what string, cond func(*btv1.Adapter) bool) *btv1.Adapter {
	t.Helper()
	var got btv1.Adapter
	if !guest.WaitFor(30*time.Second, func() bool {
		got = btv1.Adapter{}
		return a.get(btv1.AdaptersResource, "", addr.Key(), &got) == nil && cond(&got)
	}) {
		t.Fatalf("Adapter %s never %s: %+v", addr.Key(), what, got.Status)
	}
	return &got
}

func (a *fakeAPI) waitPeripheral(t *testing.T, addr bdaddr.Address, what string, cond func(*btv1.Peripheral) bool) *btv1.Peripheral {
	t.Helper()
	var got btv1.Peripheral
	if !guest.WaitFor(30*time.Second, func() bool {
		got = btv1.Peripheral{}
		return a.get(btv1.PeripheralsResource, "", addr.Key(), &got) == nil && cond(&got)
	}) {
		t.Fatalf("Peripheral %s never %s: %+v (conditions %s)", addr.Key(), what, got.Status, conditions(got.Status.Conditions))
	}
	return &got
}

// pairThroughRequest creates a request for the adapter as a person
// would, waits until its window is open and the gamepad answers the scan,
// approves the gamepad, answers the comparison the operator shows with
// confirm, and returns the request once it has finished.
func (a *fakeAPI) pairThroughRequest(t *testing.T, pad *padSide, host, device bdaddr.Address, name string, confirm bool) *btv1.PairingRequest {
	t.Helper()
	reqs := a.dyn.Resource(btv1.PairingRequestsResource).Namespace("default")
	obj := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": btv1.GroupVersion.String(), "kind": "PairingRequest",
		"metadata": map[string]any{"name": name, "namespace": "default"},
		"spec":     map[string]any{"adapter": host.Key(), "windowSeconds": int64(120)},
	}}
	if _, err := reqs.Create(context.Background(), obj, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	var r btv1.PairingRequest
	read := func() bool {
		r = btv1.PairingRequest{}
		return a.get(btv1.PairingRequestsResource, "default", name, &r) == nil
	}
	seen := func() bool {
		for _, s := range r.Status.Seen {
			if strings.EqualFold(s.Address, device.String()) {
				return true
			}
		}
		return false
	}
	if !guest.WaitFor(40*time.Second, func() bool { return read() && r.Status.Phase == btv1.PhaseOpen }) {
		t.Fatalf("request %s never opened: %+v", name, r.Status)
	}
	t.Logf("request %s: open, %s", name, conditions(r.Status.Conditions))
	if !guest.WaitFor(60*time.Second, func() bool { return read() && seen() }) {
		t.Fatalf("request %s: the gamepad %s never answered the scan: %+v", name, device, r.Status)
	}
	pad.answerIncoming()
	a.updateSpec(t, name, func(spec map[string]any) { spec["device"] = device.String() })
	if !guest.WaitFor(30*time.Second, func() bool { return read() && (r.Status.Passkey != nil || r.Status.FinishedAt != nil) }) {
		t.Fatalf("request %s: no passkey to compare: %+v", name, r.Status)
	}
	if r.Status.Passkey == nil || r.Status.Passkey.Action != btv1.PasskeyConfirm || len(r.Status.Passkey.Value) != 6 {
		t.Fatalf("request %s: status.passkey = %+v, want a six-digit value to Confirm; conditions %s; the gamepad's agent was asked %q",
			name, r.Status.Passkey, conditions(r.Status.Conditions), pad.agent.calls())
	}
	t.Logf("request %s: compare %s on %s (the emulated controllers derive 000000)", name, r.Status.Passkey.Value, r.Status.Passkey.Device)
	a.updateSpec(t, name, func(spec map[string]any) { spec["passkeyConfirmed"] = confirm })
	if !guest.WaitFor(40*time.Second, func() bool {
		return read() && (r.Status.Phase == btv1.PhasePaired || r.Status.Phase == btv1.PhaseFailed)
	}) {
		t.Fatalf("request %s never finished: %+v", name, r.Status)
	}
	return &r
}

func (a *fakeAPI) updateSpec(t *testing.T, name string, edit func(map[string]any)) {
	t.Helper()
	reqs := a.dyn.Resource(btv1.PairingRequestsResource).Namespace("default")
	for range 10 {
		u, err := reqs.Get(context.Background(), name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		spec, _ := u.Object["spec"].(map[string]any)
		edit(spec)
		u.SetGeneration(u.GetGeneration() + 1)
		if _, err = reqs.Update(context.Background(), u, metav1.UpdateOptions{}); err == nil {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("request %s: the spec update never went through", name)
}

func (a *fakeAPI) waitBondSecret(t *testing.T, adapter, device bdaddr.Address) *corev1.Secret {
	t.Helper()
	var s *corev1.Secret
	if !guest.WaitFor(20*time.Second, func() bool {
		var err error
		s, err = a.kube.CoreV1().Secrets(namespace).Get(context.Background(), bonds.SecretName(adapter, device), metav1.GetOptions{})
		return err == nil && strings.Contains(string(s.Data[bonds.InfoKey(device)]), "[LinkKey]")
	}) {
		t.Fatalf("no Secret %s holding the link key of %s", bonds.SecretName(adapter, device), device)
	}
	return s
}

// waitSliceDevice waits until the node's ResourceSlice offers name with
// no taint.
func (a *fakeAPI) waitSliceDevice(t *testing.T, name string) {
	t.Helper()
	var last []string
	if !guest.WaitFor(20*time.Second, func() bool {
		slices, err := a.kube.ResourceV1().ResourceSlices().List(context.Background(), metav1.ListOptions{})
		if err != nil {
			return false
		}
		last = nil
		for _, s := range slices.Items {
			for _, dev := range s.Spec.Devices {
				last = append(last, fmt.Sprintf("%s(%d taints)", dev.Name, len(dev.Taints)))
				if dev.Name == name && len(dev.Taints) == 0 {
					return true
				}
			}
		}
		return false
	}) {
		t.Fatalf("the ResourceSlice never offered %s untainted; it holds %v", name, last)
	}
	t.Logf("the ResourceSlice offers %s untainted", name)
}

// bondfetch is what the init container does before bluetoothd starts:
// the adapter's bonds from its Secrets into the (empty) tree, and the
// record of which adapter the pod claimed.
func bondfetch(t *testing.T, kube *kubefake.Clientset, adapter bdaddr.Address) {
	t.Helper()
	fetched, err := bonds.Fetch(context.Background(), kube.CoreV1().Secrets(namespace), namespace, adapter)
	if err != nil || len(fetched.Bonds) == 0 || len(fetched.Skipped) > 0 {
		t.Fatalf("Fetch %s: %d bonds, skipped %v, %v", adapter, len(fetched.Bonds), fetched.Skipped, err)
	}
	report, err := bonds.WriteTree(storage, adapter, fetched.Bonds)
	if err != nil {
		t.Fatal(err)
	}
	if err := bonds.WriteClaimed(storage, adapter); err != nil {
		t.Fatal(err)
	}
	t.Logf("bondfetch restored %d bonds of %s: %q", len(fetched.Bonds), adapter, report.Written)
}

// startBluetoothdAs is startBluetoothd under setpriv(1) with the bounding
// set caps: root with exactly those capabilities, as the container
// runtime starts the pod's bluetoothd container.
func startBluetoothdAs(t *testing.T, caps string) *daemon {
	t.Helper()
	return startBluetoothdWith(t, "setpriv", "--bounding-set="+caps, "--inh-caps=-all", "--")
}

// checkCapEff fails unless pid's effective capabilities are want.
func checkCapEff(t *testing.T, pid int, want uint64) {
	t.Helper()
	status, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(string(status), "\n") {
		if v, ok := strings.CutPrefix(l, "CapEff:"); ok {
			got, err := strconv.ParseUint(strings.TrimSpace(v), 16, 64)
			if err != nil || got != want {
				t.Fatalf("bluetoothd's CapEff is %s, want %#x", strings.TrimSpace(v), want)
			}
			t.Logf("bluetoothd runs with CapEff %#x (NET_ADMIN, NET_RAW, NET_BIND_SERVICE, SETUID, SETGID)", got)
			return
		}
	}
	t.Fatalf("no CapEff in /proc/%d/status", pid)
}

// devInfoWithoutCaps runs this binary again with every capability gone
// and returns what it read of adapter id (printDevInfo).
func devInfoWithoutCaps(t *testing.T, id uint16) string {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("setpriv", "--bounding-set=-all", "--inh-caps=-all", "--", exe)
	cmd.Env = append(os.Environ(), devInfoEnv+"="+strconv.Itoa(int(id)))
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("HCIGETDEVINFO with no capability: %v: %s", err, out)
	}
	s := strings.TrimSpace(string(out))
	if !strings.Contains(s, "CapEff: 0000000000000000") {
		t.Fatalf("the child meant to hold no capability reports %q", s)
	}
	return s
}

// currentSettings is the adapter's current settings as btmgmt prints
// them ("current settings: powered bondable ssp br/edr le ...").
func currentSettings(t *testing.T, id uint16) []string {
	t.Helper()
	out, err := guest.Mgmt(id, "info")
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(out, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(l), "current settings:"); ok {
			return strings.Fields(v)
		}
	}
	t.Fatalf("btmgmt info printed no current settings:\n%s", out)
	return nil
}

// connectHID is what a gamepad does when its PS button is pressed: it
// pages the host (an L2CAP connection from its own address makes its
// controller create the ACL link) and opens the HID control channel, then
// the interrupt channel (Bluetooth HID profile, "Device-initiated
// reconnection"). It returns both sockets, or the error of the first
// channel the host refused (with neither socket left open).
func connectHID(t *testing.T, from, to bdaddr.Address) (ctrl, intr int, err error) {
	t.Helper()
	open := func(psm uint16) (int, error) {
		fd, err := unix.Socket(unix.AF_BLUETOOTH, unix.SOCK_SEQPACKET|unix.SOCK_CLOEXEC, unix.BTPROTO_L2CAP)
		if err != nil {
			t.Fatal(err)
		}
		tv := unix.Timeval{Sec: 20}
		if err := unix.SetsockoptTimeval(fd, unix.SOL_SOCKET, unix.SO_SNDTIMEO, &tv); err != nil {
			t.Fatal(err)
		}
		if err := unix.Bind(fd, &unix.SockaddrL2{Addr: [6]uint8(from)}); err != nil {
			t.Fatalf("bind L2CAP to %s: %v", from, err)
		}
		start := time.Now()
		if err := unix.Connect(fd, &unix.SockaddrL2{PSM: psm, Addr: [6]uint8(to)}); err != nil {
			unix.Close(fd)
			return -1, fmt.Errorf("the gamepad's connection to %s PSM %#x: %w", to, psm, err)
		}
		t.Logf("the gamepad opened PSM %#x on %s in %s", psm, to, time.Since(start).Round(time.Millisecond))
		return fd, nil
	}
	if ctrl, err = open(0x11); err != nil {
		return -1, -1, err
	}
	if intr, err = open(0x13); err != nil {
		unix.Close(ctrl)
		return -1, -1, err
	}
	return ctrl, intr, nil
}

// deviceState describes, for a failure message, what bluetoothd exports
// on the device's path (its interfaces and Device1's UUIDs) and the
// device's info and cache files in the storage tree, which bluetoothd
// loads its services from at start (src/adapter.c, load_devices).
func deviceState(path dbus.ObjectPath, adapter, device bdaddr.Address) string {
	var b strings.Builder
	conn, err := dbus.Connect(busAddress)
	if err == nil {
		defer conn.Close()
		var objs map[dbus.ObjectPath]map[string]map[string]dbus.Variant
		err = conn.Object("org.bluez", "/").Call("org.freedesktop.DBus.ObjectManager.GetManagedObjects", 0).Store(&objs)
		var ifaces []string
		for name := range objs[path] {
			ifaces = append(ifaces, name)
		}
		slices.Sort(ifaces)
		fmt.Fprintf(&b, "%s exports %q; Device1.UUIDs %v\n", path, ifaces, objs[path]["org.bluez.Device1"]["UUIDs"])
	}
	if err != nil {
		fmt.Fprintf(&b, "bluetoothd's objects: %v\n", err)
	}
	for _, f := range []string{
		filepath.Join(storage, adapter.String(), device.String(), "info"),
		filepath.Join(storage, adapter.String(), "cache", device.String()),
	} {
		data, err := os.ReadFile(f)
		fmt.Fprintf(&b, "--- %s (%v):\n%s\n", f, err, data)
	}
	return b.String()
}

// hasInterface reports whether bluetoothd exports iface on path.
func hasInterface(d *daemon, path dbus.ObjectPath, iface string) bool {
	conn, err := dbus.Connect(busAddress)
	if err != nil {
		return false
	}
	defer conn.Close()
	var objs map[dbus.ObjectPath]map[string]map[string]dbus.Variant
	if err := conn.Object("org.bluez", "/").Call("org.freedesktop.DBus.ObjectManager.GetManagedObjects", 0).Store(&objs); err != nil {
		return false
	}
	_, ok := objs[path][iface]
	return ok
}

func findCondition(conds []metav1.Condition, typ string) *metav1.Condition {
	for i := range conds {
		if conds[i].Type == typ {
			return &conds[i]
		}
	}
	return nil
}

func conditions(conds []metav1.Condition) string {
	var parts []string
	for _, c := range conds {
		parts = append(parts, fmt.Sprintf("%s=%s(%s: %s)", c.Type, c.Status, c.Reason, c.Message))
	}
	return strings.Join(parts, "; ")
}
