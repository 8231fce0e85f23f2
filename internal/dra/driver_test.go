// SPDX-License-Identifier: Apache-2.0

package dra

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	resourceapi "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/dynamic-resource-allocation/kubeletplugin"
	"k8s.io/klog/v2/ktesting"
	"tags.cncf.io/container-device-interface/pkg/cdi"
	cdispec "tags.cncf.io/container-device-interface/specs-go"
)

const testDriver = "test.liken.sh"

type fixture struct {
	t      *testing.T
	ctx    context.Context
	opts   Options
	driver *Driver
	calls  int
}

func newFixture(t *testing.T) *fixture { return newFixtureWith(t, nil) }

// newFixtureWith is newFixture with setUp run on the options before the
// driver starts (to put a filesystem of the test's own under a directory).
func newFixtureWith(t *testing.T, setUp func(Options)) *fixture {
	_, ctx := ktesting.NewTestContext(t)
	dir := t.TempDir()
	f := &fixture{t: t, ctx: ctx, opts: Options{
		DriverName: testDriver, NodeName: "node-1", KubeClient: fake.NewClientset(), CDIClass: "dev",
		RegistrarDir: filepath.Join(dir, "registry"), PluginDir: filepath.Join(dir, "plugin"),
		CDIDir: filepath.Join(dir, "cdi"), BootIDPath: filepath.Join(dir, "boot_id"),
	}}
	if err := os.WriteFile(f.opts.BootIDPath, []byte("boot-1\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if setUp != nil {
		setUp(f.opts)
	}
	f.start()
	t.Cleanup(func() { f.driver.Stop() })
	return f
}

func (f *fixture) prepareFunc(ctx context.Context, req DeviceRequest[testParams]) (ContainerEdits, error) {
	f.calls++
	if req.Result.Device == "broken" {
		return ContainerEdits{}, errors.New("hardware said no")
	}
	if strings.HasPrefix(req.Result.Device, "bare") {
		return ContainerEdits{}, nil // a device that gives a container nothing
	}
	return ContainerEdits{
		Env:         []string{"DEVICE=" + req.Result.Device, "CODEC=" + req.Params.Codec},
		DeviceNodes: []*cdispec.DeviceNode{{Path: "/dev/input/event7"}},
	}, nil
}

func (f *fixture) start() {
	f.t.Helper()
	d, err := Start(f.ctx, f.opts, f.prepareFunc)
	if err != nil {
		f.t.Fatal(err)
	}
	f.driver = d
}

func (f *fixture) restart() {
	f.driver.Stop()
	f.start()
}

func claim(uid, name string, results []resourceapi.DeviceRequestAllocationResult, configs ...resourceapi.DeviceAllocationConfiguration) *resourceapi.ResourceClaim {
	return &resourceapi.ResourceClaim{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name, UID: types.UID(uid)},
		Status: resourceapi.ResourceClaimStatus{Allocation: &resourceapi.AllocationResult{
			Devices: resourceapi.DeviceAllocationResult{Results: results, Config: configs},
		}},
	}
}

func alloc(request, driver, device string) resourceapi.DeviceRequestAllocationResult {
	return resourceapi.DeviceRequestAllocationResult{Request: request, Driver: driver, Pool: "node-1", Device: device}
}

func (f *fixture) prepare(claims ...*resourceapi.ResourceClaim) map[types.UID]kubeletplugin.PrepareResult {
	f.t.Helper()
	out, err := f.driver.PrepareResourceClaims(f.ctx, claims)
	if err != nil {
		f.t.Fatal(err)
	}
	return out
}

func (f *fixture) unprepare(uids ...string) map[types.UID]error {
	f.t.Helper()
	var refs []kubeletplugin.NamespacedObject
	for _, u := range uids {
		refs = append(refs, kubeletplugin.NamespacedObject{UID: types.UID(u), NamespacedName: types.NamespacedName{Namespace: "default", Name: "x"}})
	}
	out, err := f.driver.UnprepareResourceClaims(f.ctx, refs)
	if err != nil {
		f.t.Fatal(err)
	}
	return out
}

func (f *fixture) specPath(uid string) string {
	return filepath.Join(f.opts.CDIDir, testDriver+"-"+uid+".json")
}

