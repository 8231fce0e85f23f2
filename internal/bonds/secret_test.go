// SPDX-License-Identifier: Apache-2.0

package bonds

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/liken-sh/operators/internal/bdaddr"
	"github.com/liken-sh/operators/test/fixtures"
)

func TestEncodeSecret(t *testing.T) {
	b := recordedBonds(t)[0]
	s := EncodeSecret("liken-system", b)
	if s.Name != "bluetooth-bond-5c-f3-70-8b-1a-2e-e4-17-d8-c5-67-6d" || s.Namespace != "liken-system" {
		t.Fatalf("name %s/%s", s.Namespace, s.Name)
	}
	if errs := validation.IsDNS1123Subdomain(s.Name); len(errs) > 0 {
		t.Fatalf("name: %v", errs)
	}
	if s.Type != corev1.SecretTypeOpaque || s.Labels[AdapterLabel] != "5c-f3-70-8b-1a-2e" || s.Labels[AppLabel] != AppName {
		t.Fatalf("type %s labels %v", s.Type, s.Labels)
	}
	if errs := validation.IsValidLabelValue(s.Labels[AdapterLabel]); len(errs) > 0 {
		t.Fatalf("label value: %v", errs)
	}
	if len(s.Data) != 2 || !bytes.Equal(s.Data["e4-17-d8-c5-67-6d.info"], b.Info) || !bytes.Equal(s.Data["e4-17-d8-c5-67-6d.cache"], b.Cache) {
		t.Fatalf("data keys %v", s.Data)
	}
	for k := range s.Data {
		if errs := validation.IsConfigMapKey(k); len(errs) > 0 {
			t.Fatalf("key %s: %v", k, errs)
		}
	}
	// No cache, no key.
	if s := EncodeSecret("ns", recordedBonds(t)[1]); len(s.Data) != 1 {
		t.Fatalf("mouse data %v", s.Data)
	}
	// The Secret holds copies: changing the bond later does not change it.
	b.Info[0] = 'X'
	if s.Data["e4-17-d8-c5-67-6d.info"][0] == 'X' {
		t.Fatal("the Secret shares the bond's bytes")
	}
}

// manyInputs is an input list of n minimal devices: 5,000 of them fit in
// MaxInputSize.
func manyInputs(n int) []byte {
	return []byte("[" + strings.TrimSuffix(strings.Repeat(`{"name":"x"},`, n), ",") + "]")
}

// padInput is a pad's input capabilities as the relay records them.
var padInput = []byte(`[{"name":"Wireless Controller","id":{"bus":5,"vendor":1356,"product":2508,"version":33024},"key":[304,305],"abs":[{"code":0,"value":128,"min":0,"max":255}]}]`)

func TestDecodeSecretRoundTrip(t *testing.T) {
	withInput := recordedBonds(t)[0]
	withInput.Input = padInput
	if got, skipped := DecodeSecret(adapter, EncodeSecret("ns", withInput)); len(skipped) != 0 || len(got) != 1 || !bytes.Equal(got[0].Input, padInput) {
		t.Fatalf("a bond with input capabilities decoded to %+v, skipped %v", got, skipped)
	}
	for _, b := range recordedBonds(t) {
		got, skipped := DecodeSecret(adapter, EncodeSecret("ns", b))
		if len(skipped) != 0 || len(got) != 1 {
			t.Fatalf("%s: %v %v", b.Device, got, skipped)
		}
		if got[0].Device != b.Device || got[0].Adapter != adapter || !bytes.Equal(got[0].Info, b.Info) || !bytes.Equal(got[0].Cache, b.Cache) {
			t.Fatalf("%s: decoded %+v", b.Device, got[0])
		}
	}
}

