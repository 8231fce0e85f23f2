// SPDX-License-Identifier: Apache-2.0

package bluetoothcli

import (
	"context"
	"fmt"
	"io"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/dynamic"

	btv1 "github.com/liken-sh/operators/api/bluetooth/v1alpha1"
	"github.com/liken-sh/operators/internal/bdaddr"
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

// checkNotPaired is pair's check of --device before a window opens: a
// device whose Peripheral says BlueZ holds its bond is already paired,
// and a new request would not replace that bond (on the bond's adapter
// the operator ends it at once, Paired with reason AlreadyPaired), so it
// is refused, with how to pair it anew: unpair first. A Peripheral whose bond
// is not held (BlueZ lost it) is no refusal: pairing makes a new bond, and
// a line on progress says so. A caller who may not read Peripherals is
// not stopped; the outcome then says whether the device was paired
// already.
func checkNotPaired(ctx context.Context, d dynamic.Interface, progress io.Writer, device bdaddr.Address) error {
	u, err := d.Resource(btv1.PeripheralsResource).Get(ctx, device.Key(), metav1.GetOptions{})
	if err != nil {
		// NotFound: never paired. Forbidden or unreachable: the request
		// itself will tell.
		return nil
	}
	var p btv1.Peripheral
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &p); err != nil {
		return nil
	}
	if p.Status.Bond == nil || !p.Status.Bond.Held {
		fmt.Fprintf(progress, "peripheral %s exists but BlueZ holds no bond for %s now; pairing makes a new one\n", p.Name, device)
		return nil
	}
	where := ""
	if p.Status.Adapter != "" {
		where = " with adapter " + p.Status.Adapter
		if p.Status.Node != "" {
			where += " on node " + p.Status.Node
		}
	}
	return fmt.Errorf("%s is already paired%s (peripheral %s): a new window would not replace that bond; "+
		"to pair it anew (the device forgot its keys, or it should move to another adapter), unpair it first: kubectl liken bluetooth unpair %s",
		device, where, p.Name, p.Name)
}
