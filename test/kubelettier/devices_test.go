// SPDX-License-Identifier: Apache-2.0

package kubelettier

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// FreeNumber skips every path that exists, whatever it is, and says so
// when none is free.
func TestFreeNumber(t *testing.T) {
	dir := t.TempDir()
	for _, name := range []string{"event5", "event6", "event8"} {
		if err := os.WriteFile(filepath.Join(dir, name), nil, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink("nowhere", filepath.Join(dir, "event7")); err != nil {
		t.Fatal(err)
	}
	format := filepath.Join(dir, "event%d")
	if n, err := FreeNumber(format, 5, 31); err != nil || n != 9 {
		t.Errorf("FreeNumber = %d, %v; want 9 (5 to 8 exist, 7 as a dangling link)", n, err)
	}
	if n, err := FreeNumber(format, 2, 4); err != nil || n != 2 {
		t.Errorf("FreeNumber from 2 = %d, %v; want 2", n, err)
	}
	if _, err := FreeNumber(format, 5, 8); err == nil || !strings.Contains(err.Error(), format) {
		t.Errorf("FreeNumber with every path taken: %v, want an error naming %s", err, format)
	}
}