// hostile is a Secret carrying the adapter's label and every kind of bad
// content beside one good bond.
func hostile(t *testing.T) *corev1.Secret {
	info, cache := fixtures.BlueZ(t, "8bitdo-nes30-pro.info"), fixtures.BlueZ(t, "8bitdo-nes30-pro.cache")
	return &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "bluetooth-bond-evil", Namespace: "ns", Labels: map[string]string{AdapterLabel: adapter.Key()}},
		Data: map[string][]byte{
			"e4-17-d8-c5-67-6d.info":  info,
			"e4-17-d8-c5-67-6d.cache": cache,
			"E4-17-D8-C5-67-6D.info":  info,                                                            // the same device again
			"etc-passwd.info":         info,                                                            // not an address
			"..info":                  info,                                                            // not an address
			"00-00-00-00-00-00.info":  info,                                                            // the zero address
			"aa-bb-cc-dd-ee-01.info":  []byte("root:x:0:0::/root:/bin/sh"),                             // not a key file
			"aa-bb-cc-dd-ee-01.cache": cache,                                                           // its bond was refused
			"aa-bb-cc-dd-ee-02.info":  append(bytes.Repeat([]byte("# pad\n"), MaxInfoSize/6), info...), // oversized
			"aa-bb-cc-dd-ee-03.cache": cache,                                                           // no info beside it
			"aa-bb-cc-dd-ee-04.info":  info,
			"aa-bb-cc-dd-ee-04.cache": []byte("\xff\xfe binary"), // bad cache, good info
			"aa-bb-cc-dd-ee-05.info":  info,
			"aa-bb-cc-dd-ee-05.cache": {},                                        // empty: no cache
			"aa-bb-cc-dd-ee-06":       info,                                      // the reference's bare key
			"aa-bb-cc-dd-ee-04":       info,                                      // bare, but .info already there
			"e4-17-d8-c5-67-6d.input": padInput,                                  // good
			"aa-bb-cc-dd-ee-05.input": []byte(`[{"name":"x","key":[1024]}]`),     // a code past KEY_MAX
			"aa-bb-cc-dd-ee-06.input": []byte(`{"not":"a list"}`),                // not a list
			"aa-bb-cc-dd-ee-03.input": padInput,                                  // no info beside it
			"aa-bb-cc-dd-ee-07.input": bytes.Repeat([]byte(" "), MaxInputSize+1), // oversized, and no info
			"aa-bb-cc-dd-ee-04.input": manyInputs(5000),                          // 5,000 devices in the size bound
			"aa-bb-cc-dd-ee-08.info":  info,
			"aa-bb-cc-dd-ee-08.input": []byte(`null`), // not a list
		},
	}
}

func TestDecodeSecretHostile(t *testing.T) {
	bonds, skipped := DecodeSecret(adapter, hostile(t))
	var devices []string
	for _, b := range bonds {
		if err := b.Check(); err != nil {
			t.Errorf("decoded a bond that fails Check: %v", err)
		}
		devices = append(devices, b.Device.String())
	}
	if got := strings.Join(devices, " "); got != "AA:BB:CC:DD:EE:04 AA:BB:CC:DD:EE:05 AA:BB:CC:DD:EE:06 AA:BB:CC:DD:EE:08 E4:17:D8:C5:67:6D" {
		t.Fatalf("bonds %s", got)
	}
	for _, b := range bonds {
		if b.Device == pad && !bytes.Equal(b.Cache, fixtures.BlueZ(t, "8bitdo-nes30-pro.cache")) {
			t.Error("the pad lost its cache")
		}
		if b.Device != pad && b.Cache != nil {
			t.Errorf("%s has a cache", b.Device)
		}
		if (b.Device == pad) != (b.Input != nil) || (b.Input != nil && !bytes.Equal(b.Input, padInput)) {
			t.Errorf("%s has input %q", b.Device, b.Input)
		}
	}
	wantSkipped := map[string]string{
		"E4-17-D8-C5-67-6D.info":  "already holds device",
		"etc-passwd.info":         "with a Bluetooth address",
		"..info":                  "with a Bluetooth address",
		"00-00-00-00-00-00.info":  "zero address",
		"aa-bb-cc-dd-ee-01.info":  "not a BlueZ key file",
		"aa-bb-cc-dd-ee-01.cache": "was skipped",
		"aa-bb-cc-dd-ee-02.info":  "more than the 65536 allowed",
		"aa-bb-cc-dd-ee-03.cache": "no info for device",
		"aa-bb-cc-dd-ee-04.cache": "cache is not a BlueZ key file",
		"aa-bb-cc-dd-ee-04":       "superseded by aa-bb-cc-dd-ee-04.info",
		"aa-bb-cc-dd-ee-05.input": "input device 0: input device capabilities: key: code 0x400",
		"aa-bb-cc-dd-ee-06.input": "cannot unmarshal object",
		"aa-bb-cc-dd-ee-03.input": "no info for device",
		"aa-bb-cc-dd-ee-07.input": "no info for device",
		"aa-bb-cc-dd-ee-04.input": "5000 input devices, more than the 16",
		"aa-bb-cc-dd-ee-08.input": "null, want a JSON list",
	}
	if len(skipped) != len(wantSkipped) {
		t.Errorf("%d skipped, want %d: %v", len(skipped), len(wantSkipped), skipped)
	}
	for _, err := range skipped {
		var se *SkipError
		if !errors.As(err, &se) || se.Secret != "ns/bluetooth-bond-evil" {
			t.Errorf("not a SkipError naming the Secret: %v", err)
			continue
		}
		if want, ok := wantSkipped[se.Key]; !ok || !strings.Contains(se.Reason, want) {
			t.Errorf("key %q skipped for %q, want %q", se.Key, se.Reason, want)
		}
		if !strings.Contains(err.Error(), se.Key) {
			t.Errorf("message does not name the key: %v", err)
		}
	}
}

