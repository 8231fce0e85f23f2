// SPDX-License-Identifier: Apache-2.0

package bluetoothcli

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/spf13/cobra"
	resourceapi "k8s.io/api/resource/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/cli-runtime/pkg/printers"
	"k8s.io/client-go/dynamic"

	btv1 "github.com/liken-sh/operators/api/bluetooth/v1alpha1"
	"github.com/liken-sh/operators/internal/bdaddr"
)

func newList(e *env) *cobra.Command {
	return &cobra.Command{
		Use:   "list",
		Short: "List the adapters and the paired devices: state, connected, battery, claimed by",
		Long: "Lists the Adapters and the Peripherals. CLAIMED BY names the ResourceClaims (namespace/name) whose\n" +
			"allocation holds the device: a controller of bluetooth.liken.sh, or a speaker's sink of audio.liken.sh.\n" +
			"Reading them needs list on ResourceClaims and ResourceSlices; without it only the claim the operator\n" +
			"has prepared on the device's node is shown, and a note says so.",
		Args: cobra.NoArgs,
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
			held, note := listHolders(ctx, d)
			if err := printList(e.streams.Out, e.streams.ErrOut, adapters.Items, peripherals.Items, held); err != nil {
				return err
			}
			if note != "" {
				fmt.Fprintln(e.streams.ErrOut, note)
			}
			return nil
		},
	}
}

// printList writes list's two tables to out, and to errOut a line for
// each Adapter whose deletion waits, with the operator's reason.
// Booleans and condition statuses are spelt as kubectl spells a
// condition's status: True, False, Unknown; an empty cell is <none>.
func printList(out, errOut io.Writer, adapters []btv1.Adapter, peripherals []btv1.Peripheral, held map[holderKey][]string) error {
	w := printers.GetNewTabWriter(out)
	fmt.Fprintln(w, "ADAPTER\tADDRESS\tNODE\tSTATUS\tPOWERED\tPRESENT\tBONDS\tALIAS")
	slices.SortFunc(adapters, func(a, b btv1.Adapter) int { return cmp.Compare(a.Name, b.Name) })
	var waiting []string
	for _, a := range adapters {
		status := "Active"
		if a.DeletionTimestamp != nil {
			status = "Terminating"
			if c := meta.FindStatusCondition(a.Status.Conditions, btv1.ConditionPresent); c != nil && c.Reason == btv1.ReasonDeletionRefused {
				status += " (" + c.Reason + ")"
				waiting = append(waiting, fmt.Sprintf("Adapter %s is Terminating: %s", a.Name, c.Message))
			}
		}
		fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\t%s\t%d\t%s\n", a.Name, none(a.Status.Address), none(a.Status.Node), status,
			boolStatus(a.Status.Powered), condStatus(a.Status.Conditions, btv1.ConditionPresent), a.Status.Bonds, none(a.Spec.Alias))
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, "PERIPHERAL\tNAME\tADAPTER\tNODE\tCONNECTED\tBATTERY\tCLAIMED BY")
	slices.SortFunc(peripherals, func(a, b btv1.Peripheral) int { return cmp.Compare(a.Name, b.Name) })
	for _, p := range peripherals {
		battery := "<none>"
		if b := p.Status.Battery; b != nil && b.Percentage != nil {
			battery = fmt.Sprintf("%d%%", *b.Percentage)
			if b.Charging != nil && *b.Charging {
				battery += " charging"
			}
		}
		name := none(p.Status.Name)
		if p.DeletionTimestamp != nil {
			name += " (unpairing)"
		}
		fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", p.Name, name, none(p.Status.Adapter), none(p.Status.Node),
			condStatus(p.Status.Conditions, btv1.ConditionConnected), battery, none(strings.Join(claimedBy(p, held), ",")))
	}
	if err := w.Flush(); err != nil {
		return err
	}
	for _, l := range waiting {
		fmt.Fprintln(errOut, l)
	}
	return nil
}

// holderKey is a device as an allocation names it: the node (a
// bluetooth.liken.sh pool is its node) and the peer's address in key
// spelling.
type holderKey struct{ node, address string }

