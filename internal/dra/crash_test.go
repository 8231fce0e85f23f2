// SPDX-License-Identifier: Apache-2.0

package dra

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/dynamic-resource-allocation/kubeletplugin"
	"k8s.io/klog/v2"
	cdispec "tags.cncf.io/container-device-interface/specs-go"
)

// The crash-consistency harness. The test binary runs itself as a driver
// process (crashChild) that makes one kubelet call against a state
// directory and is killed with SIGKILL when it reaches a chosen durable
// step, exactly as the kernel ends a plugin that crashes or is OOM-killed:
// no deferred function runs, no lock is released but by the kernel. The
// test then starts a fresh process on the same directory and repeats the
// call, as the kubelet does for a call it got no answer for, and compares
// everything on disk and the answer with a run that never crashed.

const (
	crashChildEnv = "LIKEN_DRA_CRASH_CHILD" // the state directory; set only in the child
	crashOpEnv    = "LIKEN_DRA_CRASH_OP"    // prepare or unprepare
	crashAtEnv    = "LIKEN_DRA_CRASH_AT"    // step[#occurrence]; empty runs to the end
	crashUID      = "0d1e4f00-6a7b-4c2d-9e8f-1a2b3c4d5e6f"
)

func TestMain(m *testing.M) {
	if dir := os.Getenv(crashChildEnv); dir != "" {
		os.Exit(crashChild(dir, os.Getenv(crashOpEnv), os.Getenv(crashAtEnv)))
	}
	os.Exit(m.Run())
}

// crashClaim is the claim every run prepares: two devices, so that the
// step between the two operator calls is a crash point too.
func crashClaim() *resourceapi.ResourceClaim {
	return claim(crashUID, "pad", []resourceapi.DeviceRequestAllocationResult{
		alloc("pad", testDriver, "dev-a"), alloc("pad", testDriver, "dev-b"),
	})
}

// crashAnswer is what the child prints of the kubelet call's answer.
type crashAnswer struct {
	Err     string   `json:"err,omitempty"`
	Devices []string `json:"devices,omitempty"` // CDI device IDs
}

func crashChild(dir, op, at string) int {
	ctx := klog.NewContext(context.Background(), klog.Background())
	if at != "" {
		step, nth := at, 1
		if i := strings.IndexByte(at, '#'); i >= 0 {
			step = at[:i]
			fmt.Sscan(at[i+1:], &nth)
		}
		seen := 0
		stepHook = func(s string) {
			if s == step {
				if seen++; seen == nth {
					_ = syscall.Kill(os.Getpid(), syscall.SIGKILL)
					select {} // the signal is on its way
				}
			}
		}
	}
	c := crashClaim()
	opts := Options{
		DriverName: testDriver, NodeName: "node-1", KubeClient: fake.NewClientset(c), CDIClass: "dev",
		RegistrarDir: filepath.Join(dir, "registry"), PluginDir: filepath.Join(dir, "plugin"),
		CDIDir: filepath.Join(dir, "cdi"), BootIDPath: filepath.Join(dir, "boot_id"),
	}
	prepare := func(_ context.Context, req DeviceRequest[testParams]) (ContainerEdits, error) {
		return ContainerEdits{
			Env:         []string{"DEVICE=" + req.Result.Device},
			DeviceNodes: []*cdispec.DeviceNode{{Path: "/dev/input/" + req.Result.Device}},
		}, nil
	}
	d, err := Start(ctx, opts, prepare)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	var answer crashAnswer
	switch op {
	case "prepare":
		res, err := d.PrepareResourceClaims(ctx, []*resourceapi.ResourceClaim{c})
		if err != nil {
			answer.Err = err.Error()
		} else if r := res[c.UID]; r.Err != nil {
			answer.Err = r.Err.Error()
		} else {
			for _, dev := range r.Devices {
				answer.Devices = append(answer.Devices, dev.CDIDeviceIDs...)
			}
		}
	case "unprepare":
		ref := kubeletplugin.NamespacedObject{UID: c.UID, NamespacedName: types.NamespacedName{Namespace: c.Namespace, Name: c.Name}}
		res, err := d.UnprepareResourceClaims(ctx, []kubeletplugin.NamespacedObject{ref})
		if err == nil {
			err = res[c.UID]
		}
		if err != nil {
			answer.Err = err.Error()
		}
	case "none":
	default:
		fmt.Fprintf(os.Stderr, "unknown op %q\n", op)
		return 2
	}
	d.Stop()
	if err := json.NewEncoder(os.Stdout).Encode(answer); err != nil {
		return 2
	}
	return 0
}

