// SPDX-License-Identifier: Apache-2.0

package cditest

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A device's environment and mounts reach the container; a device no
// spec names is refused, naming it.
func TestInject(t *testing.T) {
	dir := t.TempDir()
	spec := `{"cdiVersion":"0.6.0","kind":"example.com/sink","devices":[{"name":"one","containerEdits":{
  "env":["A=1","B=2"],"mounts":[{"hostPath":"/tmp/x","containerPath":"/run/x","options":["bind"]}]}}]}`
	if err := os.WriteFile(filepath.Join(dir, "example.json"), []byte(spec), 0o644); err != nil {
		t.Fatal(err)
	}
	got, err := Inject(dir, []string{"example.com/sink=one"})
	if err != nil {
		t.Fatal(err)
	}
	if v, n := Env(got.Process.Env, "B"); v != "2" || n != 1 {
		t.Errorf("B = %q set %d times in %v; want 2 once", v, n, got.Process.Env)
	}
	if len(got.Mounts) != 1 || got.Mounts[0].Destination != "/run/x" || got.Mounts[0].Source != "/tmp/x" {
		t.Errorf("mounts %+v", got.Mounts)
	}
	if _, err := Inject(dir, []string{"example.com/sink=two"}); err == nil || !strings.Contains(err.Error(), "example.com/sink=two") {
		t.Errorf("an unknown device: %v", err)
	}
	if v, n := Env([]string{"A=1", "AB=3", "A=4"}, "A"); v != "4" || n != 2 {
		t.Errorf("Env: %q, %d; want the last of two", v, n)
	}
}
