// SPDX-License-Identifier: Apache-2.0

package main

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/liken-sh/operators/test/e2e/harness"
)

// TestAdmissionPolicyFiles fails when a YAML file under deploy/ holds a
// ValidatingAdmissionPolicy or its binding and the demo does not apply
// it, or when the demo names a file that holds none: the demo must refuse
// whatever a deployed cluster refuses.
func TestAdmissionPolicyFiles(t *testing.T) {
	root, err := harness.ModuleRoot()
	if err != nil {
		t.Fatal(err)
	}
	policy := regexp.MustCompile(`(?m)^kind:\s*ValidatingAdmissionPolicy(Binding)?\s*$`)
	var found []string
	err = filepath.WalkDir(filepath.Join(root, "deploy"), func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || (filepath.Ext(path) != ".yaml" && filepath.Ext(path) != ".yml") {
			return err
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		if policy.Match(data) {
			rel, err := filepath.Rel(root, path)
			if err != nil {
				return err
			}
			found = append(found, filepath.ToSlash(rel))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(found) == 0 {
		t.Fatal("no admission policy under deploy/: the walk looks in the wrong place")
	}
	for _, f := range found {
		if !slices.Contains(admissionPolicyFiles, f) {
			t.Errorf("%s holds an admission policy the demo does not apply: add it to admissionPolicyFiles", f)
		}
	}
	for _, f := range admissionPolicyFiles {
		if !slices.Contains(found, f) {
			t.Errorf("admissionPolicyFiles names %s, which holds no admission policy", f)
		}
	}
}

// The capture goes outside the work directory the demo removes: under
// $LIKEN_CACHE, else the user's cache directory, and the directory is
// there for it; the last line printed names that file.
func TestCaptureIsKept(t *testing.T) {
	cache := t.TempDir()
	t.Setenv("LIKEN_CACHE", cache)
	got, err := keptCapture()
	if want := filepath.Join(cache, "demo", "capture.wav"); err != nil || got != want {
		t.Fatalf("keptCapture with LIKEN_CACHE=%s: %q, %v; want %s", cache, got, err, want)
	}
	if fi, err := os.Stat(filepath.Dir(got)); err != nil || !fi.IsDir() {
		t.Errorf("keptCapture did not create %s: %v", filepath.Dir(got), err)
	}
	xdg := t.TempDir()
	t.Setenv("LIKEN_CACHE", "")
	t.Setenv("XDG_CACHE_HOME", xdg)
	if got, err := keptCapture(); err != nil || got != filepath.Join(xdg, "liken", "demo", "capture.wav") {
		t.Errorf("keptCapture with XDG_CACHE_HOME=%s: %q, %v; want it under liken/demo there", xdg, got, err)
	}
	note := endNote(got)
	lines := strings.Split(strings.TrimSuffix(note, "\n"), "\n")
	if last := lines[len(lines)-1]; !strings.HasSuffix(last, " "+got) || !strings.Contains(last, "kept") {
		t.Errorf("the demo's last line is %q; want it to say the capture %s is kept", last, got)
	}
}
