// SPDX-License-Identifier: Apache-2.0

package main

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/liken-sh/operators/internal/bonds"
	"github.com/liken-sh/operators/test/fixtures"
)

// childEnv tells a re-executed test binary that it is the contained
// bondfetch of TestAsThePodRunsIt, and where its volume is.
const childEnv = "BONDFETCH_TEST_CHILD"

// TestAsThePodRunsIt runs the restore under deploy/bluetooth/operator.yaml's security context:
// uid 0 with every capability dropped (so root obeys file modes, having no
// CAP_DAC_OVERRIDE or CAP_FOWNER), no new privileges, and a read-only root
// filesystem with only the bonds volume writable. The test binary re-runs
// itself in a private mount namespace (unshare) where / is remounted
// read-only and the volume is bind-mounted writable, then drops every
// capability (setpriv) before calling run. Any write outside the volume
// would fail with EROFS and make run exit 1.
//
// The API side is a fake clientset here: the real API server is proven by
// TestRestore, and this test is about the filesystem and privileges.
func TestAsThePodRunsIt(t *testing.T) {
	if vol := os.Getenv(childEnv); vol != "" {
		contained(t, vol)
		return
	}
	if os.Geteuid() != 0 {
		t.Fatal("this test builds the container's mounts and needs root, as deploy/bluetooth/operator.yaml's bondfetch runs as uid 0")
	}
	for _, tool := range []string{"unshare", "setpriv", "mount"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Fatalf("%s (util-linux) is needed: %v", tool, err)
		}
	}
	n := newNode(t)
	base := t.TempDir()
	vol := filepath.Join(base, "bluetooth")
	if err := os.Mkdir(vol, 0o777); err != nil { // an emptyDir's mode
		t.Fatal(err)
	}
	// Kept from an earlier run with modes BlueZ never gives: repaired
	// with no capability, since root owns them.
	kept := filepath.Join(vol, claimed.String(), pad.String())
	if err := os.MkdirAll(kept, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(kept, "info"), fixtures.BlueZ(t, "8bitdo-nes30-pro.info"), 0o644); err != nil {
		t.Fatal(err)
	}
	for p, mode := range map[string]os.FileMode{filepath.Dir(kept): 0o755, kept: 0o755, filepath.Join(kept, "info"): 0o644} {
		if err := os.Chmod(p, mode); err != nil { // past the umask
			t.Fatal(err)
		}
	}
	script := `mount --make-rprivate / && mount --bind "$VOL" "$VOL" && mount -o remount,bind,ro / &&
exec setpriv --inh-caps=-all --ambient-caps=-all --bounding-set=-all --no-new-privs -- "$0" -test.run '^TestAsThePodRunsIt$' -test.v`
	cmd := exec.Command("unshare", "--mount", "--", "sh", "-c", script, os.Args[0])
	cmd.Env = append(os.Environ(), "VOL="+vol, childEnv+"="+vol, "SYSFS="+n.sysfs, "DEV="+n.dev)
	out, err := cmd.CombinedOutput()
	t.Logf("contained run:\n%s", out)
	if err != nil {
		t.Fatalf("contained run: %v", err)
	}
	if !strings.Contains(string(out), "--- PASS: TestAsThePodRunsIt") {
		t.Fatal("the contained test did not pass")
	}

	if !strings.Contains(string(out), "repaired "+filepath.Join(kept, "info")+": mode 0644, now 0600") {
		t.Error("the contained run did not log the repair of the kept info's mode")
	}
	// What it left: root-owned, BlueZ's modes, the fixtures' bytes.
	a := claimed.String()
	for rel, want := range map[string]struct {
		mode os.FileMode
		data []byte
	}{
		a:                                  {os.ModeDir | 0o700, nil},
		a + "/" + pad.String():             {os.ModeDir | 0o700, nil},
		a + "/" + pad.String() + "/info":   {0o600, fixtures.BlueZ(t, "8bitdo-nes30-pro.info")},
		a + "/cache":                       {os.ModeDir | 0o700, nil},
		a + "/cache/" + pad.String():       {0o600, fixtures.BlueZ(t, "8bitdo-nes30-pro.cache")},
		a + "/" + mouse.String():           {os.ModeDir | 0o700, nil},
		a + "/" + mouse.String() + "/info": {0o600, fixtures.BlueZ(t, "razer-basilisk-x-hyperspeed.info")},
	} {
		path := filepath.Join(vol, rel)
		st, err := os.Lstat(path)
		if err != nil {
			t.Errorf("%s: %v", rel, err)
			continue
		}
		if st.Mode() != want.mode || st.Sys().(*syscall.Stat_t).Uid != 0 || st.Sys().(*syscall.Stat_t).Gid != 0 {
			t.Errorf("%s: mode %v uid %d, want %v owned by root", rel, st.Mode(), st.Sys().(*syscall.Stat_t).Uid, want.mode)
		}
		if want.data != nil {
			if b, _ := os.ReadFile(path); !bytes.Equal(b, want.data) {
				t.Errorf("%s: contents differ", rel)
			}
		}
	}
}

// contained is the child side: check the confinement is real, then
// restore into vol.
func contained(t *testing.T, vol string) {
	status, err := os.ReadFile("/proc/self/status")
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(status), "\n") {
		if strings.HasPrefix(line, "CapEff:") || strings.HasPrefix(line, "CapPrm:") || strings.HasPrefix(line, "CapBnd:") {
			if strings.Trim(strings.TrimSpace(line[7:]), "0") != "" {
				t.Fatalf("not confined: %s", line)
			}
		}
	}
	if err := os.WriteFile("/probe-bondfetch", nil, 0o600); err == nil || !strings.Contains(err.Error(), "read-only") {
		os.Remove("/probe-bondfetch")
		t.Fatalf("the root filesystem is writable: %v", err)
	}
	var st unix.Statfs_t
	if err := unix.Statfs(vol, &st); err != nil || st.Flags&unix.ST_RDONLY != 0 {
		t.Fatalf("the volume is not writable: %v", err)
	}

	padInfo, padCache, mouseInfo := fixtures.BlueZ(t, "8bitdo-nes30-pro.info"), fixtures.BlueZ(t, "8bitdo-nes30-pro.cache"), fixtures.BlueZ(t, "razer-basilisk-x-hyperspeed.info")
	label := map[string]string{bonds.AdapterLabel: claimed.Key()}
	client := fake.NewClientset(
		bonds.EncodeSecret("ns", bonds.Bond{Adapter: claimed, Device: pad, Info: padInfo, Cache: padCache}),
		bonds.EncodeSecret("ns", bonds.Bond{Adapter: claimed, Device: mouse, Info: mouseInfo}),
		&corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Name: "hostile", Namespace: "ns", Labels: label},
			Data:       map[string][]byte{"etc-shadow.info": padInfo, "aa-bb-cc-dd-ee-01.info": []byte("x")},
		},
	)
	n := node{sysfs: os.Getenv("SYSFS"), dev: os.Getenv("DEV"), kernel: newKernel()}
	var stderr bytes.Buffer
	w := n.world(nil)
	w.newClient = func(_, ns string) (bonds.SecretLister, error) { return client.CoreV1().Secrets(ns), nil }
	code := run(context.Background(), n.args(vol), env(map[string]string{"POD_NAMESPACE": "ns"}), &stderr, w)
	t.Logf("stderr:\n%s", stderr.String())
	if code != 0 {
		t.Fatalf("exit %d", code)
	}
}
