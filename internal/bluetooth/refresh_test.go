// SPDX-License-Identifier: Apache-2.0

package bluetooth

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/google/go-cmp/cmp"
	oci "github.com/opencontainers/runtime-spec/specs-go"
	resourceapi "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/klog/v2/ktesting"
	"tags.cncf.io/container-device-interface/pkg/cdi"
	cdispec "tags.cncf.io/container-device-interface/specs-go"

	"github.com/liken-sh/operators/internal/bdaddr"
	"github.com/liken-sh/operators/internal/dra"
	"github.com/liken-sh/operators/internal/hid"
	"github.com/liken-sh/operators/test/fakesys"
)

// injected is what a runtime makes of a CDI device: the device nodes and
// device cgroup rules of the OCI spec, and its environment.
type injected struct {
	Nodes []string // "PATH c MAJOR:MINOR"
	Rules []string // "c MAJOR:MINOR ACCESS"
	Env   []string
}

// inject applies the CDI device id from the specs in dir to an empty OCI
// spec with the CDI library, as containerd does when it creates a
// container.
func inject(t *testing.T, dir, id string) injected {
	t.Helper()
	cache, err := cdi.NewCache(cdi.WithSpecDirs(dir), cdi.WithAutoRefresh(false))
	if err != nil {
		t.Fatal(err)
	}
	if errs := cache.GetErrors(); len(errs) > 0 {
		t.Fatalf("CDI specs: %v", errs)
	}
	spec := &oci.Spec{Process: &oci.Process{}, Linux: &oci.Linux{}}
	if _, err := cache.InjectDevices(spec, id); err != nil {
		t.Fatalf("inject %s: %v", id, err)
	}
	var out injected
	for _, d := range spec.Linux.Devices {
		out.Nodes = append(out.Nodes, d.Path+" "+d.Type+" "+strconv.FormatInt(d.Major, 10)+":"+strconv.FormatInt(d.Minor, 10))
	}
	if spec.Linux.Resources != nil {
		for _, r := range spec.Linux.Resources.Devices {
			out.Rules = append(out.Rules, r.Type+" "+strconv.FormatInt(*r.Major, 10)+":"+strconv.FormatInt(*r.Minor, 10)+" "+r.Access)
		}
	}
	out.Env = spec.Process.Env
	return out
}

