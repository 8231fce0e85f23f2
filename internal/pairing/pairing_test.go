// SPDX-License-Identifier: Apache-2.0

package pairing

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"github.com/prometheus/client_golang/prometheus"

	btv1 "github.com/liken-sh/operators/api/bluetooth/v1alpha1"
	"github.com/liken-sh/operators/internal/bonds"
	"github.com/liken-sh/operators/internal/dra"
	"github.com/liken-sh/operators/test/bluezsim"
)

const hid = "00001124-0000-1000-8000-00805f9b34fb"

func cond(conds []metav1.Condition, typ string) metav1.Condition {
	if c := meta.FindStatusCondition(conds, typ); c != nil {
		return *c
	}
	return metav1.Condition{}
}

// adapterProps reads hci0's Adapter1 properties from the simulator's bus.
func (r *rig) radio() map[string]any {
	r.t.Helper()
	regs, err := r.sim.Registrations()
	must(r.t, err)
	out := map[string]any{"agents": len(regs.Agents), "discovery": len(regs.Discovery)}
	for _, name := range []string{"Discoverable", "Pairable", "DiscoverableTimeout", "PairableTimeout", "Connectable"} {
		v, err := r.sim.AdapterProperty("hci0", name)
		must(r.t, err)
		out[name] = v
	}
	return out
}

// TestAdoption: every bond BlueZ holds gets a Peripheral owned by the
// Adapter, which is created with its finalizer and the radio's status; a
// device BlueZ merely saw gets none; deleting the Adapter while the radio
// is present is refused with a reason.
func TestAdoption(t *testing.T) {
	r := newRig(t, "00:1A:7D:DA:71:01")
	pad, speaker, stranger := "E4:17:D8:C5:67:01", "A0:AB:51:33:B7:01", "11:22:33:44:55:01"
	_, err := r.sim.AddDevice("hci0", pad, bluezsim.Device{Name: "8Bitdo NES30 Pro", Class: 0x002508, UUIDs: []string{hid}, Trusted: true})
	must(t, err)
	_, err = r.sim.AddDevice("hci0", speaker, bluezsim.Device{Name: "Kitchen", Class: 0x240414})
	must(t, err)
	_, err = r.sim.AddDevice("hci0", stranger, bluezsim.Device{Name: "Phone"})
	must(t, err)
	must(t, r.sim.Pair("hci0", pad))
	must(t, r.sim.Pair("hci0", speaker))
	must(t, r.sim.Connect("hci0", speaker))
	r.start()

	var adapter *btv1.Adapter
	eventually(t, "the Adapter", func() (bool, string) {
		var err error
		adapter, err = getObj[btv1.Adapter](r, btv1.AdaptersResource, r.key)
		if err != nil {
			return false, err.Error()
		}
		return adapter.Status.Bonds == 2 && isTrue(adapter.Status.Conditions, btv1.ConditionPresent), fmt.Sprintf("%+v", adapter.Status)
	})
	if !slices.Contains(adapter.Finalizers, btv1.AdapterFinalizer) || len(adapter.OwnerReferences) != 0 ||
		adapter.Status.Address != r.adapter || adapter.Status.BluezVersion != "5.66" || adapter.Status.KernelVersion != testKernelRelease || !adapter.Status.Powered {
		t.Errorf("Adapter: finalizers %v owners %v status %+v", adapter.Finalizers, adapter.OwnerReferences, adapter.Status)
	}
	for _, c := range []struct {
		addr, reason string
		connected    bool
	}{{pad, btv1.ReasonAsleep, false}, {speaker, btv1.ReasonConnected, true}} {
		name := strings.ToLower(strings.ReplaceAll(c.addr, ":", "-"))
		var per *btv1.Peripheral
		eventually(t, "Peripheral "+name, func() (bool, string) {
			var err error
			per, err = getObj[btv1.Peripheral](r, btv1.PeripheralsResource, name)
			if err != nil {
				return false, err.Error()
			}
			return cond(per.Status.Conditions, btv1.ConditionConnected).Reason == c.reason, fmt.Sprintf("%+v", per.Status)
		})
		if len(per.OwnerReferences) != 1 || per.OwnerReferences[0].UID != adapter.UID || !slices.Contains(per.Finalizers, btv1.PeripheralFinalizer) ||
			per.Status.Bond == nil || !per.Status.Bond.Held || per.Status.Bond.Request != "" || per.Status.Adapter != r.key {
			t.Errorf("Peripheral %s: owners %v finalizers %v status %+v", name, per.OwnerReferences, per.Finalizers, per.Status)
		}
	}
	if _, err := getObj[btv1.Peripheral](r, btv1.PeripheralsResource, "11-22-33-44-55-01"); err == nil {
		t.Error("a device BlueZ only saw got a Peripheral")
	}

	must(t, r.dyn.Resource(btv1.AdaptersResource).Delete(t.Context(), r.key, metav1.DeleteOptions{}))
	eventually(t, "the refusal", func() (bool, string) {
		a, err := getObj[btv1.Adapter](r, btv1.AdaptersResource, r.key)
		if err != nil {
			return false, err.Error()
		}
		c := cond(a.Status.Conditions, btv1.ConditionPresent)
		return c.Reason == btv1.ReasonDeletionRefused && strings.Contains(c.Message, "would unpair"), c.Message
	})
}

