// SPDX-License-Identifier: Apache-2.0

package pairing

import (
	"strings"
	"testing"

	btv1 "github.com/liken-sh/operators/api/bluetooth/v1alpha1"
	"github.com/liken-sh/operators/internal/bdaddr"
)

func TestValidateSpec(t *testing.T) {
	ok := btv1.PairingRequestSpec{Adapter: "00-1a-7d-da-71-13", WindowSeconds: 180, Device: "e4:17:d8:c5:67:6d", PIN: "0000"}
	if err := ValidateSpec(ok); err != nil {
		t.Fatal(err)
	}
	// Both spellings of both addresses, as the schema and the kubectl
	// plugin take them.
	if err := ValidateSpec(btv1.PairingRequestSpec{Adapter: "00:1A:7D:DA:71:13", Device: "e4-17-d8-c5-67-6d"}); err != nil {
		t.Errorf("the other spellings: %v", err)
	}
	year, minus := int32(365*24*3600), int32(-1)
	for _, c := range []struct {
		field string
		spec  btv1.PairingRequestSpec
	}{
		{"spec.adapter", btv1.PairingRequestSpec{Adapter: "00:1A-7D:DA:71:13"}},
		{"spec.windowSeconds", btv1.PairingRequestSpec{Adapter: ok.Adapter, WindowSeconds: year}},
		{"spec.device", btv1.PairingRequestSpec{Adapter: ok.Adapter, Device: strings.Repeat("x", 10<<10)}},
		{"spec.pin", btv1.PairingRequestSpec{Adapter: ok.Adapter, PIN: "00\n00"}},
		{"spec.ttlSecondsAfterFinished", btv1.PairingRequestSpec{Adapter: ok.Adapter, TTLSecondsAfterFinished: &minus}},
	} {
		err := ValidateSpec(c.spec)
		if err == nil || !strings.HasPrefix(err.Error(), c.field) || len(err.Error()) > 200 {
			t.Errorf("%s: %v", c.field, err)
		}
	}
}

// FuzzValidateSpec: any spec is answered without a panic, with an error
// of bounded size naming a spec field, and an accepted spec is one the
// operator can act on (its adapter and device parse, its window is in
// bounds).
func FuzzValidateSpec(f *testing.F) {
	f.Add("00-1a-7d-da-71-13", int32(180), "E4:17:D8:C5:67:6D", "0000", int32(86400))
	f.Add("00:1A:7D:DA:71:13", int32(31536000), "gamepad", "00\n00", int32(-1))
	f.Add("", int32(0), "", "", int32(0))
	f.Fuzz(func(t *testing.T, adapter string, window int32, device, pin string, ttl int32) {
		s := btv1.PairingRequestSpec{Adapter: adapter, WindowSeconds: window, Device: device, PIN: pin, TTLSecondsAfterFinished: &ttl}
		err := ValidateSpec(s)
		if err != nil {
			if !strings.HasPrefix(err.Error(), "spec.") || len(err.Error()) > 300 {
				t.Fatalf("error %q", err)
			}
			return
		}
		if _, err := bdaddr.Parse(strings.ReplaceAll(adapter, "-", ":")); err != nil {
			t.Fatalf("accepted adapter %q: %v", adapter, err)
		}
		if device != "" {
			if _, err := bdaddr.Parse(device); err != nil {
				t.Fatalf("accepted device %q: %v", device, err)
			}
		}
		if window != 0 && (window < btv1.MinWindowSeconds || window > btv1.MaxWindowSeconds) {
			t.Fatalf("accepted window %d", window)
		}
		if len(pin) > 16 {
			t.Fatalf("accepted a PIN of %d bytes", len(pin))
		}
	})
}
