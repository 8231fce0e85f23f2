// SPDX-License-Identifier: Apache-2.0

// Package examples_test applies every example to a real API server.
package examples_test

import (
	"context"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/liken-sh/operators/test/e2e/harness"
)

// TestExamplesApply installs the three bases for real (CRDs, DeviceClasses,
// RBAC, the DaemonSets, which run nowhere here), then applies each
// example with a server-side dry run: the API server validates every
// object, CEL selectors included, and stores nothing. Every DeviceClass an
// example names must be one the bases installed, which a dry run does not
// check, and every example must be in README.md.
func TestExamplesApply(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	c, err := harness.Start(ctx, harness.Options{Logf: t.Logf})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Stop()
	if err := c.ApplyCRDs(ctx, "deploy/audio/crds"); err != nil {
		t.Fatal(err)
	}
	if _, err := c.WaitForServiceAccount(ctx, "default", "default"); err != nil {
		t.Fatal(err)
	}
	for _, base := range []string{"deploy/inventory", "deploy/bluetooth", "deploy/audio"} {
		if out, err := c.Kubectl(ctx, "apply", "--server-side", "-k", base); err != nil {
			t.Fatalf("%s: %v\n%s", base, err, out)
		}
	}
	list, err := c.Client().ResourceV1().DeviceClasses().List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var classes []string
	for _, dc := range list.Items {
		classes = append(classes, dc.Name)
	}

	readme, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	dirs, err := os.ReadDir(".")
	if err != nil {
		t.Fatal(err)
	}
	className := regexp.MustCompile(`deviceClassName: (\S+)`)
	applied := 0
	for _, d := range dirs {
		if !d.IsDir() {
			if n := d.Name(); n != "README.md" && !strings.HasSuffix(n, "_test.go") {
				t.Errorf("%s is not in an example's directory, so no dry run applies it", n)
			}
			continue
		}
		name := d.Name()
		t.Run(name, func(t *testing.T) {
			if !strings.Contains(string(readme), "`"+name+"/`") {
				t.Errorf("README.md does not list %s/", name)
			}
			coveredByKustomization(t, name)
			rendered, err := c.Kubectl(ctx, "kustomize", filepath.Join("examples", name))
			if err != nil {
				t.Fatalf("%v\n%s", err, rendered)
			}
			for _, m := range className.FindAllStringSubmatch(rendered, -1) {
				if !slices.Contains(classes, m[1]) {
					t.Errorf("names DeviceClass %s, which no base installs (%v)", m[1], classes)
				}
			}
			out, err := c.Kubectl(ctx, "apply", "--dry-run=server", "-k", filepath.Join("examples", name))
			if err != nil {
				t.Fatalf("%v\n%s", err, out)
			}
			objects := strings.Count(rendered, "\n---\n") + 1
			if got := strings.Count(out, "(server dry run)"); got != objects {
				t.Errorf("dry run applied %d objects of %d:\n%s", got, objects, out)
			}
			applied++
		})
	}
	if applied < 5 {
		t.Errorf("%d examples applied, want every kind of device (5)", applied)
	}
	// Nothing was stored.
	claims, err := c.Client().ResourceV1().ResourceClaimTemplates("default").List(ctx, metav1.ListOptions{})
	if err != nil || len(claims.Items) != 0 {
		t.Errorf("the dry runs stored %d claim templates (%v)", len(claims.Items), err)
	}
}

// coveredByKustomization fails t for each file of the example directory
// dir that its kustomization.yaml does not name (as a resource or a
// generator's file), since kubectl apply -k, and so the dry run, would
// never see it.
func coveredByKustomization(t *testing.T, dir string) {
	t.Helper()
	k, err := os.ReadFile(filepath.Join(dir, "kustomization.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	named := regexp.MustCompile(`(?m)^\s*-\s+(\S+)\s*$`)
	var listed []string
	for _, m := range named.FindAllStringSubmatch(string(k), -1) {
		listed = append(listed, m[1])
	}
	files, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		if f.Name() != "kustomization.yaml" && !slices.Contains(listed, f.Name()) {
			t.Errorf("%s/%s is not named in its kustomization.yaml (%v), so no dry run applies it", dir, f.Name(), listed)
		}
	}
}