// claimedBy lists the claims (namespace/name, sorted) that hold p's
// device, with the one the operator reports in status.claim.
func claimedBy(p btv1.Peripheral, held map[holderKey][]string) []string {
	var out []string
	if a, err := bdaddr.Parse(p.Status.Address); err == nil {
		out = append(out, held[holderKey{p.Status.Node, a.Key()}]...)
	}
	if c := p.Status.Claim; c != nil {
		out = append(out, c.Namespace+"/"+c.Name)
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// Drivers whose allocations hold a Peripheral's device: the Bluetooth
// operator's controllers, named by the peer's address in key spelling in
// the node's pool, and the audio operator's speaker sinks, whose slice
// devices carry the speaker's address in the attribute "address"
// (deploy/bluetooth/operator.yaml, deploy/audio/operator.yaml).
const (
	bluetoothDriver  = "bluetooth.liken.sh"
	audioDriver      = "audio.liken.sh"
	addressAttribute = "address"
)

var (
	claimsResource = resourceapi.SchemeGroupVersion.WithResource("resourceclaims")
	slicesResource = resourceapi.SchemeGroupVersion.WithResource("resourceslices")
)

// listHolders reads every ResourceClaim, and the audio driver's
// ResourceSlices, and returns holders of them. When the API refuses a
// list, the map is nil and note says what CLAIMED BY then shows.
func listHolders(ctx context.Context, d dynamic.Interface) (map[holderKey][]string, string) {
	refused := func(what string, err error) string {
		if apierrors.IsForbidden(err) || apierrors.IsNotFound(err) {
			return fmt.Sprintf("CLAIMED BY shows only the claims prepared on a node: listing %s was refused (%v)", what, err)
		}
		return fmt.Sprintf("CLAIMED BY shows only the claims prepared on a node: listing %s failed: %v", what, err)
	}
	cu, err := d.Resource(claimsResource).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, refused("ResourceClaims", err)
	}
	var claims resourceapi.ResourceClaimList
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(cu.UnstructuredContent(), &claims); err != nil {
		return nil, refused("ResourceClaims", err)
	}
	su, err := d.Resource(slicesResource).List(ctx, metav1.ListOptions{FieldSelector: resourceapi.ResourceSliceSelectorDriver + "=" + audioDriver})
	if err != nil {
		return holders(claims.Items, nil), refused("ResourceSlices", err)
	}
	var rs resourceapi.ResourceSliceList
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(su.UnstructuredContent(), &rs); err != nil {
		return holders(claims.Items, nil), refused("ResourceSlices", err)
	}
	return holders(claims.Items, rs.Items), ""
}

// holders maps each device that an allocated claim holds to those claims
// (namespace/name, in list order): a bluetooth.liken.sh controller by its
// pool and device name, and an audio.liken.sh speaker by the address
// attribute its device has in audioSlices. A media bus device (an
// adapter's, no Peripheral's) and devices of other drivers are left out.
func holders(claims []resourceapi.ResourceClaim, audioSlices []resourceapi.ResourceSlice) map[holderKey][]string {
	type dev struct{ pool, device string }
	speakers := map[dev]holderKey{}
	for _, s := range audioSlices {
		if s.Spec.Driver != audioDriver || s.Spec.NodeName == nil {
			continue
		}
		for _, d := range s.Spec.Devices {
			a := d.Attributes[addressAttribute]
			if a.StringValue == nil {
				continue
			}
			if addr, err := bdaddr.Parse(*a.StringValue); err == nil {
				speakers[dev{s.Spec.Pool.Name, d.Name}] = holderKey{*s.Spec.NodeName, addr.Key()}
			}
		}
	}
	out := map[holderKey][]string{}
	for _, c := range claims {
		if c.Status.Allocation == nil {
			continue
		}
		ref := c.Namespace + "/" + c.Name
		for _, r := range c.Status.Allocation.Devices.Results {
			var k holderKey
			switch r.Driver {
			case bluetoothDriver:
				a, err := bdaddr.Parse(r.Device)
				if err != nil || a.Key() != r.Device {
					continue // a media bus, or no name the driver publishes
				}
				k = holderKey{r.Pool, r.Device}
			case audioDriver:
				sk, ok := speakers[dev{r.Pool, r.Device}]
				if !ok {
					continue
				}
				k = sk
			default:
				continue
			}
			if !slices.Contains(out[k], ref) {
				out[k] = append(out[k], ref)
			}
		}
	}
	return out
}

// condStatus is a condition's status, and its reason when it is not
// True ("False (NotServed)"); Unknown when there is none.
func condStatus(conds []metav1.Condition, typ string) string {
	c := meta.FindStatusCondition(conds, typ)
	switch {
	case c == nil:
		return string(metav1.ConditionUnknown)
	case c.Status != metav1.ConditionTrue && c.Reason != "":
		return string(c.Status) + " (" + c.Reason + ")"
	}
	return string(c.Status)
}

// boolStatus spells a boolean as a condition's status is spelt, the one
// spelling of yes and no in the plugin's tables.
func boolStatus(b bool) string {
	if b {
		return string(metav1.ConditionTrue)
	}
	return string(metav1.ConditionFalse)
}

// none is s, or kubectl's <none> for an empty cell.
func none(s string) string {
	if s == "" {
		return "<none>"
	}
	return s
}