// TestPairJustWorks: a request opens the window (timeouts first, agent,
// discovery), the seen list merges and caps, the approval pairs and
// trusts the device and makes its Peripheral, the window closes, and a
// TTL of 0 deletes the request.
func TestPairJustWorks(t *testing.T) {
	r := newRig(t, "00:1A:7D:DA:71:02")
	r.start()
	ttl := int32(0)
	r.create("pad", btv1.PairingRequestSpec{WindowSeconds: 120, TTLSecondsAfterFinished: &ttl})
	req := r.waitRequest("pad", "Open", func(p *btv1.PairingRequest) bool {
		return p.Status.Phase == btv1.PhaseOpen && isTrue(p.Status.Conditions, btv1.ConditionWindowOpen)
	})
	if want := r.clock.Now().Add(120 * time.Second); !req.Status.WindowClosesAt.Time.Equal(want) {
		t.Errorf("windowClosesAt %v, want %v", req.Status.WindowClosesAt, want)
	}
	eventually(t, "the radio's window", func() (bool, string) {
		got := r.radio()
		return got["Discoverable"] == true && got["Pairable"] == true && got["agents"] == 1 && got["discovery"] == 1 &&
			got["DiscoverableTimeout"] == uint32(120) && got["PairableTimeout"] == uint32(120), fmt.Sprint(got)
	})

	// 18 devices answer, the nearest first; a name of 10 KB is cut.
	long := strings.Repeat("é", 5<<10)
	for i := range 18 {
		addr := fmt.Sprintf("E4:17:D8:C5:68:%02X", i)
		name := fmt.Sprintf("dev %d", i)
		if i == 0 {
			name = long
		}
		_, err := r.sim.AddDevice("hci0", addr, bluezsim.Device{Name: name, Class: 0x002508, UUIDs: []string{hid}, RSSI: int16(-40 - i)})
		must(t, err)
	}
	req = r.waitRequest("pad", "16 seen", func(p *btv1.PairingRequest) bool { return len(p.Status.Seen) == btv1.MaxSeen })
	first := req.Status.Seen[0]
	if len(first.Name) > btv1.MaxNameBytes || !strings.HasPrefix(long, first.Name) || first.RSSI == nil || *first.RSSI != -40 || first.Class != 0x002508 {
		t.Errorf("seen[0] = %q (%d bytes) rssi %v class %#x", first.Name[:10], len(first.Name), first.RSSI, first.Class)
	}
	// A later answer updates the entry in place; order and firstSeen stay.
	r.clock.Advance(5 * time.Second)
	must(t, r.sim.SetDeviceProperty("hci0", req.Status.Seen[3].Address, "RSSI", int16(-20)))
	after := r.waitRequest("pad", "RSSI merged", func(p *btv1.PairingRequest) bool {
		return len(p.Status.Seen) == 16 && p.Status.Seen[3].RSSI != nil && *p.Status.Seen[3].RSSI == -20
	})
	for i := range after.Status.Seen {
		if after.Status.Seen[i].Address != req.Status.Seen[i].Address || !after.Status.Seen[i].FirstSeen.Equal(&req.Status.Seen[i].FirstSeen) {
			t.Errorf("seen[%d] moved: %+v, was %+v", i, after.Status.Seen[i], req.Status.Seen[i])
		}
	}

	pad := req.Status.Seen[1].Address
	r.patch("pad", map[string]any{"device": strings.ToLower(pad)})
	// Paired, then deleted at once (TTL 0): the Peripheral tells.
	name := strings.ToLower(strings.ReplaceAll(pad, ":", "-"))
	var per *btv1.Peripheral
	eventually(t, "the Peripheral", func() (bool, string) {
		var err error
		per, err = getObj[btv1.Peripheral](r, btv1.PeripheralsResource, name)
		if err != nil {
			return false, err.Error()
		}
		return per.Status.Bond != nil && per.Status.Bond.Request == r.ns+"/pad", fmt.Sprintf("%+v", per.Status)
	})
	if per.Spec.Trusted == nil || !*per.Spec.Trusted {
		t.Errorf("spec.trusted %v", per.Spec.Trusted)
	}
	if v, err := r.sim.DeviceProperty("hci0", pad, "Trusted"); err != nil || v != true {
		t.Errorf("Trusted after pairing: %v, %v", v, err)
	}
	eventually(t, "the request deleted after its TTL", func() (bool, string) {
		_, err := r.request("pad")
		return err != nil && strings.Contains(err.Error(), "not found"), fmt.Sprint(err)
	})
	eventually(t, "the window closed", func() (bool, string) {
		got := r.radio()
		return got["Discoverable"] == false && got["Pairable"] == false && got["agents"] == 0 && got["discovery"] == 0, fmt.Sprint(got)
	})
}

