// SPDX-License-Identifier: Apache-2.0

package pairing

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	btv1 "github.com/liken-sh/operators/api/bluetooth/v1alpha1"
	"github.com/liken-sh/operators/internal/bonds"
	"github.com/liken-sh/operators/test/bluezsim"
)

// TestStaleEndpointCache: a speaker that offers SBC and LDAC, whose
// cached stream endpoints list SBC alone (restored from a bond Secret
// written before a firmware update gave it LDAC). Connected, its
// Peripheral says the cache is stale and names both lists; once it
// disconnects, the cache's [Endpoints] group is removed (the rest of the
// file kept, BlueZ's mode kept) and the condition says so.
func TestStaleEndpointCache(t *testing.T) {
	r := newRig(t, "00:1A:7D:DA:74:01")
	r.bondsRoot = r.sim.StorageDir()
	const spk = "A0:AB:51:33:74:01"
	_, err := r.sim.AddSpeaker("hci0", spk, bluezsim.Speaker{Name: "Kitchen", Codecs: []bluezsim.Codec{bluezsim.SBC, bluezsim.LDAC}})
	must(t, err)
	cache := filepath.Join(r.sim.StorageDir(), r.adapter, "cache", spk)
	data, err := os.ReadFile(cache)
	must(t, err)
	eps, err := bonds.ParseEndpoints(data)
	must(t, err)
	if len(eps) != 2 {
		t.Fatalf("the simulator cached %d endpoints, want 2 (SBC, LDAC)", len(eps))
	}
	old, _, err := bonds.WithoutEndpoints(data)
	must(t, err)
	old = append(old, fmt.Sprintf("\n[Endpoints]\n01=01:00:00:%x\n", eps[0].Capabilities)...)
	must(t, os.WriteFile(cache, old, 0o600))

	r.start()
	must(t, r.sim.Connect("hci0", spk))
	name := strings.ToLower(strings.ReplaceAll(spk, ":", "-"))
	condition := func(what string, ok func(c metav1.Condition) bool) metav1.Condition {
		t.Helper()
		return r.peripheralCondition(t, name, btv1.ConditionEndpointCache, what, ok)
	}
	stale := condition("EndpointCache False, Stale", func(c metav1.Condition) bool {
		return c.Status == metav1.ConditionFalse && c.Reason == btv1.ReasonCacheStale
	})
	if want := "lists sbc, while the speaker offers sbc, vendor 0x0000012d/0x00aa now"; !strings.Contains(stale.Message, want) {
		t.Errorf("the Stale message lacks %q:\n%s", want, stale.Message)
	}
	if now, _ := os.ReadFile(cache); string(now) != string(old) {
		t.Error("the cache was changed while the speaker was connected")
	}

	must(t, r.sim.Disconnect("hci0", spk, bluezsim.ReasonRemote))
	condition("EndpointCache True, Cleared", func(c metav1.Condition) bool {
		return c.Status == metav1.ConditionTrue && c.Reason == btv1.ReasonCacheCleared
	})
	now, err := os.ReadFile(cache)
	must(t, err)
	if eps, err := bonds.ParseEndpoints(now); err != nil || len(eps) != 0 {
		t.Errorf("the cache still lists %+v (%v)", eps, err)
	}
	kept, _, err := bonds.WithoutEndpoints(old)
	must(t, err)
	if string(now) != string(kept) {
		t.Errorf("the rest of the cache changed:\n%s\nwant\n%s", now, kept)
	}
	if st, err := os.Stat(cache); err != nil || st.Mode().Perm() != 0o600 {
		t.Errorf("the cleared cache's mode: %v (%v), want 0600", st.Mode(), err)
	}
	evs, err := r.kube.EventsV1().Events("default").List(t.Context(), metav1.ListOptions{})
	must(t, err)
	found := false
	for _, e := range evs.Items {
		found = found || e.Regarding.Name == name && e.Reason == btv1.ReasonCacheCleared
	}
	if !found {
		t.Error("no Cleared Event on the Peripheral")
	}

	// Connected again: the simulator exports the speaker's endpoints
	// from its own list, with nothing cached to disagree.
	must(t, r.sim.Connect("hci0", spk))
	condition("EndpointCache True, Current", func(c metav1.Condition) bool {
		return c.Status == metav1.ConditionTrue && c.Reason == btv1.ReasonCacheCurrent
	})
}
