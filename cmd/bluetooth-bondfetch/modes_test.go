// SPDX-License-Identifier: Apache-2.0

package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/liken-sh/operators/internal/bonds"
	"github.com/liken-sh/operators/test/fixtures"
)

// TestTreeModesRepairedOwnerRefused: a tree kept from an earlier run in
// the same pod (or copied in by hand) with modes BlueZ never gives, one
// its keys leak through and one it cannot write, is set back to 0700
// directories and 0600 files before bluetoothd starts, each repair
// logged; an entry of another owner, or a symbolic link, which bondfetch
// cannot repair, stops it with a line naming the path and the way out.
func TestTreeModesRepairedOwnerRefused(t *testing.T) {
	ctx := context.Background()
	const ns = "modes"
	client := namespaceWithReader(t, ctx, ns)
	padInfo, padCache := fixtures.BlueZ(t, "8bitdo-nes30-pro.info"), fixtures.BlueZ(t, "8bitdo-nes30-pro.cache")
	create(t, ctx, bonds.EncodeSecret(ns, bonds.Bond{Adapter: claimed, Device: pad, Info: padInfo, Cache: padCache}))

	n := newNode(t)
	root := filepath.Join(t.TempDir(), "bluetooth")
	a := filepath.Join(root, claimed.String())
	padDir := filepath.Join(a, pad.String())
	for _, step := range []struct {
		path string
		mode os.FileMode
		data []byte // nil: a directory
	}{
		{root, 0o777, nil},
		{a, 0o755, nil},
		{padDir, 0o777, nil},
		{filepath.Join(padDir, "info"), 0o644, padInfo},
		{filepath.Join(a, "settings"), 0o644, []byte("[General]\nDiscoverableTimeout=0\n")},
		{filepath.Join(a, "cache"), 0o750 | os.ModeSetgid, nil},
		{filepath.Join(a, "cache", pad.String()), 0o400, padCache},
	} {
		var err error
		if step.data == nil {
			err = os.Mkdir(step.path, step.mode)
		} else {
			err = os.WriteFile(step.path, step.data, step.mode)
		}
		if err == nil {
			err = os.Chmod(step.path, step.mode) // past the umask
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	var stderr bytes.Buffer
	if code := run(ctx, n.args(root), env(map[string]string{"POD_NAMESPACE": ns}), &stderr, n.world(client)); code != 0 {
		t.Fatalf("exit %d:\n%s", code, stderr.String())
	}
	log := stderr.String()
	t.Logf("stderr:\n%s", log)
	for path, want := range map[string]string{
		a:                                       "mode 0755, now 0700",
		padDir:                                  "mode 0777, now 0700",
		filepath.Join(padDir, "info"):           "mode 0644, now 0600",
		filepath.Join(a, "settings"):            "mode 0644, now 0600",
		filepath.Join(a, "cache"):               "mode 02750, now 0700",
		filepath.Join(a, "cache", pad.String()): "mode 0400, now 0600",
	} {
		if line := "bondfetch: repaired " + path + ": " + want; !strings.Contains(log, line) {
			t.Errorf("stderr lacks %q", line)
		}
		st, err := os.Lstat(path)
		if err != nil {
			t.Fatal(err)
		}
		wantMode := os.FileMode(0o600)
		if st.IsDir() {
			wantMode = os.ModeDir | 0o700
		}
		if st.Mode() != wantMode {
			t.Errorf("%s: mode %v after the run, want %v", path, st.Mode(), wantMode)
		}
	}
	if b, _ := os.ReadFile(filepath.Join(padDir, "info")); !bytes.Equal(b, padInfo) {
		t.Error("the repair changed the info's bytes")
	}

	// Another owner: bondfetch has no CAP_CHOWN in its pod, so it stops.
	settings := filepath.Join(a, "settings")
	if err := os.Chown(settings, 1000, 1000); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("/etc/shadow", filepath.Join(a, "identity")); err != nil {
		t.Fatal(err)
	}
	stderr.Reset()
	code := run(ctx, n.args(root), env(map[string]string{"POD_NAMESPACE": ns}), &stderr, n.world(client))
	log = stderr.String()
	if code != 1 {
		t.Fatalf("exit %d with a file of another owner, want 1:\n%s", code, log)
	}
	for _, line := range []string{
		"bondfetch: tree: " + settings + " is owned by uid 1000, not 0: bluetoothd (root without CAP_DAC_OVERRIDE) cannot use it",
		"delete the pod so that its volume starts empty, or chown -R 0:0 the volume on the node",
		"bondfetch: tree: " + filepath.Join(a, "identity") + " is a symbolic link",
		"bondfetch: the tree of " + claimed.String() + " under " + root + " is not one bluetoothd can use",
	} {
		if !strings.Contains(log, line) {
			t.Errorf("stderr lacks %q:\n%s", line, log)
		}
	}
}