// TestPasskeys: a keyboard shows its passkey in status and a right one
// pairs; a wrong one fails visibly; numeric comparison waits for
// spec.passkeyConfirmed; a legacy device waits for spec.pin; a radio
// failure ends Failed with BlueZ's error.
func TestPasskeys(t *testing.T) {
	r := newRig(t, "00:1A:7D:DA:71:03")
	r.start()
	add := func(addr string, d bluezsim.Device) {
		_, err := r.sim.AddDevice("hci0", addr, d)
		must(t, err)
	}
	kbd, kbd2, phone, legacy, broken := "C0:00:00:00:00:01", "C0:00:00:00:00:02", "C0:00:00:00:00:03", "C0:00:00:00:00:04", "C0:00:00:00:00:05"
	add(kbd, bluezsim.Device{Name: "Keyboard", Class: 0x002540, UUIDs: []string{hid}, Pairing: bluezsim.DisplayPasskey})
	add(kbd2, bluezsim.Device{Name: "Keyboard 2", Class: 0x002540, UUIDs: []string{hid}, Pairing: bluezsim.DisplayPasskey})
	add(phone, bluezsim.Device{Name: "Phone", Class: 0x5a020c, Pairing: bluezsim.Confirm})
	add(legacy, bluezsim.Device{Name: "Old pad", Class: 0x002508, Pairing: bluezsim.PinCode, Secret: "0000", LegacyPairing: true})
	add(broken, bluezsim.Device{Name: "Far away", Pairing: bluezsim.PairFail, Secret: "org.bluez.Error.ConnectionAttemptFailed"})

	// Keyboard, typed right.
	r.create("kbd", btv1.PairingRequestSpec{Device: kbd})
	req := r.waitRequest("kbd", "the passkey shown", func(p *btv1.PairingRequest) bool { return p.Status.Passkey != nil })
	if pk := req.Status.Passkey; pk.Action != btv1.PasskeyType || len(pk.Value) != 6 || pk.Device != kbd ||
		cond(req.Status.Conditions, btv1.ConditionPaired).Reason != btv1.ReasonAwaitingPasskey {
		t.Errorf("passkey %+v, condition %+v", pk, cond(req.Status.Conditions, btv1.ConditionPaired))
	}
	var n uint32
	fmt.Sscanf(req.Status.Passkey.Value, "%d", &n)
	must(t, r.sim.EnterPasskey("hci0", kbd, n))
	req = r.waitRequest("kbd", "Paired", func(p *btv1.PairingRequest) bool { return p.Status.Phase == btv1.PhasePaired })
	if req.Status.Passkey != nil || req.Status.Peripheral != "c0-00-00-00-00-01" || req.Status.FinishedAt == nil {
		t.Errorf("paired status %+v", req.Status)
	}

	// Keyboard, typed wrong.
	r.create("kbd2", btv1.PairingRequestSpec{Device: kbd2})
	req = r.waitRequest("kbd2", "the passkey shown", func(p *btv1.PairingRequest) bool { return p.Status.Passkey != nil })
	fmt.Sscanf(req.Status.Passkey.Value, "%d", &n)
	must(t, r.sim.EnterPasskey("hci0", kbd2, (n+1)%1000000))
	req = r.waitRequest("kbd2", "Failed", func(p *btv1.PairingRequest) bool { return p.Status.Phase == btv1.PhaseFailed })
	if c := cond(req.Status.Conditions, btv1.ConditionPaired); c.Reason != btv1.ReasonPairingFailed || !strings.Contains(c.Message, "AuthenticationFailed") {
		t.Errorf("wrong passkey: %+v", c)
	}

	// Numeric comparison: an answer given before the number shows does
	// not count; one after it does.
	r.create("phone", btv1.PairingRequestSpec{Device: phone, PasskeyConfirmed: new(true)})
	r.waitRequest("phone", "the number to compare", func(p *btv1.PairingRequest) bool {
		return p.Status.Passkey != nil && p.Status.Passkey.Action == btv1.PasskeyConfirm
	})
	time.Sleep(time.Second)
	if got, _ := r.request("phone"); got.Status.Phase != btv1.PhaseOpen {
		t.Fatalf("a confirmation given before the passkey showed paired: %+v", got.Status)
	}
	r.patch("phone", map[string]any{"passkeyConfirmed": nil})
	r.patch("phone", map[string]any{"passkeyConfirmed": true})
	r.waitRequest("phone", "Paired", func(p *btv1.PairingRequest) bool { return p.Status.Phase == btv1.PhasePaired })

	// Legacy PIN.
	r.create("legacy", btv1.PairingRequestSpec{Device: legacy})
	r.waitRequest("legacy", "asks for a PIN", func(p *btv1.PairingRequest) bool {
		return cond(p.Status.Conditions, btv1.ConditionPaired).Reason == btv1.ReasonAwaitingPIN
	})
	r.patch("legacy", map[string]any{"pin": "0000"})
	r.waitRequest("legacy", "Paired", func(p *btv1.PairingRequest) bool { return p.Status.Phase == btv1.PhasePaired })

	// A radio failure.
	r.create("broken", btv1.PairingRequestSpec{Device: broken})
	req = r.waitRequest("broken", "Failed", func(p *btv1.PairingRequest) bool { return p.Status.Phase == btv1.PhaseFailed })
	if c := cond(req.Status.Conditions, btv1.ConditionPaired); !strings.Contains(c.Message, "ConnectionAttemptFailed") {
		t.Errorf("radio failure: %+v", c)
	}
	regs, _ := r.sim.Registrations()
	t.Logf("agent calls: %+v", regs.AgentCalls)
}

// TestExpiryAndRestart: a window closes Expired at its deadline, and an
// operator restarted mid-window opens it again for an Open request, and
// closes a radio left discoverable when no request is open.
func TestExpiryAndRestart(t *testing.T) {
	r := newRig(t, "00:1A:7D:DA:71:04")
	r.start()
	r.create("short", btv1.PairingRequestSpec{WindowSeconds: 60})
	r.waitRequest("short", "Open", func(p *btv1.PairingRequest) bool { return p.Status.Phase == btv1.PhaseOpen })
	eventually(t, "open", func() (bool, string) { got := r.radio(); return got["Discoverable"] == true, fmt.Sprint(got) })

	// The operator dies mid-window; the radio is left open (BlueZ's own
	// timeout would close it). A new one takes the window over.
	r.stop()
	r.clock.Advance(20 * time.Second)
	r.start()
	eventually(t, "reopened", func() (bool, string) {
		got := r.radio()
		return got["Discoverable"] == true && got["agents"] == 1 && got["discovery"] == 1, fmt.Sprint(got)
	})
	r.clock.Advance(41 * time.Second)
	req := r.waitRequest("short", "Expired", func(p *btv1.PairingRequest) bool { return p.Status.Phase == btv1.PhaseExpired })
	if req.Status.FinishedAt == nil || cond(req.Status.Conditions, btv1.ConditionPaired).Reason != btv1.ReasonExpired {
		t.Errorf("expired status %+v", req.Status)
	}
	eventually(t, "closed", func() (bool, string) {
		got := r.radio()
		return got["Discoverable"] == false && got["Pairable"] == false && got["discovery"] == 0 && got["agents"] == 0, fmt.Sprint(got)
	})

	// A radio someone left discoverable, with no request open, is closed
	// by an operator that never opened it.
	r.stop()
	must(t, r.sim.SetAdapterProperty("hci0", "Discoverable", true))
	must(t, r.sim.SetAdapterProperty("hci0", "Pairable", true))
	r.start()
	eventually(t, "closed after a restart", func() (bool, string) {
		got := r.radio()
		return got["Discoverable"] == false && got["Pairable"] == false, fmt.Sprint(got)
	})
}

