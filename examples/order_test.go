// SPDX-License-Identifier: Apache-2.0

package examples_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"testing"
	"time"

	"github.com/liken-sh/operators/test/e2e/harness"
)

// TestExamplesApplyClaimsFirst: `kubectl apply -k` creates objects in the
// order kustomize renders them, so every example renders its claims,
// claim templates and ConfigMaps before the Pod or Job that names them;
// otherwise the pod is created first and the resource claim controller
// reports FailedResourceClaimCreation until the template arrives.
func TestExamplesApplyClaimsFirst(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	kubectl, err := harness.Kubectl(ctx, t.Logf)
	if err != nil {
		t.Fatal(err)
	}
	dirs, err := os.ReadDir(".")
	if err != nil {
		t.Fatal(err)
	}
	kind := regexp.MustCompile(`(?m)^kind: (\S+)$`)
	for _, d := range dirs {
		if !d.IsDir() {
			continue
		}
		out, err := exec.CommandContext(ctx, kubectl, "kustomize", filepath.Join(".", d.Name())).CombinedOutput()
		if err != nil {
			t.Fatalf("%s: %v\n%s", d.Name(), err, out)
		}
		workload := ""
		for _, m := range kind.FindAllStringSubmatch(string(out), -1) {
			switch m[1] {
			case "Pod", "Job", "Deployment", "DaemonSet", "StatefulSet":
				workload = m[1]
			case "ResourceClaim", "ResourceClaimTemplate", "ConfigMap":
				if workload != "" {
					t.Errorf("%s: the %s comes after the %s that names it", d.Name(), m[1], workload)
				}
			}
		}
	}
}
