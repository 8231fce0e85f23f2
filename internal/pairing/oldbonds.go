// SPDX-License-Identifier: Apache-2.0

package pairing

import (
	"fmt"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	btv1 "github.com/liken-sh/operators/api/bluetooth/v1alpha1"
	"github.com/liken-sh/operators/internal/bdaddr"
	"github.com/liken-sh/operators/internal/bonds"
)

// previousRadioBonds counts, by adapter name, the bond Secrets of the
// radios this node had before: Secrets labelled with another adapter
// whose Adapter was last reported on this node and is not on it now
// (not among Input.NodeAdapters; when those are unknown, not Present).
// A new dongle, or a controller that takes a new random address at each
// boot, leaves them behind: a link key is bound to the adapter address
// it was made with, so bondfetch (which restores by address) restores
// none of them for the radio now here. A Secret of an adapter that has no
// Adapter object, or whose radio is present (elsewhere, or beside ours
// on this node), is not counted: it may be another node's.
func (p *pass) previousRadioBonds(adapters []btv1.Adapter, key string) (map[string]int, error) {
	var previous []string
	for _, a := range adapters {
		if a.Name != key && a.Status.Node == p.c.cfg.Node && !p.onThisNode(a) {
			previous = append(previous, a.Name)
		}
	}
	if len(previous) == 0 {
		return nil, nil
	}
	sel := metav1.ListOptions{LabelSelector: bonds.AppLabel + "=" + bonds.AppName + "," + bonds.AdapterLabel + " in (" + strings.Join(previous, ",") + ")"}
	secrets, err := p.c.cfg.Kube.CoreV1().Secrets(p.c.cfg.Namespace).List(p.ctx, sel)
	if err != nil {
		return nil, err
	}
	out := map[string]int{}
	for _, s := range secrets.Items {
		if s.DeletionTimestamp == nil {
			out[s.Labels[bonds.AdapterLabel]]++
		}
	}
	return out, nil
}

// previousRadioMessage is the BondsRestored message for a radio that
// holds no bonds while Secrets of this node's earlier radios do (found,
// as previousRadioBonds counts them), with the two ways out: give this
// radio the old address back, or pair again and delete the old bonds.
func (p *pass) previousRadioMessage(address string, found map[string]int) string {
	names := make([]string, 0, len(found))
	total := 0
	for name, n := range found {
		names = append(names, name)
		total += n
	}
	slices.Sort(names)
	listed := make([]string, 0, len(names))
	for _, name := range names {
		listed = append(listed, fmt.Sprintf("%s (%d)", name, found[name]))
	}
	old := names[0]
	oldAddr := old
	if a, err := bdaddr.Parse(old); err == nil {
		oldAddr = a.String()
	}
	return fmt.Sprintf("this radio (%s) holds no bonds, while %d bond Secrets of this node's earlier radios are kept: %s. "+
		"A link key belongs to the adapter address it was made with, so those devices do not know this radio: a new dongle, or a controller that takes a new random address at each boot. "+
		"To keep them, give this radio the old address where its controller allows it (btmgmt --index <n> public-addr %s on the node) and restart this node's bluetooth-operator pod, whose bondfetch then restores them. "+
		"Otherwise pair the devices again with a PairingRequest and delete the old bonds: kubectl -n %s delete secrets -l %s=%s, then kubectl delete adapter %s",
		address, total, strings.Join(listed, ", "), oldAddr, p.c.cfg.Namespace, bonds.AdapterLabel, old, old)
}

