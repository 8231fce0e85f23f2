// SPDX-License-Identifier: Apache-2.0

package harness

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"sigs.k8s.io/yaml"
)

// crdResource is where CustomResourceDefinitions are served.
var crdResource = schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}

// ApplyCRDs creates every CustomResourceDefinition in the *.yaml files of
// dir (relative to the module root unless absolute), such as
// deploy/audio/crds, and waits until the API server serves each. One that
// exists already is left as it is. The dynamic client stands in for the
// apiextensions clientset, which nothing else here needs.
func (c *Cluster) ApplyCRDs(ctx context.Context, dir string) error {
	if !filepath.IsAbs(dir) {
		root, err := ModuleRoot()
		if err != nil {
			return err
		}
		dir = filepath.Join(root, dir)
	}
	files, err := filepath.Glob(filepath.Join(dir, "*.yaml"))
	if err != nil || len(files) == 0 {
		return fmt.Errorf("harness: no CRD files in %s (%v)", dir, err)
	}
	sort.Strings(files)
	client, err := dynamic.NewForConfig(c.restConfig)
	if err != nil {
		return err
	}
	crds := client.Resource(crdResource)
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			return fmt.Errorf("harness: %w", err)
		}
		var obj map[string]any
		if err := yaml.Unmarshal(data, &obj); err != nil {
			return fmt.Errorf("harness: %s: %w", f, err)
		}
		u := &unstructured.Unstructured{Object: obj}
		if _, err := crds.Create(ctx, u, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("harness: CRD %s: %w", u.GetName(), err)
		}
		name := u.GetName()
		err = c.poll(ctx, "CRD "+name+" established", func(ctx context.Context) (bool, string, error) {
			got, err := crds.Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return false, err.Error(), nil
			}
			conds, _, _ := unstructured.NestedSlice(got.Object, "status", "conditions")
			for _, cond := range conds {
				if m, ok := cond.(map[string]any); ok && m["type"] == "Established" && m["status"] == "True" {
					return true, "", nil
				}
			}
			return false, "not established", nil
		})
		if err != nil {
			return err
		}
	}
	return nil
}
