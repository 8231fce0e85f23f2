// SPDX-License-Identifier: Apache-2.0

package bluetoothcli

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/dynamic"

	btv1 "github.com/liken-sh/operators/api/bluetooth/v1alpha1"
)

// checkAdapterNode is pair's check when both --adapter and --node are
// given: the Adapter named adapter (its object name) must report
// status.node equal to node. The error names what is wrong: no such
// Adapter, one on another node or on none, or a caller who may not read
// the Adapter (then --node cannot be checked and must be left out).
func checkAdapterNode(ctx context.Context, d dynamic.Interface, adapter, node string) error {
	u, err := d.Resource(btv1.AdaptersResource).Get(ctx, adapter, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		return fmt.Errorf("--adapter %s: there is no such Adapter (kubectl liken bluetooth list shows them)", adapter)
	case apierrors.IsForbidden(err):
		return fmt.Errorf("you may not read Adapter %s, so --node %s cannot be checked: leave out --node, or ask for the bluetooth-viewer role: %w", adapter, quote(node), err)
	case err != nil:
		return fmt.Errorf("reading Adapter %s to check --node: %w", adapter, err)
	}
	var a btv1.Adapter
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &a); err != nil {
		return fmt.Errorf("reading Adapter %s: %w", adapter, err)
	}
	switch a.Status.Node {
	case node:
		return nil
	case "":
		return fmt.Errorf("--adapter %s is on no node now, not on --node %s", adapter, quote(node))
	}
	return fmt.Errorf("--adapter %s is on node %s, not on --node %s: give the one or the other, or both that agree", adapter, a.Status.Node, quote(node))
}
