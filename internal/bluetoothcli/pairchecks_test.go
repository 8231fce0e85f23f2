// SPDX-License-Identifier: Apache-2.0

package bluetoothcli

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	dynamicfake "k8s.io/client-go/dynamic/fake"

	btv1 "github.com/liken-sh/operators/api/bluetooth/v1alpha1"
	"github.com/liken-sh/operators/internal/bdaddr"
)

// runPair runs pair against d with args and returns its exit status and
// everything it printed. No operator answers the fake client, so a pair
// that went ahead would wait for ever: it is interrupted after 10 s.
func runPair(t *testing.T, d *dynamicfake.FakeDynamicClient, args ...string) (int, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	return runCommand(ctx, t, d, newPair, args...)
}

// requests is how many PairingRequests d holds.
func requests(t *testing.T, d *dynamicfake.FakeDynamicClient) int {
	t.Helper()
	l, err := d.Resource(btv1.PairingRequestsResource).Namespace("default").List(t.Context(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return len(l.Items)
}

func presentAdapter(node string) map[string]any {
	return map[string]any{"status": map[string]any{
		"node": node,
		"conditions": []any{map[string]any{"type": btv1.ConditionPresent, "status": "True", "reason": "Found", "message": "",
			"lastTransitionTime": metav1.Now().UTC().Format(time.RFC3339)}},
	}}
}

// --adapter with --node is a check that the adapter is on that node: an
// adapter elsewhere, on no node, or that does not exist is refused by
// name before any request is created.
func TestPairChecksTheAdapterIsOnTheNode(t *testing.T) {
	for _, c := range []struct {
		name     string
		adapter  map[string]any // nil: no Adapter at all
		node     string
		want     string
		accepted bool
	}{
		{"another node", presentAdapter("kitchen"), "hall", `--adapter ` + testAdapter + ` is on node kitchen, not on --node "hall"`, false},
		{"no node", map[string]any{}, "hall", `--adapter ` + testAdapter + ` is on no node now, not on --node "hall"`, false},
		{"no such adapter", nil, "hall", "--adapter " + testAdapter + ": there is no such Adapter", false},
		{"the node given", presentAdapter("kitchen"), "kitchen", "", true},
	} {
		d := fakeClient()
		if c.adapter != nil {
			d = fakeClient(object("Adapter", testAdapter, c.adapter))
		}
		got, err := chooseAdapter(t.Context(), d, &bytes.Buffer{}, "00:1A:7D:DA:71:13", c.node, time.Second)
		if c.accepted {
			if err != nil || got != testAdapter {
				t.Errorf("%s: chooseAdapter = %q, %v; want %s", c.name, got, err, testAdapter)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: chooseAdapter = %q, %v; want an error with %q", c.name, got, err, c.want)
		}
	}
	// Through the command: refused, and no window opened.
	d := fakeClient(object("Adapter", testAdapter, presentAdapter("kitchen")))
	code, out := runPair(t, d, "--adapter", testAdapter, "--node", "hall")
	if code != 1 || !strings.Contains(out, "is on node kitchen, not on --node") || requests(t, d) != 0 {
		t.Errorf("pair --adapter on kitchen --node hall: exit %d, %q, %d requests; want a refusal and none", code, out, requests(t, d))
	}
}

// The help says what --adapter with --node does.
func TestPairHelpSaysNodeIsChecked(t *testing.T) {
	code, out := runPair(t, fakeClient(), "--help")
	if code != 0 || !strings.Contains(out, "with --adapter, check that the adapter is on it") {
		t.Errorf("pair --help: exit %d, %q; want --node's check described", code, out)
	}
}

// A --device whose Peripheral holds a bond is refused, naming the bond
// and the way to pair it anew, and no window is opened.
func TestPairRefusesADevicePairedAlready(t *testing.T) {
	const pad = "E4:17:D8:C5:67:6D"
	per := object("Peripheral", "e4-17-d8-c5-67-6d", map[string]any{"status": map[string]any{
		"address": pad, "adapter": testAdapter, "node": "kitchen",
		"bond": map[string]any{"held": true, "secret": "liken-bluetooth/bond-e4-17-d8-c5-67-6d"},
	}})
	d := fakeClient(object("Adapter", testAdapter, presentAdapter("kitchen")), per)
	code, out := runPair(t, d, "--device", strings.ToLower(pad), "--adapter", testAdapter)
	for _, want := range []string{pad + " is already paired with adapter " + testAdapter + " on node kitchen", "would not replace that bond",
		"kubectl liken bluetooth unpair e4-17-d8-c5-67-6d"} {
		if code != 1 || !strings.Contains(out, want) {
			t.Errorf("pair --device of a paired device: exit %d, %q; want 1 and %q", code, out, want)
		}
	}
	if n := requests(t, d); n != 0 {
		t.Errorf("pair --device of a paired device created %d PairingRequests, want none", n)
	}
}

// A Peripheral whose bond BlueZ no longer holds is no refusal: pairing
// makes a new bond, and a line says so.
func TestPairSaysABondIsGone(t *testing.T) {
	per := object("Peripheral", "e4-17-d8-c5-67-6d", map[string]any{"status": map[string]any{"bond": map[string]any{"held": false}}})
	var progress bytes.Buffer
	if err := checkNotPaired(t.Context(), fakeClient(per), &progress, bdaddr.MustParse("E4:17:D8:C5:67:6D")); err != nil {
		t.Errorf("checkNotPaired on a bond not held: %v; want no refusal", err)
	}
	if !strings.Contains(progress.String(), "BlueZ holds no bond for E4:17:D8:C5:67:6D now; pairing makes a new one") {
		t.Errorf("checkNotPaired on a bond not held printed %q; want the new bond announced", progress.String())
	}
	progress.Reset()
	if err := checkNotPaired(t.Context(), fakeClient(), &progress, bdaddr.MustParse("E4:17:D8:C5:67:6D")); err != nil || progress.Len() != 0 {
		t.Errorf("checkNotPaired with no Peripheral: %v, printed %q; want nothing", err, progress.String())
	}
}

// A request the operator ends AlreadyPaired is reported as such, not as
// a new pairing.
func TestPairReportsAlreadyPaired(t *testing.T) {
	var out bytes.Buffer
	s := &session{e: &env{streams: genericiooptions.IOStreams{Out: &out, ErrOut: &out}}}
	r := &btv1.PairingRequest{Status: btv1.PairingRequestStatus{Phase: btv1.PhasePaired, Peripheral: "e4-17-d8-c5-67-6d",
		Conditions: []metav1.Condition{{Type: btv1.ConditionPaired, Status: metav1.ConditionTrue, Reason: btv1.ReasonAlreadyPaired}}}}
	if done, err := s.show(r); !done || err != nil || out.String() != "Paired: peripheral e4-17-d8-c5-67-6d (it was paired already; its bond is unchanged)\n" {
		t.Errorf("show of an AlreadyPaired request: done %v, %v, printed %q", done, err, out.String())
	}
}