func TestPrepareWritesValidCDISpec(t *testing.T) {
	f := newFixture(t)
	c := claim("uid-1", "pad", []resourceapi.DeviceRequestAllocationResult{alloc("pad", testDriver, "aa-bb")},
		opaque(resourceapi.AllocationConfigSourceClaim, testDriver, `{"codec":"sbc"}`))
	res := f.prepare(c)["uid-1"]
	if res.Err != nil {
		t.Fatal(res.Err)
	}
	wantID := "test.liken.sh/dev=uid-1-aa-bb"
	if len(res.Devices) != 1 || res.Devices[0].CDIDeviceIDs[0] != wantID || res.Devices[0].DeviceName != "aa-bb" {
		t.Fatalf("devices %+v, want one with CDI ID %s", res.Devices, wantID)
	}
	spec, err := cdi.ReadSpec(f.specPath("uid-1"), 0)
	if err != nil {
		t.Fatalf("CDI library rejects the spec: %v", err)
	}
	dev := spec.GetDevice("uid-1-aa-bb")
	if dev == nil {
		t.Fatal("spec lacks the device")
	}
	edits := dev.ContainerEdits
	if !strings.Contains(strings.Join(edits.Env, " "), "CODEC=sbc") || edits.DeviceNodes[0].Path != "/dev/input/event7" {
		t.Fatalf("spec edits %+v do not carry what the driver asked for", edits)
	}
	// Unprepare removes it; a second unprepare and an unknown claim succeed.
	for uid, err := range f.unprepare("uid-1", "uid-1", "never-prepared") {
		if err != nil {
			t.Errorf("unprepare %s: %v", uid, err)
		}
	}
	if _, err := os.Stat(f.specPath("uid-1")); !os.IsNotExist(err) {
		t.Fatalf("spec still there after unprepare: %v", err)
	}
}

func TestPrepareIdempotentAcrossRestartAndWipe(t *testing.T) {
	f := newFixture(t)
	c := claim("uid-2", "pad", []resourceapi.DeviceRequestAllocationResult{alloc("pad", testDriver, "dev-a")})
	first := f.prepare(c)["uid-2"]
	if first.Err != nil {
		t.Fatal(first.Err)
	}
	f.restart()
	// The CDI directory is a tmpfs that a reboot wiped.
	if err := os.RemoveAll(f.opts.CDIDir); err != nil {
		t.Fatal(err)
	}
	f.restart() // startup repair rebuilds it
	if _, err := cdi.ReadSpec(f.specPath("uid-2"), 0); err != nil {
		t.Fatalf("startup did not rebuild the spec: %v", err)
	}
	os.Remove(f.specPath("uid-2"))
	calls := f.calls
	again := f.prepare(c)["uid-2"]
	if again.Err != nil || again.Devices[0].CDIDeviceIDs[0] != first.Devices[0].CDIDeviceIDs[0] {
		t.Fatalf("repeated prepare answered %+v, want %+v", again, first)
	}
	if f.calls != calls {
		t.Fatal("a prepared claim was prepared by the operator again")
	}
	if _, err := cdi.ReadSpec(f.specPath("uid-2"), 0); err != nil {
		t.Fatalf("repeated prepare did not rebuild the spec: %v", err)
	}
	if err := f.unprepare("uid-2")["uid-2"]; err != nil {
		t.Fatal(err)
	}
}

func TestPrepareBadInputIsPerClaim(t *testing.T) {
	f := newFixture(t)
	good := claim("good", "good", []resourceapi.DeviceRequestAllocationResult{alloc("r", testDriver, "dev-good")})
	badKey := claim("badkey", "badkey", []resourceapi.DeviceRequestAllocationResult{alloc("r", testDriver, "dev-b")},
		opaque(resourceapi.AllocationConfigSourceClaim, testDriver, `{"codec":"sbc","bitrate":9}`))
	other := claim("other", "other", []resourceapi.DeviceRequestAllocationResult{alloc("r", "gpu.example.com", "gpu0")})
	broken := claim("broken", "broken", []resourceapi.DeviceRequestAllocationResult{alloc("r", testDriver, "broken")})
	unallocated := &resourceapi.ResourceClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "u", UID: "unalloc"}}
	res := f.prepare(good, badKey, other, broken, unallocated)
	if res["good"].Err != nil {
		t.Fatalf("good claim failed: %v", res["good"].Err)
	}
	for uid, want := range map[types.UID][]string{
		"badkey":  {"default/badkey", `unknown field "bitrate"`},
		"other":   {"default/other", "no device of driver test.liken.sh", "gpu.example.com"},
		"broken":  {"default/broken", "device broken", "hardware said no"},
		"unalloc": {"not allocated"},
	} {
		err := res[uid].Err
		if err == nil {
			t.Errorf("%s: prepared", uid)
			continue
		}
		for _, w := range want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%s: error %q does not mention %q", uid, err, w)
			}
		}
		if _, serr := os.Stat(f.specPath(string(uid))); !os.IsNotExist(serr) {
			t.Errorf("%s: failed claim left a spec", uid)
		}
	}
	if _, ok := f.driver.cp.body.Claims["broken"]; ok {
		t.Error("a failed prepare stayed in the checkpoint")
	}
	if _, err := cdi.ReadSpec(f.specPath("good"), 0); err != nil {
		t.Fatalf("good claim's spec: %v", err)
	}
}

