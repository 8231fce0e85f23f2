// SPDX-License-Identifier: Apache-2.0

package pairing

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	btv1 "github.com/liken-sh/operators/api/bluetooth/v1alpha1"
	"github.com/liken-sh/operators/internal/bdaddr"
	"github.com/liken-sh/operators/internal/bonds"
)

// TestNewRadioOldBonds: a node's radio is replaced by one of another
// address (a new dongle, or a controller with a new random address at
// boot) while the old radio's bond Secrets are kept. The old Adapter is
// marked absent, and the new one says, in its BondsRestored condition, a
// Warning Event and a metric, which radio's bonds are kept and how to
// move (give the radio the old address) or delete them; once they are
// deleted it says so no more.
func TestNewRadioOldBonds(t *testing.T) {
	old := newRig(t, "00:1A:7D:DA:73:01")
	old.nodeAdapters = []string{old.adapter}
	old.start()
	eventually(t, "the old radio's Adapter on its node", func() (bool, string) {
		a, err := getObj[btv1.Adapter](old, btv1.AdaptersResource, old.key)
		if err != nil {
			return false, err.Error()
		}
		return a.Status.Node == "node-"+old.ns && isTrue(a.Status.Conditions, btv1.ConditionPresent), fmt.Sprintf("%+v", a.Status)
	})
	// The bonds the operator wrote back for it, as it writes them.
	for _, dev := range []string{"E4:17:D8:C5:73:01", "A0:AB:51:33:73:02"} {
		s := bonds.EncodeSecret(old.ns, bonds.Bond{Adapter: bdaddr.MustParse(old.adapter), Device: bdaddr.MustParse(dev),
			Info: []byte("[LinkKey]\nKey=00112233445566778899AABBCCDDEEFF\nType=4\nPINLength=0\n")})
		_, err := old.kube.CoreV1().Secrets(old.ns).Create(t.Context(), s, metav1.CreateOptions{})
		must(t, err)
	}
	old.stop()

	// The same node, now with another radio and no bond for it.
	now := newRig(t, "00:1A:7D:DA:73:02")
	now.ns = old.ns
	now.nodeAdapters = []string{now.adapter}
	now.reg = prometheus.NewRegistry()
	now.start()
	eventually(t, "the old Adapter marked absent", func() (bool, string) {
		a, err := getObj[btv1.Adapter](old, btv1.AdaptersResource, old.key)
		if err != nil {
			return false, err.Error()
		}
		c := cond(a.Status.Conditions, btv1.ConditionPresent)
		return c.Status == metav1.ConditionFalse && c.Reason == btv1.ReasonAbsent, fmt.Sprintf("%+v", c)
	})
	var msg string
	eventually(t, "BondsRestored False, BondsOfPreviousRadio on the new radio", func() (bool, string) {
		a, err := getObj[btv1.Adapter](now, btv1.AdaptersResource, now.key)
		if err != nil {
			return false, err.Error()
		}
		c := cond(a.Status.Conditions, btv1.ConditionBondsRestored)
		msg = c.Message
		return c.Status == metav1.ConditionFalse && c.Reason == btv1.ReasonBondsOfPreviousRadio, fmt.Sprintf("%+v", c)
	})
	for _, want := range []string{
		"2 bond Secrets", old.key + " (2)",
		"btmgmt --index <n> public-addr 00:1A:7D:DA:73:01",
		"kubectl -n " + old.ns + " delete secrets -l bluetooth.liken.sh/adapter=" + old.key,
		"kubectl delete adapter " + old.key,
	} {
		if !strings.Contains(msg, want) {
			t.Errorf("the condition's message lacks %q:\n%s", want, msg)
		}
	}
	if got := previousBonds(t, now.reg); got[old.key] != 2 || len(got) != 1 {
		t.Errorf("bluetooth_adapter_previous_radio_bonds = %v, want only %s at 2", got, old.key)
	}
	eventually(t, "a Warning Event on the new Adapter", func() (bool, string) {
		evs, err := now.kube.EventsV1().Events("default").List(t.Context(), metav1.ListOptions{})
		if err != nil {
			return false, err.Error()
		}
		for _, e := range evs.Items {
			if e.Regarding.Name == now.key && e.Reason == btv1.ReasonBondsOfPreviousRadio && e.Type == corev1.EventTypeWarning {
				return strings.Contains(e.Note, "public-addr"), e.Note
			}
		}
		return false, "none yet"
	})

	// The person pairs again and deletes the old bonds.
	must(t, now.kube.CoreV1().Secrets(old.ns).DeleteCollection(context.Background(), metav1.DeleteOptions{},
		metav1.ListOptions{LabelSelector: bonds.AdapterLabel + "=" + old.key}))
	eventually(t, "BondsRestored no longer naming the old radio", func() (bool, string) {
		a, err := getObj[btv1.Adapter](now, btv1.AdaptersResource, now.key)
		if err != nil {
			return false, err.Error()
		}
		c := cond(a.Status.Conditions, btv1.ConditionBondsRestored)
		return c.Reason != "" && c.Reason != btv1.ReasonBondsOfPreviousRadio, fmt.Sprintf("%+v", c)
	})
	if got := previousBonds(t, now.reg); len(got) != 0 {
		t.Errorf("bluetooth_adapter_previous_radio_bonds = %v after the old bonds were deleted, want no series", got)
	}
}

// previousBonds reads bluetooth_adapter_previous_radio_bonds from reg,
// by its previous label.
func previousBonds(t *testing.T, reg *prometheus.Registry) map[string]float64 {
	t.Helper()
	mfs, err := reg.Gather()
	must(t, err)
	out := map[string]float64{}
	for _, mf := range mfs {
		if mf.GetName() != "bluetooth_adapter_previous_radio_bonds" {
			continue
		}
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "previous" {
					out[l.GetValue()] = m.GetGauge().GetValue()
				}
			}
		}
	}
	return out
}