// Addresses that name no device bonded with the adapter, in every
// spelling a key may use, are skipped with the reason; a valid bond beside
// them is kept. Bond.Check refuses them too, so WriteTree and Sync would.
func TestDecodeSecretRefusesAddressesOfNoDevice(t *testing.T) {
	info := recordedBonds(t)[0].Info
	s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "x", Namespace: "ns", Labels: map[string]string{AdapterLabel: adapter.Key()}},
		Data: map[string][]byte{
			"ff-ff-ff-ff-ff-ff.info":   info,
			"FF:FF:FF:FF:FF:FF":        info,
			adapter.Key() + ".info":    info,
			adapter.String() + ".info": info,
			adapter.Key():              info,
			InfoKey(pad):               info,
		}}
	bonds, skipped := DecodeSecret(adapter, s)
	if len(bonds) != 1 || bonds[0].Device != pad {
		t.Fatalf("bonds %+v", bonds)
	}
	want := map[string]string{
		"ff-ff-ff-ff-ff-ff.info":   "FF:FF:FF:FF:FF:FF is the broadcast address and names no device",
		"FF:FF:FF:FF:FF:FF":        "FF:FF:FF:FF:FF:FF is the broadcast address and names no device",
		adapter.Key() + ".info":    adapter.String() + " is the adapter's own address and names no device bonded with it",
		adapter.String() + ".info": adapter.String() + " is the adapter's own address",
		adapter.Key():              adapter.String() + " is the adapter's own address",
	}
	if len(skipped) != len(want) {
		t.Errorf("%d skipped, want %d: %v", len(skipped), len(want), skipped)
	}
	for _, err := range skipped {
		var se *SkipError
		if !errors.As(err, &se) || !strings.Contains(se.Reason, want[se.Key]) || want[se.Key] == "" {
			t.Errorf("%v, want the reason %q", err, want[se.Key])
		}
	}
	for _, device := range []bdaddr.Address{adapter, bdaddr.MustParse("FF:FF:FF:FF:FF:FF")} {
		if err := (Bond{Adapter: adapter, Device: device, Info: info}).Check(); err == nil || !strings.Contains(err.Error(), "names no device") {
			t.Errorf("Check of a bond with device %s: %v", device, err)
		}
	}
}

func TestDecodeSecretOfAnotherAdapter(t *testing.T) {
	s := EncodeSecret("ns", recordedBonds(t)[0])
	bonds, skipped := DecodeSecret(otherRadio, s)
	if len(bonds) != 0 || len(skipped) != 1 || !strings.Contains(skipped[0].Error(), "not this adapter's") {
		t.Fatalf("%v %v", bonds, skipped)
	}
}