// TestUnknownAdapter: a request for an adapter that does not exist says
// so, naming the radios operators report and not an Adapter no radio
// serves, and never opens this radio's window; once the grace for an
// Adapter still on its way has passed it ends Failed with that reason and
// a Warning Event, and its TTL then deletes it.
func TestUnknownAdapter(t *testing.T) {
	r := newRig(t, "00:1A:7D:DA:71:05")
	r.start()
	eventually(t, "the rig's own Adapter", func() (bool, string) {
		a, err := getObj[btv1.Adapter](r, btv1.AdaptersResource, r.key)
		return err == nil && isTrue(a.Status.Conditions, btv1.ConditionPresent), fmt.Sprint(err)
	})
	// An Adapter made by hand for a radio no operator has.
	const unserved = "00-1a-7d-da-71-f5"
	u, err := toUnstructured(&btv1.Adapter{ObjectMeta: metav1.ObjectMeta{Name: unserved}}, "Adapter")
	must(t, err)
	created, err := r.dyn.Resource(btv1.AdaptersResource).Create(t.Context(), u, metav1.CreateOptions{})
	must(t, err)
	t.Cleanup(func() {
		_ = r.dyn.Resource(btv1.AdaptersResource).Delete(context.Background(), unserved, metav1.DeleteOptions{})
	})
	r.clock.Advance(created.GetCreationTimestamp().Add(notFoundGrace + time.Second).Sub(r.clock.Now()))
	eventually(t, "Present False NotServed on "+unserved, func() (bool, string) {
		a, err := getObj[btv1.Adapter](r, btv1.AdaptersResource, unserved)
		if err != nil {
			return false, err.Error()
		}
		return cond(a.Status.Conditions, btv1.ConditionPresent).Reason == btv1.ReasonNotServed, fmt.Sprintf("%+v", a.Status)
	})
	ttl := int32(2)
	r.create("nowhere", btv1.PairingRequestSpec{Adapter: "00-00-00-00-00-99", WindowSeconds: btv1.MinWindowSeconds, TTLSecondsAfterFinished: &ttl})
	req := r.waitRequest("nowhere", "AdapterNotFound", func(p *btv1.PairingRequest) bool {
		return cond(p.Status.Conditions, btv1.ConditionAccepted).Reason == btv1.ReasonAdapterNotFound
	})
	if c := cond(req.Status.Conditions, btv1.ConditionAccepted); !strings.Contains(c.Message, r.key+" (node node-"+r.ns+")") ||
		strings.Contains(c.Message, unserved) {
		t.Errorf("AdapterNotFound message %q: want it to name %s on its node and not %s, which no radio serves", c.Message, r.key, unserved)
	}
	if got := r.radio(); got["Discoverable"] != false {
		t.Errorf("radio %v", got)
	}
	r.clock.Advance(req.CreationTimestamp.Add(notFoundGrace + time.Second).Sub(r.clock.Now()))
	failed := r.waitRequest("nowhere", "Failed", func(p *btv1.PairingRequest) bool { return p.Status.Phase == btv1.PhaseFailed })
	if c := cond(failed.Status.Conditions, btv1.ConditionPaired); c.Reason != btv1.ReasonAdapterNotFound || failed.Status.FinishedAt == nil ||
		!strings.Contains(c.Message, "no Adapter is named 00-00-00-00-00-99") {
		t.Errorf("failed status %+v", failed.Status)
	}
	eventually(t, "a Warning Event AdapterNotFound on the request", func() (bool, string) {
		evs, err := r.kube.EventsV1().Events(metav1.NamespaceAll).List(t.Context(), metav1.ListOptions{})
		if err != nil {
			return false, err.Error()
		}
		n := 0
		for _, e := range evs.Items {
			if e.Regarding.Name == "nowhere" && e.Reason == btv1.ReasonAdapterNotFound && e.Type == corev1.EventTypeWarning {
				n++
			}
		}
		return n == 1, fmt.Sprintf("%d such Events among %d", n, len(evs.Items))
	})
	r.clock.Advance(time.Duration(ttl+1) * time.Second)
	eventually(t, "the failed request deleted after its TTL", func() (bool, string) {
		_, err := r.request("nowhere")
		return apierrors.IsNotFound(err), fmt.Sprint(err)
	})
}

// TestUnpair: deleting a Peripheral disconnects the device, waits while a
// prepared claim holds it, keeps it out of the slice, removes it from
// BlueZ (the bond's files go), and then releases the finalizer.
func TestUnpair(t *testing.T) {
	r := newRig(t, "00:1A:7D:DA:71:06")
	pad := "E4:17:D8:C5:67:06"
	name := "e4-17-d8-c5-67-06"
	_, err := r.sim.AddDevice("hci0", pad, bluezsim.Device{Name: "Pad", Class: 0x002508, UUIDs: []string{hid}, Trusted: true})
	must(t, err)
	must(t, r.sim.Pair("hci0", pad))
	must(t, r.sim.Connect("hci0", pad))
	r.mu.Lock()
	r.holders[name] = dra.ClaimRef{Namespace: "games", Name: "player-pad"}
	r.mu.Unlock()
	r.start()
	eventually(t, "the Peripheral", func() (bool, string) {
		p, err := getObj[btv1.Peripheral](r, btv1.PeripheralsResource, name)
		return err == nil && p.Status.Claim != nil, fmt.Sprint(err)
	})
	must(t, r.dyn.Resource(btv1.PeripheralsResource).Delete(t.Context(), name, metav1.DeleteOptions{}))
	eventually(t, "waiting for the claim", func() (bool, string) {
		p, err := getObj[btv1.Peripheral](r, btv1.PeripheralsResource, name)
		if err != nil {
			return false, err.Error()
		}
		c := cond(p.Status.Conditions, btv1.ConditionReady)
		return c.Reason == btv1.ReasonUnpairing && strings.Contains(c.Message, "games/player-pad"), c.Message
	})
	// Disconnected by the unpair, not asleep: Connected says so.
	eventually(t, "Connected False (Unpairing)", func() (bool, string) {
		p, err := getObj[btv1.Peripheral](r, btv1.PeripheralsResource, name)
		if err != nil {
			return false, err.Error()
		}
		c := cond(p.Status.Conditions, btv1.ConditionConnected)
		return c.Status == metav1.ConditionFalse && c.Reason == btv1.ReasonUnpairing, fmt.Sprintf("%+v", c)
	})
	if v, _ := r.sim.DeviceProperty("hci0", pad, "Connected"); v != false {
		t.Errorf("Connected while unpairing: %v", v)
	}
	info := filepath.Join(r.sim.StorageDir(), r.adapter, pad, "info")
	if _, err := os.Stat(info); err != nil {
		t.Fatalf("the bond went while a claim held it: %v", err)
	}
	r.mu.Lock()
	delete(r.holders, name)
	r.mu.Unlock()
	eventually(t, "the Peripheral gone", func() (bool, string) {
		_, err := getObj[btv1.Peripheral](r, btv1.PeripheralsResource, name)
		return err != nil && strings.Contains(err.Error(), "not found"), fmt.Sprint(err)
	})
	if _, err := os.Stat(info); !os.IsNotExist(err) {
		t.Errorf("the bond's info after the unpair: %v", err)
	}
}

