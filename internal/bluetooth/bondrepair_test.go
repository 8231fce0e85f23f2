// SPDX-License-Identifier: Apache-2.0

package bluetooth

import (
	"context"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/events"

	"github.com/liken-sh/operators/internal/bdaddr"
	"github.com/liken-sh/operators/internal/bonds"
)

// TestStaleSecrets: of the edited bond Secrets, only those of this
// adapter that differ from a bond BlueZ holds are to be repaired; one of
// a bond BlueZ does not hold is reported and left alone; others (another
// adapter, a bond being unpaired, an edit that left the bond as it is)
// are not touched.
func TestStaleSecrets(t *testing.T) {
	addr := func(s string) bdaddr.Address {
		a, err := bdaddr.Parse(s)
		if err != nil {
			t.Fatal(err)
		}
		return a
	}
	adapter, other := addr("00:1A:7D:DA:71:13"), addr("00:1A:7D:DA:71:99")
	pad, keyboard, unpairing, gone := addr("E4:17:D8:C5:67:6D"), addr("C0:FF:EE:00:00:01"), addr("C0:FF:EE:00:00:02"), addr("C0:FF:EE:00:00:09")
	bond := func(a, d bdaddr.Address, info string) bonds.Bond {
		return bonds.Bond{Adapter: a, Device: d, Info: []byte(info), Cache: []byte("[General]\n")}
	}
	// cached is a Secret as watchBondSecrets caches it.
	cached := func(b bonds.Bond) *corev1.Secret {
		s := bonds.EncodeSecret("ns", b)
		s.Data = secretDigests(s.Data)
		return s
	}
	found := []bonds.Bond{bond(adapter, pad, "pad"), bond(adapter, keyboard, "keyboard")}
	edited := map[string]*corev1.Secret{}
	for _, b := range []bonds.Bond{
		bond(adapter, pad, "garbage"),         // stale
		bond(adapter, keyboard, "keyboard"),   // as BlueZ holds it
		bond(adapter, unpairing, "garbage"),   // being unpaired
		bond(adapter, gone, "garbage"),        // BlueZ holds none: reported
		bond(other, pad, "another adapter's"), // not ours
	} {
		s := cached(b)
		edited[s.Name] = s
	}
	rec := events.NewFakeRecorder(10)
	o := &operator{cfg: Config{Namespace: "ns"}, recorder: rec}
	stale := o.staleSecrets(context.Background(), adapter, found, []bdaddr.Address{unpairing}, edited)
	var names []string
	for n := range stale {
		names = append(names, n)
	}
	if diff := cmp.Diff([]string{bonds.SecretName(adapter, pad)}, names); diff != "" {
		t.Errorf("stale (-want +got):\n%s", diff)
	}
	var got []string
	for len(rec.Events) > 0 {
		got = append(got, <-rec.Events)
	}
	if len(got) != 1 || !strings.Contains(got[0], ReasonBondSecretLeftAlone) || !strings.Contains(got[0], adapter.String()) {
		t.Errorf("events %q, want one %s", got, ReasonBondSecretLeftAlone)
	}

	o.reportRepairs(context.Background(), adapter, stale, []string{bonds.SecretName(adapter, pad)}, nil)
	if e := <-rec.Events; !strings.HasPrefix(e, corev1.EventTypeNormal+" "+ReasonBondSecretRepaired) {
		t.Errorf("after the update: %q", e)
	}
	o.reportRepairs(context.Background(), adapter, stale, nil, context.DeadlineExceeded)
	if e := <-rec.Events; !strings.HasPrefix(e, corev1.EventTypeWarning+" "+ReasonBondSecretLeftAlone) || !strings.Contains(e, "deadline") {
		t.Errorf("after a failed update: %q", e)
	}
}
