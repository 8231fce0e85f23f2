// SPDX-License-Identifier: Apache-2.0

package pairing

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	btv1 "github.com/liken-sh/operators/api/bluetooth/v1alpha1"
	"github.com/liken-sh/operators/test/bluezsim"
	"github.com/liken-sh/operators/test/poll"
)

// TestSpeakerWithoutA2DP: a connected speaker whose A2DP channel went
// (as a bluetoothd restart that brought back only AVRCP leaves it) and
// which refuses the profile twice. Its Peripheral says so at once; the
// operator waits out the grace, asks for the profile (ConnectProfile)
// twice, each after its backoff and never before (the clock is the
// test's), then makes the link anew, which brings A2DP back.
func TestSpeakerWithoutA2DP(t *testing.T) {
	r := newRig(t, "00:1A:7D:DA:75:01")
	r.reg = prometheus.NewRegistry()
	const spk = "A0:AB:51:33:75:01"
	_, err := r.sim.AddSpeaker("hci0", spk, bluezsim.Speaker{Name: "Kitchen"})
	must(t, err)
	r.start()
	must(t, r.sim.Connect("hci0", spk))
	name := strings.ToLower(strings.ReplaceAll(spk, ":", "-"))
	condition := func(what string, ok func(c metav1.Condition) bool) metav1.Condition {
		t.Helper()
		return r.peripheralCondition(t, name, btv1.ConditionA2DP, what, ok)
	}
	condition("A2DP True once connected", func(c metav1.Condition) bool {
		return c.Status == metav1.ConditionTrue && c.Reason == btv1.ReasonA2DPUp
	})

	must(t, r.sim.LoseA2DP("hci0", spk, 2))
	down := condition("A2DP False, NoA2DP", func(c metav1.Condition) bool {
		return c.Status == metav1.ConditionFalse && c.Reason == btv1.ReasonNoA2DP
	})
	for _, want := range []string{"its A2DP channel is down", "AVRCP", "asks bluetoothd for A2DP (ConnectProfile) at"} {
		if !strings.Contains(down.Message, want) {
			t.Errorf("the NoA2DP message lacks %q:\n%s", want, down.Message)
		}
	}
	repairs := func() map[string]float64 {
		mfs, err := r.reg.Gather()
		must(t, err)
		out := map[string]float64{}
		for _, mf := range mfs {
			if mf.GetName() != "bluetooth_peripheral_a2dp_repairs_total" {
				continue
			}
			for _, m := range mf.GetMetric() {
				key := ""
				for _, l := range m.GetLabel() {
					key += l.GetValue() + "/"
				}
				out[strings.TrimSuffix(key, "/")] = m.GetCounter().GetValue()
			}
		}
		return out
	}
	if got := repairs(); len(got) != 0 {
		t.Fatalf("repairs within the grace: %v", got)
	}

	step := func(advance time.Duration, attempt string, want map[string]float64) {
		t.Helper()
		r.clock.Advance(advance)
		condition("attempt "+attempt, func(c metav1.Condition) bool { return strings.Contains(c.Message, "attempt "+attempt+":") })
		if got := repairs(); fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("after attempt %s the repairs are %v, want %v", attempt, got, want)
		}
	}
	step(a2dpGrace+time.Second, "1", map[string]float64{"ConnectProfile/error": 1})
	step(a2dpRetryFirst+time.Second, "2", map[string]float64{"ConnectProfile/error": 2})
	// The clock stands still: however many passes run, no third attempt
	// comes before its time. Passes are counted by their reads of the
	// clock, not by a fixed sleep, so a slow machine still runs them.
	read := r.clock.Reads()
	poll.Until(t, "passes with the clock standing still", time.Minute, func() bool { return r.clock.Reads() >= read+50 })
	if got := repairs(); got["ConnectProfile/error"] != 2 || len(got) != 1 {
		t.Fatalf("repairs before the backoff ran out: %v", got)
	}
	r.clock.Advance(2*a2dpRetryFirst + time.Second)
	condition("A2DP True again after the reconnect", func(c metav1.Condition) bool {
		return c.Status == metav1.ConditionTrue && c.Reason == btv1.ReasonA2DPUp
	})
	if got := repairs(); got["Reconnect/success"] != 1 || got["ConnectProfile/error"] != 2 || len(got) != 2 {
		t.Errorf("repairs %v, want two refused ConnectProfile and one Reconnect", got)
	}
	evs, err := r.kube.EventsV1().Events("default").List(t.Context(), metav1.ListOptions{})
	must(t, err)
	var warned, back bool
	for _, e := range evs.Items {
		if e.Regarding.Name != name {
			continue
		}
		warned = warned || e.Reason == btv1.ReasonNoA2DP && e.Type == corev1.EventTypeWarning
		back = back || e.Reason == btv1.ReasonA2DPUp && strings.Contains(e.Note, "after 3 attempts")
	}
	if !warned || !back {
		t.Errorf("Events: NoA2DP Warning %v, back after 3 attempts %v", warned, back)
	}
}