// runCrashChild runs one child process. crashAt empty: it must finish
// and answer. Otherwise it must die of SIGKILL at that step, which also
// proves the step is reached on this path.
func runCrashChild(t *testing.T, dir, op, crashAt string) crashAnswer {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), crashChildEnv+"="+dir, crashOpEnv+"="+op, crashAtEnv+"="+crashAt)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	if crashAt != "" {
		var exit *exec.ExitError
		if !errors.As(err, &exit) || exit.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
			t.Fatalf("%s with a crash at %s: the process did not die there (%v)\n%s", op, crashAt, err, stderr.String())
		}
		return crashAnswer{}
	}
	if err != nil {
		t.Fatalf("%s: %v\n%s", op, err, stderr.String())
	}
	var a crashAnswer
	if err := json.Unmarshal(stdout.Bytes(), &a); err != nil {
		t.Fatalf("%s: answer %q: %v", op, stdout.String(), err)
	}
	return a
}

// crashState is what a state directory holds that matters: every CDI file
// with its content, the checkpoint's claims without their timestamps, and
// the names of every other file in the plugin directory (sockets aside).
type crashState struct {
	CDI         map[string]string
	Claims      map[types.UID]claimRecord
	PluginFiles []string
}

func readCrashState(t *testing.T, dir string) crashState {
	t.Helper()
	s := crashState{CDI: map[string]string{}, Claims: map[types.UID]claimRecord{}}
	entries, err := os.ReadDir(filepath.Join(dir, "cdi"))
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		t.Fatal(err)
	}
	for _, e := range entries {
		data, err := os.ReadFile(filepath.Join(dir, "cdi", e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		s.CDI[e.Name()] = string(data)
	}
	cp, err := loadCheckpoint(filepath.Join(dir, "plugin", CheckpointFile))
	if err != nil {
		t.Fatalf("checkpoint after the run: %v", err)
	}
	for uid, rec := range cp.body.Claims {
		r := *rec
		r.Updated = time.Time{} // differs between runs
		s.Claims[uid] = r
	}
	entries, err = os.ReadDir(filepath.Join(dir, "plugin"))
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if e.Type()&os.ModeSocket == 0 {
			s.PluginFiles = append(s.PluginFiles, e.Name())
		}
	}
	sort.Strings(s.PluginFiles)
	return s
}