func TestDecodeSecretsPrecedence(t *testing.T) {
	b := recordedBonds(t)[0]
	ours := *EncodeSecret("ns", b)
	// The reference's per-bond Secret holds an older copy of the pad.
	older := bytes.Replace(b.Info, []byte("Trusted=true"), []byte("Trusted=false"), 1)
	theirs := corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "bluetooth-bond-" + pad.Key(), Namespace: "ns", Labels: ours.Labels},
		Data:       map[string][]byte{InfoKey(pad): older},
	}
	// The reference's per-adapter Secret with the pad (older still) and
	// the mouse under a bare key.
	legacy := corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "bluetooth-bonds-" + adapter.Key(), Namespace: "ns", Labels: ours.Labels},
		Data:       map[string][]byte{pad.Key(): older, mouse.Key(): fixtures.BlueZ(t, "razer-basilisk-x-hyperspeed.info")},
	}
	for _, order := range [][]corev1.Secret{{ours, theirs, legacy}, {legacy, theirs, ours}, {theirs, legacy, ours}} {
		bonds, skipped := DecodeSecrets(adapter, order)
		if len(bonds) != 2 || bonds[0].Device != pad || bonds[1].Device != mouse {
			t.Fatalf("bonds %+v", bonds)
		}
		if !bytes.Equal(bonds[0].Info, b.Info) || !bytes.Equal(bonds[0].Cache, b.Cache) {
			t.Fatal("the pad did not come from this package's Secret")
		}
		if len(skipped) != 2 {
			t.Fatalf("skipped %v", skipped)
		}
		for _, s := range skipped {
			var se *SkipError
			if !errors.As(s, &se) || !strings.Contains(se.Reason, "which wins") {
				t.Errorf("skip reason: %v", s)
			}
			// The key named is the one that held the losing copy.
			if (se.Secret == "ns/"+legacy.Name && se.Key != pad.Key()) || (se.Secret == "ns/"+theirs.Name && se.Key != InfoKey(pad)) || se.Secret == "ns/"+ours.Name {
				t.Errorf("loser named as %s key %s", se.Secret, se.Key)
			}
		}
	}
	// Without ours, the reference's per-bond Secret beats its per-adapter one.
	bonds, _ := DecodeSecrets(adapter, []corev1.Secret{theirs, legacy})
	if !bytes.Equal(bonds[0].Info, older) || bonds[0].Cache != nil {
		t.Fatal("wrong copy of the pad")
	}
}

func FuzzDecodeSecret(f *testing.F) {
	info, cache := fixtures.BlueZ(f, "8bitdo-nes30-pro.info"), fixtures.BlueZ(f, "8bitdo-nes30-pro.cache")
	f.Add(adapter.Key(), "e4-17-d8-c5-67-6d.info", info, "e4-17-d8-c5-67-6d.cache", cache, "e4-17-d8-c5-67-6d", info)
	f.Add(adapter.Key(), "E4:17:D8:C5:67:6D.info", info, "../x.cache", cache, "aa-bb-cc-dd-ee-ff.cache", []byte("[G]\nk=v\n"))
	f.Add("", "x", []byte{}, "y", []byte{0}, "z", []byte("[General]"))
	f.Fuzz(func(t *testing.T, label, k1 string, v1 []byte, k2 string, v2 []byte, k3 string, v3 []byte) {
		s := &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Name: "fuzz", Namespace: "ns", Labels: map[string]string{AdapterLabel: label}},
			Data:       map[string][]byte{k1: v1, k2: v2, k3: v3},
		}
		bonds, skipped := DecodeSecret(adapter, s)
		seen := map[string]bool{}
		for _, b := range bonds {
			if err := b.Check(); err != nil {
				t.Fatalf("decoded a bond that fails Check: %v", err)
			}
			if b.Adapter != adapter || seen[b.Device.String()] {
				t.Fatalf("bond %s of %s", b.Device, b.Adapter)
			}
			seen[b.Device.String()] = true
			if !bytes.Equal(b.Info, v1) && !bytes.Equal(b.Info, v2) && !bytes.Equal(b.Info, v3) {
				t.Fatal("an info that is no value of the Secret")
			}
		}
		for _, err := range skipped {
			var se *SkipError
			if !errors.As(err, &se) || se.Secret != "ns/fuzz" {
				t.Fatalf("skip without the Secret's name: %v", err)
			}
		}
		if len(bonds) > 0 && label != adapter.Key() {
			t.Fatal("bonds from a Secret of another adapter")
		}
	})
}