// TestDeleteAdapterWithoutRadio: an Adapter whose radio has left is
// deleted at once, its Peripherals go with it, and its bond Secrets stay
// (no longer owned by the Peripherals) for bondfetch to restore when the
// radio comes back. While the radio is present the same delete is
// refused (TestAdoption).
func TestDeleteAdapterWithoutRadio(t *testing.T) {
	r := newRig(t, "00:1A:7D:DA:71:07")
	pad := "E4:17:D8:C5:67:07"
	name := "e4-17-d8-c5-67-07"
	_, err := r.sim.AddDevice("hci0", pad, bluezsim.Device{Name: "Pad", Class: 0x002508, UUIDs: []string{hid}, Trusted: true})
	must(t, err)
	must(t, r.sim.Pair("hci0", pad))
	r.start()
	var per *btv1.Peripheral
	eventually(t, "the Peripheral", func() (bool, string) {
		per, err = getObj[btv1.Peripheral](r, btv1.PeripheralsResource, name)
		return err == nil && per.UID != "", fmt.Sprint(err)
	})
	// The bond's Secret, owned by its Peripheral as the operator's
	// write-back leaves it.
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{
		Name: "bluetooth-bond-" + r.key + "-" + name, Namespace: r.ns,
		Labels:          map[string]string{bonds.AdapterLabel: r.key},
		OwnerReferences: []metav1.OwnerReference{{APIVersion: btv1.GroupVersion.String(), Kind: "Peripheral", Name: per.Name, UID: per.UID}},
	}, Type: corev1.SecretTypeOpaque, Data: map[string][]byte{name + ".info": []byte("[LinkKey]\nKey=00112233445566778899AABBCCDDEEFF\nType=4\nPINLength=0\n")}}
	_, err = r.kube.CoreV1().Secrets(r.ns).Create(t.Context(), secret, metav1.CreateOptions{})
	must(t, err)

	must(t, r.sim.RemoveAdapter("hci0"))
	eventually(t, "the Adapter absent", func() (bool, string) {
		a, err := getObj[btv1.Adapter](r, btv1.AdaptersResource, r.key)
		if err != nil {
			return false, err.Error()
		}
		c := cond(a.Status.Conditions, btv1.ConditionPresent)
		return c.Reason == btv1.ReasonAbsent, c.Message
	})
	must(t, r.dyn.Resource(btv1.AdaptersResource).Delete(t.Context(), r.key, metav1.DeleteOptions{}))
	eventually(t, "the Adapter and its Peripheral gone", func() (bool, string) {
		_, aerr := getObj[btv1.Adapter](r, btv1.AdaptersResource, r.key)
		_, perr := getObj[btv1.Peripheral](r, btv1.PeripheralsResource, name)
		return apierrors.IsNotFound(aerr) && apierrors.IsNotFound(perr), fmt.Sprintf("Adapter: %v; Peripheral: %v", aerr, perr)
	})
	// Garbage collection has had its chance at the Secret: the
	// Peripheral that owned it is gone.
	time.Sleep(2 * time.Second)
	got, err := r.kube.CoreV1().Secrets(r.ns).Get(t.Context(), secret.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("the bond Secret after the Adapter's deletion: %v", err)
	}
	if len(got.OwnerReferences) != 0 || string(got.Data[name+".info"]) != string(secret.Data[name+".info"]) {
		t.Errorf("the bond Secret: owners %v, data %q; want no owner and the bond as it was", got.OwnerReferences, got.Data)
	}
	evs, err := r.kube.EventsV1().Events("default").List(t.Context(), metav1.ListOptions{})
	must(t, err)
	released := false
	for _, e := range evs.Items {
		released = released || e.Regarding.Name == r.key && e.Reason == "Released" && strings.Contains(e.Note, "bond Secrets stay")
	}
	if !released {
		t.Errorf("no Released Event on Adapter %s among %d Events", r.key, len(evs.Items))
	}
}