// newCrashDir makes a state directory with a short path: the plugin's
// sockets live in it, and a socket path must fit in sockaddr_un (108
// bytes), which the subtest names in t.TempDir's paths would overrun.
func newCrashDir(t *testing.T) string {
	dir, err := os.MkdirTemp("", "dracrash")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.WriteFile(filepath.Join(dir, "boot_id"), []byte("boot-1\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return dir
}

func TestCrashAtEveryStepOfPrepareAndUnprepare(t *testing.T) {
	// What an uninterrupted run leaves: after prepare, and after prepare
	// then unprepare.
	clean := newCrashDir(t)
	wantPrepared := runCrashChild(t, clean, "prepare", "")
	if wantPrepared.Err != "" || len(wantPrepared.Devices) != 2 {
		t.Fatalf("uninterrupted prepare answered %+v, want two devices", wantPrepared)
	}
	statePrepared := readCrashState(t, clean)
	if len(statePrepared.CDI) != 1 || statePrepared.Claims[crashUID].Phase != phaseCompleted {
		t.Fatalf("uninterrupted prepare left %+v, want one spec and a completed record", statePrepared)
	}
	if a := runCrashChild(t, clean, "unprepare", ""); a.Err != "" {
		t.Fatalf("uninterrupted unprepare: %s", a.Err)
	}
	stateUnprepared := readCrashState(t, clean)
	if len(stateUnprepared.CDI) != 0 || len(stateUnprepared.Claims) != 0 {
		t.Fatalf("uninterrupted unprepare left %+v", stateUnprepared)
	}

	// Each checkpoint write in a prepare (started, then completed) and in
	// an unprepare (the removal) is a crash point of its own.
	prepareSteps := []string{
		stepCheckpointTempSynced + "#1", stepCheckpointRenamed + "#1", stepPrepareRecordedStarted,
		stepPrepareDevicePrepared + "#1", stepPrepareDevicePrepared + "#2", stepPrepareSpecWritten,
		stepCheckpointTempSynced + "#2", stepCheckpointRenamed + "#2", stepPrepareRecordedCompleted,
	}
	for _, at := range prepareSteps {
		t.Run("prepare/"+at, func(t *testing.T) {
			t.Parallel()
			dir := newCrashDir(t)
			runCrashChild(t, dir, "prepare", at)
			got := runCrashChild(t, dir, "prepare", "")
			if diff := cmp.Diff(wantPrepared, got); diff != "" {
				t.Errorf("repeated prepare after a crash answered differently (-uninterrupted +after crash):\n%s", diff)
			}
			if diff := cmp.Diff(statePrepared, readCrashState(t, dir)); diff != "" {
				t.Errorf("state after a crash and the repeated prepare differs (-uninterrupted +after crash):\n%s", diff)
			}
			// And the claim unprepares as if nothing had happened.
			if a := runCrashChild(t, dir, "unprepare", ""); a.Err != "" {
				t.Fatal(a.Err)
			}
			if diff := cmp.Diff(stateUnprepared, readCrashState(t, dir)); diff != "" {
				t.Errorf("state after unprepare differs (-uninterrupted +after crash):\n%s", diff)
			}
		})
	}
	unprepareSteps := []string{stepUnprepareSpecRemoved, stepCheckpointTempSynced, stepCheckpointRenamed, stepUnprepareRecordRemoved}
	for _, at := range unprepareSteps {
		t.Run("unprepare/"+at, func(t *testing.T) {
			t.Parallel()
			dir := newCrashDir(t)
			runCrashChild(t, dir, "prepare", "")
			runCrashChild(t, dir, "unprepare", at)
			if a := runCrashChild(t, dir, "unprepare", ""); a.Err != "" {
				t.Fatalf("repeated unprepare after a crash: %s", a.Err)
			}
			if diff := cmp.Diff(stateUnprepared, readCrashState(t, dir)); diff != "" {
				t.Errorf("state after a crash and the repeated unprepare differs (-uninterrupted +after crash):\n%s", diff)
			}
		})
	}
	// A crash whose call the kubelet never repeats (the pod went away
	// meanwhile) is cleaned up by the next start's repair, or by unprepare.
	t.Run("prepare/abandoned-then-unprepared", func(t *testing.T) {
		t.Parallel()
		dir := newCrashDir(t)
		runCrashChild(t, dir, "prepare", stepPrepareSpecWritten)
		runCrashChild(t, dir, "none", "")
		if a := runCrashChild(t, dir, "unprepare", ""); a.Err != "" {
			t.Fatal(a.Err)
		}
		if diff := cmp.Diff(stateUnprepared, readCrashState(t, dir)); diff != "" {
			t.Errorf("state differs (-uninterrupted +after crash):\n%s", diff)
		}
	})
}
