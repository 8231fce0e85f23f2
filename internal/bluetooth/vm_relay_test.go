// SPDX-License-Identifier: Apache-2.0

//go:build vmtier

package bluetooth

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"syscall"
	"testing"
	"time"

	"github.com/liken-sh/operators/internal/bdaddr"
	"github.com/liken-sh/operators/internal/dra"
	"github.com/liken-sh/operators/internal/evdev"
	"github.com/liken-sh/operators/internal/hid"
	"github.com/liken-sh/operators/internal/relayd"
	"github.com/liken-sh/operators/test/vm/guest"
	"golang.org/x/sys/unix"
	resourceapi "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

var vmPad = guest.UHIDSpec{
	Name: "liken prepare pad", Phys: "00:aa:01:00:00:00", Uniq: "a4:c1:38:0e:5f:21",
	Bus: guest.BusBluetooth, Vendor: 0x1d6b, Product: 0x0246, Descriptor: guest.GamepadDescriptor,
}

var vmPadAddress = bdaddr.MustParse("A4:C1:38:0E:5F:21")

// connect makes the pad and waits for its evdev node.
func connect(t *testing.T) (*guest.UHID, hid.Node) {
	t.Helper()
	pad, err := guest.CreateUHID(vmPad)
	if err != nil {
		t.Fatal(err)
	}
	var nodes []hid.Node
	if !guest.WaitFor(30*time.Second, func() bool {
		scan, err := hid.Discover("/sys", "/dev")
		nodes = nil
		if err == nil {
			nodes = scan.Nodes(vmPadAddress.String(), "")
		}
		return len(nodes) == 1 && guest.Exists(nodes[0].Path)
	}) {
		pad.Destroy()
		t.Fatalf("no evdev node for the pad: %v", nodes)
	}
	return pad, nodes[0]
}

func discoverNodes(context.Context) (EvdevNodes, error) { return hid.Discover("/sys", "/dev") }

func claimRequest(uid types.UID) dra.DeviceRequest[Params] {
	return dra.DeviceRequest[Params]{
		Claim:  &resourceapi.ResourceClaim{ObjectMeta: metav1.ObjectMeta{Name: "pad", Namespace: "default", UID: uid}},
		Result: resourceapi.DeviceRequestAllocationResult{Driver: DriverName, Pool: "vm", Device: ControllerName(vmPadAddress), Request: "pad"},
	}
}

// awaitKey reads f until a key event with code and value arrives.
func awaitKey(t *testing.T, f *os.File, code uint16, value int32) {
	t.Helper()
	if err := guest.AwaitEvent(f, evdev.EvKey, code, value, 20*time.Second); err != nil {
		t.Fatal(err)
	}
}

// startRelay runs the input relay sidecar's binary on socket.
func startRelay(t *testing.T, dir string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(guest.InputRelay, "-socket", filepath.Join(dir, "relay.sock"), "-state", filepath.Join(dir, "state.json"))
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	if !guest.WaitFor(20*time.Second, func() bool { return guest.Exists(filepath.Join(dir, "relay.sock")) }) {
		t.Fatal("the relay never served its socket")
	}
	return cmd
}

