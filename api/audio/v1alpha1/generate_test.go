// SPDX-License-Identifier: Apache-2.0

package v1alpha1_test

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// generated are the directories, relative to the module root, that
// hack/gen-api.sh writes, and the files in each that it owns: every API
// group's, since the script generates all of them in one run.
var generated = []struct {
	dir  string
	glob string
}{
	{"api/audio/v1alpha1", "zz_generated.*.go"},
	{"deploy/audio/crds", "*.yaml"},
	{"api/bluetooth/v1alpha1", "zz_generated.*.go"},
	{"deploy/bluetooth/crds", "*.yaml"},
}

// TestGeneratedCurrent runs hack/gen-api.sh into a temporary directory and
// requires the committed deep copies and CRDs to equal its output byte for
// byte, with no generated file missing and no stale one left over. The
// script fetches its pinned controller-gen from the module proxy on a
// machine that has never built it, so the first run takes a while.
func TestGeneratedCurrent(t *testing.T) {
	root, err := filepath.Abs(filepath.Join("..", "..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	if gomod, err := os.ReadFile(filepath.Join(root, "go.mod")); err != nil ||
		!strings.HasPrefix(string(gomod), "module github.com/liken-sh/operators\n") {
		t.Fatalf("%s is not the module root: %v", root, err)
	}
	out := t.TempDir()
	cmd := exec.CommandContext(t.Context(), "bash", filepath.Join(root, "hack", "gen-api.sh"), out)
	if log, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("hack/gen-api.sh: %v\n%s", err, log)
	}

	for _, g := range generated {
		want := names(t, filepath.Join(out, g.dir), g.glob)
		got := names(t, filepath.Join(root, g.dir), g.glob)
		if len(want) == 0 {
			t.Errorf("hack/gen-api.sh wrote nothing matching %s/%s", g.dir, g.glob)
		}
		if !slices.Equal(got, want) {
			t.Errorf("%s holds %v; hack/gen-api.sh writes %v", g.dir, got, want)
		}
		for _, name := range want {
			fresh, err := os.ReadFile(filepath.Join(out, g.dir, name))
			if err != nil {
				t.Fatal(err)
			}
			committed, err := os.ReadFile(filepath.Join(root, g.dir, name))
			if err != nil {
				t.Errorf("%s/%s: %v; run hack/gen-api.sh", g.dir, name, err)
				continue
			}
			if !bytes.Equal(committed, fresh) {
				t.Errorf("%s/%s is stale: %s; run hack/gen-api.sh and commit the result",
					g.dir, name, firstDifference(committed, fresh))
			}
		}
	}
}

// names lists the base names in dir that match glob, sorted.
func names(t *testing.T, dir, glob string) []string {
	t.Helper()
	paths, err := filepath.Glob(filepath.Join(dir, glob))
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, p := range paths {
		out = append(out, filepath.Base(p))
	}
	slices.Sort(out)
	return out
}

// firstDifference describes the first line where committed and fresh
// part.
func firstDifference(committed, fresh []byte) string {
	a := strings.Split(string(committed), "\n")
	b := strings.Split(string(fresh), "\n")
	for i := range max(len(a), len(b)) {
		if i >= len(a) || i >= len(b) || a[i] != b[i] {
			return fmt.Sprintf("line %d is %s, the generator writes %s", i+1, lineAt(a, i), lineAt(b, i))
		}
	}
	return "they differ"
}

// lineAt quotes lines[i], or says there is none.
func lineAt(lines []string, i int) string {
	if i >= len(lines) {
		return "past the end"
	}
	return fmt.Sprintf("%q", lines[i])
}