// A pad in direct mode naps, a USB keyboard takes the evdev node and
// number the pad let go, and the pad wakes at another node: the claim's
// spec, brought up to date by the operator's pass, names the pad's node
// while it is there, no node while it sleeps, its new node with its new
// number once it wakes, and never the keyboard's, which a container
// created at any of these moments would otherwise get by path or by
// number. The runtime needs no host node to create the container's
// (the /dev root here is empty).
func TestDirectSpecFollowsThePadNotItsOldNumber(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	dir := t.TempDir()
	sysRoot, devRoot := filepath.Join(dir, "sys"), filepath.Join(dir, "dev")
	if err := os.MkdirAll(filepath.Join(sysRoot, "bus"), 0o755); err != nil {
		t.Fatal(err)
	}
	padDir, err := fakesys.BluetoothHID(sysRoot, "0005:2DC8:3820.0001", "8Bitdo NES30 Pro", padAddress, hci0Address, 5)
	if err != nil {
		t.Fatal(err)
	}
	walk := func(context.Context) (EvdevNodes, error) { return hid.Discover(sysRoot, devRoot) }
	delivery := Delivery{Published: published, Nodes: walk}
	opts := dra.Options{
		DriverName: DriverName, CDIClass: CDIClass, NodeName: "node-a", KubeClient: fake.NewClientset(),
		RegistrarDir: filepath.Join(dir, "registry"), PluginDir: filepath.Join(dir, "plugin"),
		CDIDir: filepath.Join(dir, "cdi"), BootIDPath: filepath.Join(dir, "boot_id"),
	}
	if err := os.WriteFile(opts.BootIDPath, []byte("boot-1\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	driver, err := dra.Start(ctx, opts, Prepare(delivery))
	if err != nil {
		t.Fatal(err)
	}
	defer driver.Stop()

	claim := &resourceapi.ResourceClaim{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "player-pad", UID: "claim-1"},
		Status: resourceapi.ResourceClaimStatus{Allocation: &resourceapi.AllocationResult{Devices: resourceapi.DeviceAllocationResult{
			Results: []resourceapi.DeviceRequestAllocationResult{{Request: "pad", Driver: DriverName, Pool: "node-a", Device: "e4-17-d8-c5-67-6d"}},
			Config: []resourceapi.DeviceAllocationConfiguration{{
				Source: resourceapi.AllocationConfigSourceClaim,
				DeviceConfiguration: resourceapi.DeviceConfiguration{Opaque: &resourceapi.OpaqueDeviceConfiguration{
					Driver: DriverName, Parameters: runtime.RawExtension{Raw: []byte(`{"mode": "direct"}`)},
				}},
			}},
		}}},
	}
	res, err := driver.PrepareResourceClaims(ctx, []*resourceapi.ResourceClaim{claim})
	if err != nil || res[claim.UID].Err != nil {
		t.Fatalf("prepare: %v %v", err, res[claim.UID].Err)
	}
	id := DriverName + "/" + CDIClass + "=claim-1-e4-17-d8-c5-67-6d"
	op := &operator{driver: driver, delivery: delivery}
	pass := func() {
		t.Helper()
		scan, err := hid.Discover(sysRoot, devRoot)
		if err != nil {
			t.Fatal(err)
		}
		op.refreshSpecs(ctx, scan)
	}
	expect := func(when string, want injected) {
		t.Helper()
		if diff := cmp.Diff(inject(t, opts.CDIDir, id), want); diff != "" {
			t.Errorf("%s: a container created now gets (-got +want):\n%s", when, diff)
		}
	}
	env := func(nodes string) []string { return padEnv(nodes, ModeDirect) }

	expect("prepared", injected{Nodes: []string{"/dev/input/event5 c 13:69"}, Rules: []string{"c 13:69 rwm"}, Env: env("/dev/input/event5")})
	pass()
	expect("after a pass with nothing new", injected{Nodes: []string{"/dev/input/event5 c 13:69"}, Rules: []string{"c 13:69 rwm"}, Env: env("/dev/input/event5")})

	// The pad naps: hidp_session_remove destroys its HID device, and
	// evdev frees event5 (13:69).
	if err := fakesys.RemoveHID(sysRoot, padDir); err != nil {
		t.Fatal(err)
	}
	pass()
	asleep := injected{Env: env("")}
	expect("the pad asleep", asleep)

	// A USB keyboard is plugged in and gets the lowest free minor: the
	// pad's old event5, 13:69.
	if _, err := fakesys.USBHID(sysRoot, "0003:046D:C31C.0001", "Logitech USB Keyboard", 2, 5); err != nil {
		t.Fatal(err)
	}
	pass()
	expect("the keyboard at the pad's old node", asleep)

	// The pad wakes at event6, 13:70.
	if _, err := fakesys.BluetoothHID(sysRoot, "0005:2DC8:3820.0002", "8Bitdo NES30 Pro", padAddress, hci0Address, 6); err != nil {
		t.Fatal(err)
	}
	pass()
	expect("the pad awake again", injected{Nodes: []string{"/dev/input/event6 c 13:70"}, Rules: []string{"c 13:70 rwm"}, Env: env("/dev/input/event6")})

	// The new edits are the claim's record too: a restarted driver that
	// rebuilds the spec from its checkpoint names the same node.
	driver.Stop()
	if err := os.RemoveAll(opts.CDIDir); err != nil {
		t.Fatal(err)
	}
	driver, err = dra.Start(ctx, opts, Prepare(delivery))
	if err != nil {
		t.Fatal(err)
	}
	defer driver.Stop()
	expect("after a driver restart", injected{Nodes: []string{"/dev/input/event6 c 13:70"}, Rules: []string{"c 13:70 rwm"}, Env: env("/dev/input/event6")})
}

// CurrentEdits keeps each prepared controller in the mode it was
// delivered in, rewrites a spec from before the delivery variable (path
// only) with numbers, walks once for the whole refresh, leaves a media
// bus alone, and gives no node when the walk fails.
func TestCurrentEdits(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	walks := 0
	nodes := func(context.Context) (EvdevNodes, error) {
		walks++
		return numbered{padAddress: {ev(6)}}, nil
	}
	relay := &fakeRelay{}
	current := Delivery{Published: published, Nodes: nodes, Relay: relay}.CurrentEdits(ctx)
	own := dra.ContainerEdits{
		DeviceNodes: []*cdispec.DeviceNode{{Path: "/dev/input/event6", Type: "c", Major: 13, Minor: 70}},
		Env:         padEnv("/dev/input/event6", ModeDirect),
	}
	legacy := dra.ContainerEdits{DeviceNodes: []*cdispec.DeviceNode{{Path: "/dev/input/event5"}}}
	if edits, ok := current("claim-1", "e4-17-d8-c5-67-6d", legacy); !ok || !cmp.Equal(edits, own) {
		t.Errorf("a path-only spec: %v, %+v; want %+v", ok, edits, own)
	}
	direct := ControllerEdits(bdaddr.MustParse(padAddress), ModeDirect, []hid.Node{ev(5)})
	if edits, ok := current("claim-2", "e4-17-d8-c5-67-6d", direct); !ok || !cmp.Equal(edits, own) {
		t.Errorf("a direct spec: %v, %+v; want %+v", ok, edits, own)
	}
	relayed := ControllerEdits(bdaddr.MustParse(padAddress), ModeRelay, []hid.Node{ev(40)})
	if edits, ok := current("claim-3", "e4-17-d8-c5-67-6d", relayed); !ok || !cmp.Equal(edits, relayed) {
		t.Errorf("a relayed spec: %v, %+v; want it as it was", ok, edits)
	}
	if len(relay.asked) != 1 || relay.asked[0] != "claim-3 E4:17:D8:C5:67:6D" {
		t.Errorf("the relay was asked %q, want claim-3's pad only", relay.asked)
	}
	bus := MediaBusEdits()
	if _, ok := current("claim-4", hci0Bus, bus); ok {
		t.Error("a media bus was rewritten")
	}
	if walks != 1 {
		t.Errorf("one refresh walked %d times, want once", walks)
	}

	// Without a relay, a relayed spec falls back to the pad's own nodes.
	current = Delivery{Published: published, Nodes: nodes}.CurrentEdits(ctx)
	if edits, ok := current("claim-3", "e4-17-d8-c5-67-6d", relayed); !ok || !cmp.Equal(edits, own) {
		t.Errorf("a relayed spec without a relay: %v, %+v; want %+v", ok, edits, own)
	}

	// A walk that fails names no node, whatever the spec named.
	failing := func(context.Context) (EvdevNodes, error) { return nil, errors.New("sysfs unreadable") }
	current = Delivery{Published: published, Nodes: failing}.CurrentEdits(ctx)
	none := dra.ContainerEdits{Env: padEnv("", ModeDirect)}
	if edits, ok := current("claim-2", "e4-17-d8-c5-67-6d", direct); !ok || !cmp.Equal(edits, none) {
		t.Errorf("a failed walk: %v, %+v; want %+v", ok, edits, none)
	}
}