// A claim prepared in relay mode (the default) through the input relay
// sidecar gets a node of its own, by number, that a consumer opens once
// and reads through a nap while another device takes the pad's old
// number; an operator started again (a new client) prepares the same
// claim to the same node. In direct mode the spec, brought up to date
// after the wake, names the pad's new node by its number and never the
// device that took the old one.
func TestVMPrepareRelayAndDirect(t *testing.T) {
	if err := guest.Modprobe("uhid", "hid-generic", "evdev", "uinput"); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	relay := startRelay(t, dir)
	defer func() {
		relay.Process.Signal(syscall.SIGTERM)
		relay.Wait()
	}()
	pad, own := connect(t)
	defer func() {
		if pad != nil {
			pad.Destroy()
		}
	}()
	ctx := context.Background()
	published := func(name string) bool { return name == ControllerName(vmPadAddress) }
	delivery := Delivery{Published: published, Nodes: discoverNodes, Relay: NewInputRelay(filepath.Join(dir, "relay.sock"), "/dev")}
	const uid = types.UID("c0ffee00-0000-4000-8000-00000000000a")
	edits, err := Prepare(delivery)(ctx, claimRequest(uid))
	if err != nil {
		t.Fatal(err)
	}
	suffix := EnvSuffix(vmPadAddress)
	if len(edits.DeviceNodes) != 1 {
		t.Fatalf("relay mode delivered %d nodes, want 1: %+v", len(edits.DeviceNodes), edits)
	}
	vn := edits.DeviceNodes[0]
	if vn.Type != "c" || vn.Major != 13 || vn.Path == own.Path || (vn.HostPath != "" && vn.HostPath != vn.Path) {
		t.Errorf("relay mode delivered %+v, want a character node of major 13 that is not the pad's own %s", vn, own)
	}
	if !slices.Contains(edits.Env, EnvDeliveryPrefix+suffix+"="+ModeRelay) || !slices.Contains(edits.Env, EnvInputPrefix+suffix+"="+vn.Path) {
		t.Errorf("relay mode's environment %q, want %s%s=relay and %s%s=%s", edits.Env, EnvDeliveryPrefix, suffix, EnvInputPrefix, suffix, vn.Path)
	}
	var st syscall.Stat_t
	if err := syscall.Stat(vn.Path, &st); err != nil || st.Rdev != unix.Mkdev(uint32(vn.Major), uint32(vn.Minor)) {
		t.Errorf("%s: rdev %#x (%v), the spec says %d:%d", vn.Path, st.Rdev, err, vn.Major, vn.Minor)
	}
	consumer, err := evdev.Open(vn.Path)
	if err != nil {
		t.Fatal(err)
	}
	defer consumer.Close()
	pad.Input([]byte{1, 0, 0})
	awaitKey(t, consumer, 0x130, 1)

	// Direct mode for a second claim, prepared now: the pad's own node.
	direct := claimRequest("c0ffee00-0000-4000-8000-00000000000b")
	direct.Params.Mode = ModeDirect
	dedits, err := Prepare(delivery)(ctx, direct)
	if err != nil {
		t.Fatal(err)
	}
	if len(dedits.DeviceNodes) != 1 || dedits.DeviceNodes[0].Path != own.Path || dedits.DeviceNodes[0].Minor != int64(own.Minor) {
		t.Errorf("direct mode delivered %+v, want the pad's own %s", dedits.DeviceNodes, own)
	}

	// The nap, a keyboard on the freed number, the wake.
	pad.Destroy()
	pad = nil
	awaitKey(t, consumer, 0x130, 0)
	kbd, kn, err := guest.CreateKeyboard()
	if err != nil {
		t.Fatal(err)
	}
	defer kbd.Close()
	var woke hid.Node
	pad, woke = connect(t)
	t.Logf("pad at %s, keyboard took %s, pad woke at %s, the claim's node is %s", own, kn.Path("/dev"), woke, vn.Path)
	// The relay takes the woken pad on its uevents; what the pad sends
	// before that reaches nobody, as it would not reach a reader of the
	// pad's own node that had not opened it yet.
	status := relayd.NewClient(filepath.Join(dir, "relay.sock"))
	if !guest.WaitFor(20*time.Second, func() bool {
		st, err := status.Status(ctx)
		return err == nil && st[string(uid)].Attached
	}) {
		t.Fatal("the relay did not take the woken pad")
	}
	pad.Input([]byte{2, 0, 0})
	awaitKey(t, consumer, 0x131, 1)

	// An operator started again asks for the same claim: same node.
	again := Delivery{Published: published, Nodes: discoverNodes, Relay: NewInputRelay(filepath.Join(dir, "relay.sock"), "/dev")}
	edits2, err := Prepare(again)(ctx, claimRequest(uid))
	if err != nil || len(edits2.DeviceNodes) != 1 || *edits2.DeviceNodes[0] != *vn {
		t.Errorf("the same claim after an operator restart: %+v (%v), want %+v", edits2.DeviceNodes, err, vn)
	}

	// Direct mode's spec brought up to date: the pad's new node, never
	// the keyboard's.
	refreshed, ok := again.CurrentEdits(ctx)(direct.Claim.UID, ControllerName(vmPadAddress), dedits)
	if !ok || len(refreshed.DeviceNodes) != 1 {
		t.Fatalf("direct mode refreshed to %+v (%v)", refreshed.DeviceNodes, ok)
	}
	rn := refreshed.DeviceNodes[0]
	if rn.Path != woke.Path || rn.Minor != int64(woke.Minor) || (rn.Major == int64(kn.Major) && rn.Minor == int64(kn.Minor)) {
		t.Errorf("direct mode refreshed to %+v, want the pad's new %s and never the keyboard's %d:%d", rn, woke, kn.Major, kn.Minor)
	}

	// Unprepared: the operator's pass lets the relay's devices of a claim
	// the driver no longer holds go, and keeps a claim's being prepared.
	key, err := again.Relay.(*InputRelay).Keep(ctx, func() map[types.UID]bool { return map[types.UID]bool{direct.Claim.UID: true} })
	if err != nil {
		t.Fatal(err)
	}
	if st, err := status.Status(ctx); err != nil || len(st) != 0 {
		t.Errorf("after Keep without the claim the relay holds %+v (%v), want nothing", st, err)
	}
	consumer.SetReadDeadline(time.Now().Add(20 * time.Second))
	buf := make([]byte, 64*evdev.EventSize)
	for err == nil {
		_, err = consumer.Read(buf) // what was queued before the end, then the end
	}
	if !errors.Is(err, syscall.ENODEV) {
		t.Errorf("the consumer of a let-go claim read %v, want ENODEV", err)
	}
	t.Logf("relay key after letting the claim go: %q", key)
}
