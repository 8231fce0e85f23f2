// SPDX-License-Identifier: Apache-2.0

package bluetoothcli

import (
	"fmt"
	"slices"
	"time"

	"github.com/spf13/cobra"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation"

	btv1 "github.com/liken-sh/operators/api/bluetooth/v1alpha1"
	"github.com/liken-sh/operators/internal/bdaddr"
)

func newUnpair(e *env) *cobra.Command {
	var timeout time.Duration
	var force bool
	cmd := &cobra.Command{
		Use:   "unpair PERIPHERAL|ADDRESS",
		Short: "Unpair a device: delete its Peripheral and wait until the operator removed the bond",
		Long: "Deletes the Peripheral. The operator disconnects the device, waits while a pod's claim holds it,\n" +
			"takes it out of the ResourceSlice, removes the bond from BlueZ, and then the bond's Secret goes.",
		Args: func(_ *cobra.Command, args []string) error {
			if len(args) != 1 {
				return fmt.Errorf("unpair takes one argument, the Peripheral's name or the device's address (e4-17-d8-c5-67-6d or E4:17:D8:C5:67:6D), not %d", len(args))
			}
			return nil
		},
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
			ctx := cmd.Context()
			if timeout <= 0 {
				// Checked before the delete: an unpair cannot be taken back.
				return fmt.Errorf("--timeout %v: want a positive duration (how long to wait for the operator to finish the unpair, e.g. 5m)", timeout)
			}
			name, err := peripheralName(args[0])
			if err != nil {
				return err
			}
			d, _, err := e.client()
			if err != nil {
				return err
			}
			res := d.Resource(btv1.PeripheralsResource)
			cur, err := res.Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return fmt.Errorf("reading Peripheral %s: %w", name, err)
			}
			if !slices.Contains(cur.GetFinalizers(), btv1.PeripheralFinalizer) {
				// Deleted without the operator's finalizer, the Peripheral
				// goes at once while BlueZ keeps the bond and its Secret
				// stays, and the operator restores both on its next start.
				secret := bondSecret(cur.Object)
				if !force {
					return fmt.Errorf("peripheral %s does not carry the operator's finalizer %s (is the bluetooth operator running?): "+
						"deleting it now would not unpair the device, and %s would restore the bond; start the operator and retry, or give --force to delete the Peripheral alone", name, btv1.PeripheralFinalizer, secret)
				}
				if err := res.Delete(ctx, name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: ptrUID(cur)}}); err != nil {
					return fmt.Errorf("deleting Peripheral %s: %w", name, err)
				}
				fmt.Fprintf(e.streams.Out, "peripheral %s: deleted, but not unpaired: BlueZ keeps the bond and %s remains; delete that Secret too to forget the device\n", name, secret)
				return nil
			}
			if err := res.Delete(ctx, name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: ptrUID(cur)}}); err != nil {
				return fmt.Errorf("deleting Peripheral %s: %w", name, err)
			}
			fmt.Fprintf(e.streams.Out, "peripheral %s: unpairing (Ctrl-C stops waiting; the unpair goes on)\n", name)
			deadline := time.Now().Add(timeout)
			last := ""
			for time.Now().Before(deadline) {
				u, err := res.Get(ctx, name, metav1.GetOptions{})
				if apierrors.IsNotFound(err) {
					fmt.Fprintf(e.streams.Out, "peripheral %s: unpaired\n", name)
					return nil
				}
				if ctx.Err() != nil {
					return stoppedWaiting(name, last)
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
					return stoppedWaiting(name, last)
				case <-time.After(time.Second):
				}
			}
			return fmt.Errorf("peripheral %s is still being unpaired after %v (last: %s); the operator finishes on its own", name, timeout, lastStep(last))
		},
	}
	cmd.Flags().BoolVar(&force, "force", false, "delete a Peripheral the operator has not taken on (no finalizer), leaving its bond and bond Secret")
	cmd.Flags().DurationVar(&timeout, "timeout", 5*time.Minute, "how long to wait for the unpair")
	return cmd
}

// stoppedWaiting is unpair's error when it is interrupted while the
// operator unpairs: a deletion cannot be taken back, so the unpair goes
// on, and the message says where it stood (last, the operator's last
// Unpairing message) and what state the device is left in.
func stoppedWaiting(name, last string) error {
	last = lastStep(last)
	return fmt.Errorf("stopped waiting for the unpair of peripheral %s, which goes on without this command and cannot be undone (last: %s): "+
		"the device stays disconnected, and the operator removes the bond once no claim holds it; "+
		"kubectl liken bluetooth list shows it as (unpairing) until then", name, last)
}

// lastStep is the operator's last Unpairing message as the waits report
// it, or a plain statement that none came yet.
func lastStep(last string) string {
	if last == "" {
		return "the operator reported no step yet"
	}
	return last
}

// peripheralName turns the argument of unpair into a Peripheral name:
// a Bluetooth address in either spelling (E4:17:D8:C5:67:00 or
// e4-17-d8-c5-67-00, as pair --device takes it) becomes the lowercase
// dashed name the operator gives the device's Peripheral; anything else
// must be a valid object name (RFC 1123 subdomain).
func peripheralName(arg string) (string, error) {
	if a, err := bdaddr.Parse(arg); err == nil {
		return a.Key(), nil
	}
	if errs := validation.IsDNS1123Subdomain(arg); len(errs) > 0 {
		return "", fmt.Errorf("%s is neither a Bluetooth address (XX:XX:XX:XX:XX:XX or xx-xx-xx-xx-xx-xx) nor a Peripheral name: %s", quote(arg), errs[0])
	}
	return arg, nil
}

// bondSecret names the Secret that holds the Peripheral's bond
// (status.bond.secret, "namespace/name"), or says it is unknown.
func bondSecret(obj map[string]any) string {
	if s, ok, _ := unstructured.NestedString(obj, "status", "bond", "secret"); ok && s != "" {
		return "its bond Secret " + s
	}
	return "its bond Secret (if the operator wrote one)"
}

func ptrUID(u *unstructured.Unstructured) *types.UID {
	uid := u.GetUID()
	return &uid
}
