// SPDX-License-Identifier: Apache-2.0

package bluetoothcli

import (
	"cmp"
	"fmt"
	"slices"
	"text/tabwriter"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	btv1 "github.com/liken-sh/operators/api/bluetooth/v1alpha1"
)

func newList(e *env) *cobra.Command {
	return &cobra.Command{
		Use:   "list",
		Short: "List the adapters and the paired devices: connected, battery, claimed by",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			d, _, err := e.client()
			if err != nil {
				return err
			}
			ctx := cmd.Context()
			au, err := d.Resource(btv1.AdaptersResource).List(ctx, metav1.ListOptions{})
			if err != nil {
				return fmt.Errorf("listing Adapters: %w", err)
			}
			pu, err := d.Resource(btv1.PeripheralsResource).List(ctx, metav1.ListOptions{})
			if err != nil {
				return fmt.Errorf("listing Peripherals: %w", err)
			}
			var adapters btv1.AdapterList
			var peripherals btv1.PeripheralList
			if err := runtime.DefaultUnstructuredConverter.FromUnstructured(au.UnstructuredContent(), &adapters); err != nil {
				return err
			}
			if err := runtime.DefaultUnstructuredConverter.FromUnstructured(pu.UnstructuredContent(), &peripherals); err != nil {
				return err
			}
			w := tabwriter.NewWriter(e.streams.Out, 0, 4, 2, ' ', 0)
			fmt.Fprintln(w, "ADAPTER\tADDRESS\tNODE\tPOWERED\tPRESENT\tBONDS\tALIAS")
			slices.SortFunc(adapters.Items, func(a, b btv1.Adapter) int { return cmp.Compare(a.Name, b.Name) })
			for _, a := range adapters.Items {
				fmt.Fprintf(w, "%s\t%s\t%s\t%t\t%s\t%d\t%s\n", a.Name, a.Status.Address, a.Status.Node, a.Status.Powered,
					condStatus(a.Status.Conditions, btv1.ConditionPresent), a.Status.Bonds, a.Spec.Alias)
			}
			fmt.Fprintln(w)
			fmt.Fprintln(w, "PERIPHERAL\tNAME\tADAPTER\tNODE\tCONNECTED\tBATTERY\tCLAIMED BY")
			slices.SortFunc(peripherals.Items, func(a, b btv1.Peripheral) int { return cmp.Compare(a.Name, b.Name) })
			for _, p := range peripherals.Items {
				conn := "no"
				if c := meta.FindStatusCondition(p.Status.Conditions, btv1.ConditionConnected); c != nil {
					if c.Status == metav1.ConditionTrue {
						conn = "yes"
					} else {
						conn = "no (" + c.Reason + ")"
					}
				}
				battery := "-"
				if b := p.Status.Battery; b != nil && b.Percentage != nil {
					battery = fmt.Sprintf("%d%%", *b.Percentage)
					if b.Charging != nil && *b.Charging {
						battery += " charging"
					}
				}
				claim := "-"
				if c := p.Status.Claim; c != nil {
					claim = c.Namespace + "/" + c.Name
				}
				name := p.Status.Name
				if p.DeletionTimestamp != nil {
					name += " (unpairing)"
				}
				fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", p.Name, name, p.Status.Adapter, p.Status.Node, conn, battery, claim)
			}
			return w.Flush()
		},
	}
}

// condStatus is a condition's status, and its reason when it is not
// True ("False (NotServed)"); Unknown when there is none.
func condStatus(conds []metav1.Condition, typ string) string {
	c := meta.FindStatusCondition(conds, typ)
	switch {
	case c == nil:
		return "Unknown"
	case c.Status != metav1.ConditionTrue && c.Reason != "":
		return string(c.Status) + " (" + c.Reason + ")"
	}
	return string(c.Status)
}
