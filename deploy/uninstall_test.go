// SPDX-License-Identifier: Apache-2.0

package deploy_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	btv1 "github.com/liken-sh/operators/api/bluetooth/v1alpha1"
)

// uninstallBlocks returns the shell blocks of docs/install.md's Uninstall
// section: the one that keeps the bonds and the one that removes
// everything.
func uninstallBlocks(t *testing.T, root string) (keep, all string) {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(root, "docs", "install.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(data), "\n## Uninstall\n")
	if !ok {
		t.Fatal("docs/install.md has no Uninstall section")
	}
	if end := strings.Index(section, "\n## "); end >= 0 {
		section = section[:end]
	}
	var blocks []string
	for {
		_, rest, ok := strings.Cut(section, "```sh\n")
		if !ok {
			break
		}
		block, after, ok := strings.Cut(rest, "```")
		if !ok {
			t.Fatal("docs/install.md: an unterminated sh block in Uninstall")
		}
		blocks = append(blocks, block)
		section = after
	}
	if len(blocks) != 2 {
		t.Fatalf("docs/install.md's Uninstall has %d sh blocks, want 2 (keep the bonds; remove everything)", len(blocks))
	}
	return blocks[0], blocks[1]
}

// runDocs runs a block of the documentation as a reader would, from the
// repository's root, with kubectl on PATH talking to the test cluster.
// bin is a directory of its own for the kubectl link.
func (k *kube) runDocs(ctx context.Context, bin, root, block string) (string, error) {
	if err := os.Symlink(k.bin, filepath.Join(bin, "kubectl")); err != nil && !os.IsExist(err) {
		return "", err
	}
	ctx, cancel := context.WithTimeout(ctx, 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "sh", "-e", "-c", block)
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "PATH="+bin+":"+os.Getenv("PATH"), "KUBECONFIG="+k.kubeconfig)
	// A kubectl still holding the output when sh is killed is not waited
	// for long.
	cmd.WaitDelay = 5 * time.Second
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// checkUninstall runs docs/install.md's uninstall on the cluster the bases
// were applied to (and the inventory base, applied here): the first
// block leaves exactly the namespace, the CRDs, a bond Secret and the
// objects of the CRDs; the second removes those too.
func checkUninstall(t *testing.T, k *kube, root string) {
	ctx := t.Context()
	keep, all := uninstallBlocks(t, root)
	bin := t.TempDir()
	if _, err := k.run(ctx, nil, "apply", "--server-side", "-k", filepath.Join(root, "deploy", "inventory")); err != nil {
		t.Fatal(err)
	}
	// What a person's cluster holds: a bond, and an Adapter and a
	// Peripheral with the operators' finalizers.
	if _, err := k.run(ctx, nil, "-n", namespace, "create", "secret", "generic", "bond-test", "--from-literal=k=v"); err != nil {
		t.Fatal(err)
	}
	for _, o := range []struct{ kind, finalizer string }{{"Adapter", btv1.AdapterFinalizer}, {"Peripheral", btv1.PeripheralFinalizer}} {
		obj := fmt.Sprintf(`{"apiVersion":%q,"kind":%q,"metadata":{"name":"00-1a-7d-da-71-99","finalizers":[%q]}}`, btv1.GroupVersion.String(), o.kind, o.finalizer)
		if _, err := k.run(ctx, strings.NewReader(obj), "create", "-f", "-"); err != nil {
			t.Fatal(err)
		}
	}

	if out, err := k.runDocs(ctx, bin, root, keep); err != nil {
		t.Fatalf("the uninstall that keeps the bonds: %v\n%s", err, out)
	}
	for _, b := range []string{"audio", "bluetooth", "inventory"} {
		left := remaining(t, k, root, b)
		for _, name := range left {
			if !strings.HasPrefix(name, "namespace/") && !strings.HasPrefix(name, "customresourcedefinition") {
				t.Errorf("after the uninstall %s of deploy/%s remains", name, b)
			}
		}
		if len(left) == 0 {
			t.Errorf("the uninstall deleted the namespace and the CRDs of deploy/%s", b)
		}
	}
	for _, o := range [][]string{{"-n", namespace, "get", "secret", "bond-test"}, {"get", "adapter", "00-1a-7d-da-71-99"}, {"get", "peripheral", "00-1a-7d-da-71-99"}} {
		if _, err := k.run(ctx, nil, o...); err != nil {
			t.Errorf("the uninstall that keeps the bonds lost %s: %v", o[len(o)-1], err)
		}
	}

	// The nodes have no kubelet to confirm that the deleted DaemonSets'
	// pods stopped; without that the namespace would wait for them.
	if _, err := k.run(ctx, nil, "-n", namespace, "delete", "pods", "--all", "--force", "--grace-period=0"); err != nil {
		t.Fatal(err)
	}
	if out, err := k.runDocs(ctx, bin, root, all); err != nil {
		t.Fatalf("the uninstall that removes everything: %v\n%s", err, out)
	}
	// The namespace may still be Terminating while its controller
	// empties it.
	err := poll(ctx, 60*time.Second, func() (bool, string) {
		var left []string
		for _, b := range []string{"audio", "bluetooth", "inventory"} {
			for _, name := range remaining(t, k, root, b) {
				if name == "namespace/"+namespace {
					if ts, _ := k.run(ctx, nil, "get", name, "-o", "jsonpath={.metadata.deletionTimestamp}"); ts != "" {
						continue
					}
				}
				left = append(left, name)
			}
		}
		return len(left) == 0, strings.Join(left, ", ")
	})
	if err != nil {
		t.Errorf("after removing everything: %v", err)
	}
}

// remaining lists, as kubectl names them, the objects of a base that the
// cluster still holds.
func remaining(t *testing.T, k *kube, root, base string) []string {
	t.Helper()
	rendered, err := k.run(t.Context(), nil, "kustomize", filepath.Join(root, "deploy", base))
	if err != nil {
		t.Fatal(err)
	}
	out, err := k.run(t.Context(), strings.NewReader(rendered), "get", "-f", "-", "-o", "name", "--ignore-not-found")
	if err != nil {
		t.Fatal(err)
	}
	return strings.Fields(out)
}
