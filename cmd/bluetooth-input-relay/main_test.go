// SPDX-License-Identifier: Apache-2.0

package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A state directory that is missing is made; one that cannot be (under a
// file) or is not writable is refused at start, naming it, rather than at
// the first claim; no probe file is left behind.
func TestCheckStateDir(t *testing.T) {
	root := t.TempDir()
	if err := checkStateDir(""); err != nil {
		t.Errorf("no state: %v", err)
	}
	missing := filepath.Join(root, "relay", "state.json")
	if err := checkStateDir(missing); err != nil {
		t.Errorf("a missing directory: %v", err)
	}
	if entries, _ := os.ReadDir(filepath.Dir(missing)); len(entries) != 0 {
		t.Errorf("left %v behind", entries)
	}
	file := filepath.Join(root, "file")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	under := filepath.Join(file, "state.json")
	if err := checkStateDir(under); err == nil || !strings.Contains(err.Error(), file) {
		t.Errorf("a directory under a file: %v, want an error naming %s", err, file)
	}
	if os.Geteuid() != 0 {
		locked := filepath.Join(root, "locked")
		if err := os.Mkdir(locked, 0o500); err != nil {
			t.Fatal(err)
		}
		if err := checkStateDir(filepath.Join(locked, "state.json")); err == nil || !strings.Contains(err.Error(), "cannot be written") {
			t.Errorf("a read-only directory: %v", err)
		}
	}
}