func TestPrepareRefusesDoubleGrant(t *testing.T) {
	f := newFixture(t)
	a := claim("a", "a", []resourceapi.DeviceRequestAllocationResult{alloc("r", testDriver, "speaker")})
	b := claim("b", "b", []resourceapi.DeviceRequestAllocationResult{alloc("r", testDriver, "speaker")})
	res := f.prepare(a, b)
	if res["a"].Err != nil {
		t.Fatal(res["a"].Err)
	}
	if res["b"].Err == nil || !strings.Contains(res["b"].Err.Error(), "already prepared for claim default/a") {
		t.Fatalf("second grant of an exclusive device: %v", res["b"].Err)
	}
	admin := true
	c := claim("c", "c", []resourceapi.DeviceRequestAllocationResult{{Request: "r", Driver: testDriver, Pool: "node-1", Device: "speaker", AdminAccess: &admin}})
	if err := f.prepare(c)["c"].Err; err != nil {
		t.Fatalf("admin access refused: %v", err)
	}
}

func TestUnwritableCDIDirTouchesNoOtherClaim(t *testing.T) {
	f := newFixture(t)
	a := claim("a", "a", []resourceapi.DeviceRequestAllocationResult{alloc("r", testDriver, "one")})
	if err := f.prepare(a)["a"].Err; err != nil {
		t.Fatal(err)
	}
	// Replace the directory by a file: nothing can be written in it, even as root.
	if err := os.RemoveAll(f.opts.CDIDir); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(f.opts.CDIDir, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	b := claim("b", "b", []resourceapi.DeviceRequestAllocationResult{alloc("r", testDriver, "two")})
	err := f.prepare(b)["b"].Err
	if err == nil || !strings.Contains(err.Error(), "CDI") {
		t.Fatalf("prepare into an unwritable CDI dir: %v", err)
	}
	if _, ok := f.driver.cp.body.Claims["a"]; !ok {
		t.Fatal("the other claim's record was lost")
	}
	if _, ok := f.driver.cp.body.Claims["b"]; ok {
		t.Fatal("the failed claim was recorded")
	}
}

func TestCorruptCheckpointIsQuarantined(t *testing.T) {
	f := newFixture(t)
	a := claim("a", "a", []resourceapi.DeviceRequestAllocationResult{alloc("r", testDriver, "one")})
	if err := f.prepare(a)["a"].Err; err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(f.opts.PluginDir, CheckpointFile)
	good, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for name, data := range map[string]string{
		"tampered":      `{"version":"liken.sh/dra-checkpoint/v1","checksum":"sha256:00","body":{"claims":{}}}`,
		"truncated":     string(good[:len(good)/2]),
		"newer version": strings.Replace(string(good), checkpointVersion, "liken.sh/dra-checkpoint/v2", 1),
	} {
		t.Run(name, func(t *testing.T) {
			f.driver.Stop()
			if err := os.WriteFile(path, []byte(data), 0o600); err != nil {
				t.Fatal(err)
			}
			f.start()
			moved, _ := filepath.Glob(path + ".corrupt-*")
			if len(moved) == 0 {
				t.Fatal("untrusted checkpoint not kept aside")
			}
			// The spec a pod may be using stays, its device stays held, and
			// the kubelet's repeated calls still answer.
			if _, err := cdi.ReadSpec(f.specPath("a"), 0); err != nil {
				t.Fatalf("spec of a prepared claim lost: %v", err)
			}
			b := claim("b", "b", []resourceapi.DeviceRequestAllocationResult{alloc("r", testDriver, "one")})
			if err := f.prepare(b)["b"].Err; err == nil {
				t.Fatal("a device held by an adopted claim was granted again")
			}
			res := f.prepare(a)["a"]
			if res.Err != nil || res.Devices[0].CDIDeviceIDs[0] != "test.liken.sh/dev=a-one" {
				t.Fatalf("repeated prepare after adoption: %+v", res)
			}
		})
	}
	if err := f.unprepare("a")["a"]; err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(f.specPath("a")); !os.IsNotExist(err) {
		t.Fatal("unprepare of an adopted claim left its spec")
	}
}
