// SPDX-License-Identifier: Apache-2.0

package main

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
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