// reportPreviousRadioBonds sets the BondsRestored condition of a radio
// without bonds: False with reason BondsOfPreviousRadio when this node's
// earlier radios left bond Secrets (with a Warning Event and a log line
// when it starts), else as before, NewAdapter when another radio holds
// bonds, NoBonds when none does. It sets
// bluetooth_adapter_previous_radio_bonds either way.
func (p *pass) reportPreviousRadioBonds(cur *btv1.Adapter, st *btv1.AdapterStatus, adapters []btv1.Adapter, key string) {
	found, err := p.previousRadioBonds(adapters, key)
	if err != nil {
		p.fail("Adapter %s: listing the bond Secrets of this node's earlier radios: %v", key, err)
		found = nil
		// Keep what the condition said; the next pass asks again.
		if c := meta.FindStatusCondition(cur.Status.Conditions, btv1.ConditionBondsRestored); c != nil && c.Reason == btv1.ReasonBondsOfPreviousRadio {
			return
		}
	}
	p.c.metrics.previousBonds.Reset()
	for name, n := range found {
		p.c.metrics.previousBonds.WithLabelValues(name).Set(float64(n))
	}
	switch {
	case len(found) > 0:
		msg := p.previousRadioMessage(st.Address, found)
		if c := meta.FindStatusCondition(cur.Status.Conditions, btv1.ConditionBondsRestored); c == nil || c.Reason != btv1.ReasonBondsOfPreviousRadio {
			p.c.event(cur, true, btv1.ReasonBondsOfPreviousRadio, "RestoreBonds", "%s", truncate(msg, 1024))
			p.log.Info("This radio holds no bonds while this node's earlier radios left bond Secrets", "adapter", key, "previous", found)
		}
		setCondition(&st.Conditions, btv1.ConditionBondsRestored, false, btv1.ReasonBondsOfPreviousRadio, msg, cur.Generation)
	case p.otherAdapterHasBonds(adapters, key):
		setCondition(&st.Conditions, btv1.ConditionBondsRestored, false, btv1.ReasonNewAdapter,
			"this radio holds no bonds while another radio does: a new dongle? A link key belongs to one adapter address, so its devices must be paired again with a PairingRequest", cur.Generation)
	default:
		setCondition(&st.Conditions, btv1.ConditionBondsRestored, true, btv1.ReasonNoBonds,
			"nothing has been paired with this radio yet", cur.Generation)
	}
}

// onThisNode reports whether a's radio is on this node now: among the
// adapters bluetoothd here reports, or, when those are unknown, Present.
func (p *pass) onThisNode(a btv1.Adapter) bool {
	if p.in.NodeAdapters == nil {
		return isTrue(a.Status.Conditions, btv1.ConditionPresent)
	}
	return slices.ContainsFunc(p.in.NodeAdapters, func(addr string) bool {
		b, err := bdaddr.Parse(addr)
		return err == nil && b.Key() == a.Name
	})
}

// markAbsentHere sets Present False, reason Absent, on every other
// Adapter last reported on this node whose radio bluetoothd here no
// longer reports (a dongle unplugged, or a controller whose address
// changed at boot): no operator serves it any more, so none would say
// so. It does nothing while the node's adapters are unknown.
func (p *pass) markAbsentHere(adapters []btv1.Adapter, key string) {
	if p.in.NodeAdapters == nil {
		return
	}
	for i := range adapters {
		a := &adapters[i]
		if a.Name == key || a.Status.Node != p.c.cfg.Node || a.DeletionTimestamp != nil ||
			!isTrue(a.Status.Conditions, btv1.ConditionPresent) || p.onThisNode(*a) {
			continue
		}
		next := a.DeepCopy()
		next.Status.Powered, next.Status.Discoverable, next.Status.Pairable, next.Status.Discovering = false, false, false, false
		setCondition(&next.Status.Conditions, btv1.ConditionPresent, false, btv1.ReasonAbsent,
			fmt.Sprintf("bluetoothd on node %s, where the radio was last, does not report it", p.c.cfg.Node), a.Generation)
		if err := p.c.store.writeStatus(p.ctx, btv1.AdaptersResource, "Adapter", next, a.Status, next.Status, ""); err != nil {
			p.statusFailed("Adapter "+a.Name, err)
			continue
		}
		p.log.Info("A radio last on this node is gone from it", "adapter", a.Name)
	}
}
