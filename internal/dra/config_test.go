// SPDX-License-Identifier: Apache-2.0

package dra

import (
	"strings"
	"testing"

	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

type testParams struct {
	Codec  string `json:"codec"`
	Volume int    `json:"volume"`
	Label  string `json:"label"`
}

func (p *testParams) Default() { p.Volume = 100 }

func (p *testParams) Validate() error {
	if p.Volume < 0 || p.Volume > 100 {
		return &paramError{"volume out of range 0..100"}
	}
	return nil
}

type paramError struct{ s string }

func (e *paramError) Error() string { return e.s }

func opaque(source resourceapi.AllocationConfigSource, driver, raw string, requests ...string) resourceapi.DeviceAllocationConfiguration {
	return resourceapi.DeviceAllocationConfiguration{
		Source:   source,
		Requests: requests,
		DeviceConfiguration: resourceapi.DeviceConfiguration{Opaque: &resourceapi.OpaqueDeviceConfiguration{
			Driver: driver, Parameters: runtime.RawExtension{Raw: []byte(raw)},
		}},
	}
}

func allocWith(configs ...resourceapi.DeviceAllocationConfiguration) *resourceapi.AllocationResult {
	return &resourceapi.AllocationResult{Devices: resourceapi.DeviceAllocationResult{Config: configs}}
}

func TestParamsPrecedence(t *testing.T) {
	const drv = "audio.liken.sh"
	// Listed in an order that is wrong on purpose: precedence must come
	// from source and specificity, not from position.
	alloc := allocWith(
		opaque(resourceapi.AllocationConfigSourceClaim, drv, `{"codec":"claim-specific"}`, "speaker"),
		opaque(resourceapi.AllocationConfigSourceClaim, drv, `{"codec":"claim-general","label":"from-claim"}`),
		opaque(resourceapi.AllocationConfigSourceClass, drv, `{"codec":"class-specific","volume":40}`, "speaker"),
		opaque(resourceapi.AllocationConfigSourceClass, drv, `{"codec":"class-general","volume":30,"label":"from-class"}`),
		opaque(resourceapi.AllocationConfigSourceClaim, "other.example.com", `{"bogus":true}`),
		opaque(resourceapi.AllocationConfigSourceClaim, drv, `{"codec":"for-another-request"}`, "mic"),
	)
	p, err := decodeParams[testParams](blocksFor(drv, alloc, "speaker"))
	if err != nil {
		t.Fatal(err)
	}
	want := testParams{Codec: "claim-specific", Volume: 40, Label: "from-claim"}
	if p != want {
		t.Fatalf("got %+v, want %+v", p, want)
	}

	// A subrequest matches a block naming its parent request.
	p, err = decodeParams[testParams](blocksFor(drv, alloc, "speaker/sbc"))
	if err != nil || p.Codec != "claim-specific" {
		t.Fatalf("subrequest: got %+v, %v", p, err)
	}

	// No blocks: defaults only.
	p, err = decodeParams[testParams](blocksFor(drv, allocWith(), "speaker"))
	if err != nil || p != (testParams{Volume: 100}) {
		t.Fatalf("defaults: got %+v, %v", p, err)
	}
}

func TestParamsStrict(t *testing.T) {
	const drv = "audio.liken.sh"
	for name, tc := range map[string]struct {
		raw  string
		want []string
	}{
		"unknown key":   {`{"codec":"sbc","colour":"blue"}`, []string{`unknown field "colour"`, "config[0] (from claim)"}},
		"duplicate key": {`{"codec":"sbc","codec":"aac"}`, []string{`duplicate field "codec"`}},
		"wrong type":    {`{"volume":"loud"}`, []string{"volume"}},
		"not an object": {`["codec"]`, []string{"must be a JSON object"}},
		"null":          {`null`, []string{"must be a JSON object"}},
		"invalid":       {`{"codec":`, []string{"config[0]"}},
		"validation":    {`{"volume":101}`, []string{"volume out of range"}},
	} {
		t.Run(name, func(t *testing.T) {
			alloc := allocWith(opaque(resourceapi.AllocationConfigSourceClaim, drv, tc.raw))
			_, err := decodeParams[testParams](blocksFor(drv, alloc, "speaker"))
			if err == nil {
				t.Fatal("decoded without error")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not mention %q", err, w)
				}
			}
		})
	}
}

// FuzzDecodeParams feeds hostile claim parameters to the decoder: it must
// return a value or an error, never panic.
func FuzzDecodeParams(f *testing.F) {
	for _, s := range []string{`{"codec":"sbc"}`, `{"volume":5}`, `{}`, `{"a":1}`, `[]`, `null`, `{"codec":"x","codec":"y"}`, "\x00"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		alloc := allocWith(opaque(resourceapi.AllocationConfigSourceClaim, "d", string(raw)))
		p, err := decodeParams[testParams](blocksFor("d", alloc, "r"))
		if err == nil && (p.Volume < 0 || p.Volume > 100) {
			t.Fatalf("validation bypassed: %+v", p)
		}
	})
}