// TestStatusSpecMetricsAndEvents: a Peripheral's battery comes from the
// kernel's power_supply under its HID device before BlueZ's Battery1;
// the Adapter's spec.alias and spec.powered and a Peripheral's spec.alias
// reach BlueZ; page scan off with a bonded device away is a PageScanOff
// condition and a Warning Event; a radio with no bonds while another has
// some is a new dongle; the metrics carry the same facts.
func TestStatusSpecMetricsAndEvents(t *testing.T) {
	r := newRig(t, "00:1A:7D:DA:71:08")
	kernelPad, bluezPad, away := "E4:17:D8:C5:67:08", "E4:17:D8:C5:68:08", "E4:17:D8:C5:69:08"
	pct := func(n uint8) *uint8 { return &n }
	for addr, bat := range map[string]*uint8{kernelPad: pct(80), bluezPad: pct(64), away: nil} {
		_, err := r.sim.AddDevice("hci0", addr, bluezsim.Device{Name: "Pad " + addr[12:14], Class: 0x002508, UUIDs: []string{hid}, Trusted: true, Battery: bat})
		must(t, err)
		must(t, r.sim.Pair("hci0", addr))
	}
	must(t, r.sim.Connect("hci0", kernelPad))
	must(t, r.sim.Connect("hci0", bluezPad))
	// hid-playstation's power_supply under the first pad's HID device.
	r.sysRoot = t.TempDir()
	dev := "/devices/virtual/misc/uhid/0005:054C:0CE6.0001"
	supply := filepath.Join(r.sysRoot, dev, "power_supply", "ps-controller-battery-e4:17:d8:c5:67:08")
	must(t, os.MkdirAll(supply, 0o755))
	must(t, os.WriteFile(filepath.Join(supply, "capacity"), []byte("55\n"), 0o644))
	must(t, os.WriteFile(filepath.Join(supply, "status"), []byte("Charging\n"), 0o644))
	r.hidDev = map[string]string{kernelPad: dev}
	r.reg = prometheus.NewRegistry()
	off := false
	r.pageScan = &off
	r.start()

	battery := func(addr string) string {
		p, err := getObj[btv1.Peripheral](r, btv1.PeripheralsResource, strings.ToLower(strings.ReplaceAll(addr, ":", "-")))
		if err != nil || p.Status.Battery == nil || p.Status.Battery.Percentage == nil {
			return fmt.Sprint(err)
		}
		b := p.Status.Battery
		return fmt.Sprintf("%d %s charging=%v", *b.Percentage, b.Source, b.Charging != nil && *b.Charging)
	}
	for addr, want := range map[string]string{
		kernelPad: "55 " + btv1.BatteryFromKernel + " charging=true",
		bluezPad:  "64 " + btv1.BatteryFromBlueZ + " charging=false",
	} {
		eventually(t, "the battery of "+addr, func() (bool, string) { got := battery(addr); return got == want, got })
	}

	// Page scan off while a bonded device is away.
	var adapter *btv1.Adapter
	eventually(t, "PageScanOff", func() (bool, string) {
		var err error
		if adapter, err = getObj[btv1.Adapter](r, btv1.AdaptersResource, r.key); err != nil {
			return false, err.Error()
		}
		c := cond(adapter.Status.Conditions, btv1.ConditionPageScan)
		return c.Reason == btv1.ReasonPageScanOff && strings.Contains(c.Message, away), c.Message
	})
	r.mu.Lock()
	on := true
	r.pageScan = &on
	r.mu.Unlock()
	eventually(t, "PageScanOn", func() (bool, string) {
		a, err := getObj[btv1.Adapter](r, btv1.AdaptersResource, r.key)
		if err != nil {
			return false, err.Error()
		}
		c := cond(a.Status.Conditions, btv1.ConditionPageScan)
		return c.Status == metav1.ConditionTrue && c.Reason == btv1.ReasonPageScanOn, c.Message
	})

	// The specs.
	patchSpec := func(gvr schema.GroupVersionResource, name string, spec map[string]any) {
		data, _ := json.Marshal(map[string]any{"spec": spec})
		_, err := r.dyn.Resource(gvr).Patch(t.Context(), name, types.MergePatchType, data, metav1.PatchOptions{})
		must(t, err)
	}
	patchSpec(btv1.AdaptersResource, r.key, map[string]any{"alias": "Living room", "powered": false})
	eventually(t, "Alias and Powered on hci0", func() (bool, string) {
		alias, _ := r.sim.AdapterProperty("hci0", "Alias")
		powered, _ := r.sim.AdapterProperty("hci0", "Powered")
		a, _ := getObj[btv1.Adapter](r, btv1.AdaptersResource, r.key)
		return alias == "Living room" && powered == false && a != nil && !a.Status.Powered, fmt.Sprintf("alias %v powered %v", alias, powered)
	})
	patchSpec(btv1.AdaptersResource, r.key, map[string]any{"powered": true})
	eventually(t, "Powered again", func() (bool, string) {
		powered, _ := r.sim.AdapterProperty("hci0", "Powered")
		return powered == true, fmt.Sprint(powered)
	})
	perName := strings.ToLower(strings.ReplaceAll(bluezPad, ":", "-"))
	patchSpec(btv1.PeripheralsResource, perName, map[string]any{"alias": "Player 2"})
	eventually(t, "the Peripheral's alias on Device1", func() (bool, string) {
		alias, _ := r.sim.DeviceProperty("hci0", bluezPad, "Alias")
		return alias == "Player 2", fmt.Sprint(alias)
	})
	// status.name is the alias, as the device's name attribute is.
	eventually(t, "the alias in the Peripheral's status.name", func() (bool, string) {
		u, err := r.dyn.Resource(btv1.PeripheralsResource).Get(t.Context(), perName, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		name, _, _ := unstructured.NestedString(u.Object, "status", "name")
		return name == "Player 2", name
	})

	// Metrics.
	eventually(t, "the metrics", func() (bool, string) {
		mfs, err := r.reg.Gather()
		if err != nil {
			return false, err.Error()
		}
		got := map[string]float64{}
		for _, mf := range mfs {
			for _, m := range mf.GetMetric() {
				key := mf.GetName()
				for _, l := range m.GetLabel() {
					key += "{" + l.GetValue() + "}"
				}
				switch {
				case m.Gauge != nil:
					got[key] = m.GetGauge().GetValue()
				case m.Histogram != nil:
					got[key] = float64(m.GetHistogram().GetSampleCount())
				}
			}
		}
		kp := strings.ToLower(strings.ReplaceAll(kernelPad, ":", "-"))
		aw := strings.ToLower(strings.ReplaceAll(away, ":", "-"))
		ok := got["bluetooth_peripheral_connected{"+kp+"}"] == 1 && got["bluetooth_peripheral_connected{"+aw+"}"] == 0 &&
			got["bluetooth_peripheral_battery_percent{"+kp+"}"] == 55 && got["bluetooth_peripheral_battery_percent{"+perName+"}"] == 64 &&
			got["bluetooth_reconcile_duration_seconds"] > 0
		return ok, fmt.Sprint(got)
	})

	// Events: the adoption of each bond, and the Warning for page scan.
	evs, err := r.kube.EventsV1().Events("default").List(t.Context(), metav1.ListOptions{})
	must(t, err)
	var adopted int
	var warned bool
	for _, e := range evs.Items {
		if e.Reason == "Adopted" && strings.HasPrefix(e.Regarding.Name, "e4-17-d8-c5-6") && strings.HasSuffix(e.Regarding.Name, "-08") {
			adopted++
		}
		warned = warned || e.Regarding.Name == r.key && e.Reason == btv1.ReasonPageScanOff && e.Type == "Warning"
	}
	if adopted != 3 || !warned {
		t.Errorf("Events: %d Adopted for the three bonds (want 3), PageScanOff Warning %v", adopted, warned)
	}

	// A second radio with no bonds, while this one holds three.
	dongle := newRig(t, "00:1A:7D:DA:72:08")
	dongle.start()
	eventually(t, "the new dongle", func() (bool, string) {
		a, err := getObj[btv1.Adapter](dongle, btv1.AdaptersResource, dongle.key)
		if err != nil {
			return false, err.Error()
		}
		c := cond(a.Status.Conditions, btv1.ConditionBondsRestored)
		return c.Status == metav1.ConditionFalse && c.Reason == btv1.ReasonNewAdapter, c.Message
	})
}

// TestEitherSpelling: a request that names its adapter as BlueZ spells
// the address and its device as a Peripheral is named (the spellings the
// kubectl plugin takes for both) is taken by the adapter's operator and
// pairs that device.
func TestEitherSpelling(t *testing.T) {
	r := newRig(t, "00:1A:7D:DA:71:09")
	r.start()
	const pad = "E4:17:D8:C5:69:01"
	_, err := r.sim.AddDevice("hci0", pad, bluezsim.Device{Name: "pad", Class: 0x002508, UUIDs: []string{hid}, RSSI: -40})
	must(t, err)
	r.create("spelt", btv1.PairingRequestSpec{Adapter: "00:1a:7D:DA:71:09", Device: "e4-17-d8-c5-69-01", WindowSeconds: 120})
	req := r.waitRequest("spelt", "Paired", func(p *btv1.PairingRequest) bool { return p.Status.Phase.Finished() })
	if req.Status.Phase != btv1.PhasePaired || req.Status.Peripheral != "e4-17-d8-c5-69-01" {
		t.Errorf("request %s peripheral %q, conditions %+v; want Paired, e4-17-d8-c5-69-01", req.Status.Phase, req.Status.Peripheral, req.Status.Conditions)
	}
	if c := cond(req.Status.Conditions, btv1.ConditionAccepted); c.Status != metav1.ConditionTrue {
		t.Errorf("Accepted %+v; want the adapter's operator to hold the request", c)
	}
}

// TestHandmadePeripheral: a Peripheral a person created, with no
// adapter label, says at once that no operator made it or serves it,
// and how one is made; the status is written once, not on every pass.
func TestHandmadePeripheral(t *testing.T) {
	r := newRig(t, "00:1A:7D:DA:71:0C")
	r.start()
	create := func(name string) {
		t.Helper()
		u, err := toUnstructured(&btv1.Peripheral{ObjectMeta: metav1.ObjectMeta{Name: name}}, "Peripheral")
		must(t, err)
		_, err = r.dyn.Resource(btv1.PeripheralsResource).Create(t.Context(), u, metav1.CreateOptions{})
		must(t, err)
		t.Cleanup(func() {
			_ = r.dyn.Resource(btv1.PeripheralsResource).Delete(context.Background(), name, metav1.DeleteOptions{})
		})
	}
	marked := func(name string) *btv1.Peripheral {
		t.Helper()
		var per *btv1.Peripheral
		eventually(t, "Connected and Ready False NotServed on "+name, func() (bool, string) {
			var err error
			per, err = getObj[btv1.Peripheral](r, btv1.PeripheralsResource, name)
			if err != nil {
				return false, err.Error()
			}
			c, rd := cond(per.Status.Conditions, btv1.ConditionConnected), cond(per.Status.Conditions, btv1.ConditionReady)
			return c.Status == metav1.ConditionFalse && c.Reason == btv1.ReasonNotServed &&
				rd.Status == metav1.ConditionFalse && rd.Reason == btv1.ReasonNotServed, fmt.Sprintf("%+v", per.Status)
		})
		return per
	}
	const first, second = "e4-17-d8-c5-67-a1", "e4-17-d8-c5-67-a2"
	create(first)
	per := marked(first)
	if m := cond(per.Status.Conditions, btv1.ConditionConnected).Message; !strings.Contains(m, "no bluetooth operator made this Peripheral") ||
		!strings.Contains(m, "PairingRequest") || !strings.Contains(m, btv1.AdapterLabel) {
		t.Errorf("NotServed message %q: want it to say no operator made it, how one is made, and the label it lacks", m)
	}
	// Another one makes the operator pass again: the first is left as
	// it was.
	create(second)
	marked(second)
	again, err := getObj[btv1.Peripheral](r, btv1.PeripheralsResource, first)
	must(t, err)
	if again.ResourceVersion != per.ResourceVersion {
		t.Errorf("the first hand-made Peripheral was written again: resourceVersion %s, then %s", per.ResourceVersion, again.ResourceVersion)
	}
}

// TestUnservedAdapter: an Adapter a person created under an address no
// operator's radio has is marked NotServed once the grace has passed,
// naming the radios there are; when a radio of that address comes, its
// operator takes the object over and reports it Present.
func TestUnservedAdapter(t *testing.T) {
	r := newRig(t, "00:1A:7D:DA:71:0A")
	r.start()
	eventually(t, "the rig's own Adapter", func() (bool, string) {
		a, err := getObj[btv1.Adapter](r, btv1.AdaptersResource, r.key)
		return err == nil && isTrue(a.Status.Conditions, btv1.ConditionPresent), fmt.Sprint(err)
	})
	const typo = "00-1a-7d-da-71-0b"
	obj := &btv1.Adapter{ObjectMeta: metav1.ObjectMeta{Name: typo}}
	u, err := toUnstructured(obj, "Adapter")
	must(t, err)
	created, err := r.dyn.Resource(btv1.AdaptersResource).Create(t.Context(), u, metav1.CreateOptions{})
	must(t, err)
	r.clock.Advance(created.GetCreationTimestamp().Add(notFoundGrace + time.Second).Sub(r.clock.Now()))
	var c metav1.Condition
	eventually(t, "Present False NotServed on "+typo, func() (bool, string) {
		a, err := getObj[btv1.Adapter](r, btv1.AdaptersResource, typo)
		if err != nil {
			return false, err.Error()
		}
		c = cond(a.Status.Conditions, btv1.ConditionPresent)
		return c.Status == metav1.ConditionFalse && c.Reason == btv1.ReasonNotServed, fmt.Sprintf("%+v", a.Status)
	})
	// The shared control plane holds the Adapters of every test so far:
	// the list is sorted and cut after a few.
	if !strings.Contains(c.Message, "address "+typo+";") || !strings.Contains(c.Message, " (node node-t-7") || !strings.Contains(c.Message, "(kubectl get adapters)") {
		t.Errorf("NotServed message %q: want it to name %s and the radios there are", c.Message, typo)
	}

	// The radio comes: its operator takes the Adapter over.
	late := newRig(t, "00:1A:7D:DA:71:0B")
	late.start()
	eventually(t, "Present True on "+typo, func() (bool, string) {
		a, err := getObj[btv1.Adapter](late, btv1.AdaptersResource, typo)
		if err != nil {
			return false, err.Error()
		}
		return isTrue(a.Status.Conditions, btv1.ConditionPresent) && a.Status.Node == "node-"+late.ns, fmt.Sprintf("%+v", a.Status)
	})
}

// TestPairOnAPoweredOffRadio: a request for a radio its Adapter powered
// off says so (WindowOpen False, PoweredOff) and opens nothing; powered
// on, the window opens.
func TestPairOnAPoweredOffRadio(t *testing.T) {
	r := newRig(t, "00:1A:7D:DA:71:0D")
	r.start()
	eventually(t, "the Adapter", func() (bool, string) {
		a, err := getObj[btv1.Adapter](r, btv1.AdaptersResource, r.key)
		return err == nil && a.Status.Powered, fmt.Sprint(err)
	})
	powered := func(on bool) {
		data, _ := json.Marshal(map[string]any{"spec": map[string]any{"powered": on}})
		_, err := r.dyn.Resource(btv1.AdaptersResource).Patch(t.Context(), r.key, types.MergePatchType, data, metav1.PatchOptions{})
		must(t, err)
	}
	powered(false)
	eventually(t, "the radio off", func() (bool, string) {
		a, err := getObj[btv1.Adapter](r, btv1.AdaptersResource, r.key)
		return err == nil && !a.Status.Powered, fmt.Sprint(err)
	})
	r.create("off", btv1.PairingRequestSpec{WindowSeconds: 120})
	req := r.waitRequest("off", "PoweredOff", func(p *btv1.PairingRequest) bool {
		return cond(p.Status.Conditions, btv1.ConditionWindowOpen).Reason == btv1.ReasonPoweredOff
	})
	if c := cond(req.Status.Conditions, btv1.ConditionWindowOpen); c.Status != metav1.ConditionFalse || !strings.Contains(c.Message, "spec.powered of Adapter "+r.key) ||
		req.Status.Phase != btv1.PhaseOpen {
		t.Errorf("request on a powered-off radio: phase %s, WindowOpen %+v; want Open, False naming the Adapter's spec.powered", req.Status.Phase, c)
	}
	if got := r.radio(); got["Discoverable"] == true {
		t.Errorf("a powered-off radio was made discoverable: %v", got)
	}
	// Its Event says the radio is off, not that it is discoverable.
	eventually(t, "the PoweredOff Event", func() (bool, string) {
		evs, err := r.kube.EventsV1().Events(r.ns).List(t.Context(), metav1.ListOptions{})
		if err != nil {
			return false, err.Error()
		}
		var reasons []string
		for _, e := range evs.Items {
			if e.Regarding.Name == "off" {
				reasons = append(reasons, e.Type+" "+e.Reason)
			}
		}
		return slices.Equal(reasons, []string{"Warning " + btv1.ReasonPoweredOff}), fmt.Sprint(reasons)
	})
	// The pass asks to run again when the window closes, so that the
	// request expires then with no other wake.
	r.mu.Lock()
	after := r.last.After
	r.mu.Unlock()
	if after <= 0 || after > 120*time.Second {
		t.Errorf("a pass with a request open on a powered-off radio asks for the next pass after %s; want the window's close, at most 120s", after)
	}
	powered(true)
	r.waitRequest("off", "the window open", func(p *btv1.PairingRequest) bool { return isTrue(p.Status.Conditions, btv1.ConditionWindowOpen) })
	eventually(t, "the radio's window", func() (bool, string) {
		got := r.radio()
		return got["Discoverable"] == true, fmt.Sprint(got)
	})
}
