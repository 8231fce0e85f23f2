// SPDX-License-Identifier: Apache-2.0

package bluetoothcli

import (
	"fmt"
	"time"

	"github.com/spf13/cobra"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation"

	btv1 "github.com/liken-sh/operators/api/bluetooth/v1alpha1"
)

func newUnpair(e *env) *cobra.Command {
	var timeout time.Duration
	cmd := &cobra.Command{
		Use:   "unpair PERIPHERAL",
		Short: "Unpair a device: delete its Peripheral and wait until the operator removed the bond",
		Long: "Deletes the Peripheral. The operator disconnects the device, waits while a pod's claim holds it,\n" +
			"takes it out of the ResourceSlice, removes the bond from BlueZ, and then the bond's Secret goes.",
		Args: cobra.ExactArgs(1),
		ValidArgsFunction: func(cmd *cobra.Command, args []string, _ string) ([]string, cobra.ShellCompDirective) {
			d, _, err := e.client()
			if err != nil || len(args) > 0 {
				return nil, cobra.ShellCompDirectiveNoFileComp
			}
			l, err := d.Resource(btv1.PeripheralsResource).List(cmd.Context(), metav1.ListOptions{})
			if err != nil {
				return nil, cobra.ShellCompDirectiveNoFileComp
			}
			var names []string
			for _, i := range l.Items {
				names = append(names, i.GetName())
			}
			return names, cobra.ShellCompDirectiveNoFileComp
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			d, _, err := e.client()
			if err != nil {
				return err
			}
			ctx := cmd.Context()
			name := args[0]
			if errs := validation.IsDNS1123Subdomain(name); len(errs) > 0 {
				return fmt.Errorf("%s is not a Peripheral name: %s", quote(name), errs[0])
			}
			res := d.Resource(btv1.PeripheralsResource)
			if err := res.Delete(ctx, name, metav1.DeleteOptions{}); err != nil {
				return fmt.Errorf("deleting Peripheral %s: %w", name, err)
			}
			fmt.Fprintf(e.streams.Out, "peripheral %s: unpairing\n", name)
			deadline := time.Now().Add(timeout)
			last := ""
			for time.Now().Before(deadline) {
				u, err := res.Get(ctx, name, metav1.GetOptions{})
				if apierrors.IsNotFound(err) {
					fmt.Fprintf(e.streams.Out, "peripheral %s: unpaired\n", name)
					return nil
				}
				if err != nil {
					return err
				}
				var p btv1.Peripheral
				if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &p); err == nil {
					if c := meta.FindStatusCondition(p.Status.Conditions, btv1.ConditionReady); c != nil && c.Reason == btv1.ReasonUnpairing && c.Message != last {
						last = c.Message
						fmt.Fprintf(e.streams.Out, "peripheral %s: %s\n", name, c.Message)
					}
				}
				select {
				case <-ctx.Done():
					return ctx.Err()
				case <-time.After(time.Second):
				}
			}
			return fmt.Errorf("peripheral %s is still being unpaired after %v (last: %s); the operator finishes on its own", name, timeout, last)
		},
	}
	cmd.Flags().DurationVar(&timeout, "timeout", 5*time.Minute, "how long to wait for the unpair")
	return cmd
}
