// SPDX-License-Identifier: Apache-2.0

package harness_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/liken-sh/operators/test/e2e/harness"
)

// TestComponentFailureShowsLog proves that a component that dies at start
// is named in the error together with the end of its log.
func TestComponentFailureShowsLog(t *testing.T) {
	bin := t.TempDir()
	for _, name := range []string{"etcd", "kube-apiserver", "kube-scheduler", "kube-controller-manager"} {
		script := "#!/bin/sh\necho \"" + name + " cannot start: no disk\" >&2\nexit 3\n"
		if err := os.WriteFile(filepath.Join(bin, name), []byte(script), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	_, err := harness.Start(t.Context(), harness.Options{BinDir: bin, Dir: t.TempDir()})
	var ce *harness.ComponentError
	if !errors.As(err, &ce) {
		t.Fatalf("Start: %v, want a *ComponentError", err)
	}
	if ce.Component != "etcd" || !strings.Contains(err.Error(), "etcd cannot start: no disk") {
		t.Errorf("error names %q and reads:\n%v", ce.Component, err)
	}
}
