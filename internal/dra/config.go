// SPDX-License-Identifier: Apache-2.0

package dra

import (
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"slices"

	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/dynamic-resource-allocation/resourceclaim"
	"sigs.k8s.io/json"
)

// Defaulter is implemented by a parameter type (on its pointer) that has
// defaults other than Go's zero values. Default runs before any opaque block
// is decoded onto the value.
type Defaulter interface{ Default() }

// Validator is implemented by a parameter type (on its pointer) that checks
// the merged result. Its error reaches the kubelet as the claim's error, so
// it should name the offending field and value.
type Validator interface{ Validate() error }

// opaqueBlock is one of this driver's config entries in an allocation, in
// the order it applies.
type opaqueBlock struct {
	index    int // position in status.allocation.devices.config
	source   resourceapi.AllocationConfigSource
	requests []string
	raw      []byte
}

func (b opaqueBlock) describe() string {
	src := "class"
	if b.source == resourceapi.AllocationConfigSourceClaim {
		src = "claim"
	}
	if len(b.requests) == 0 {
		return fmt.Sprintf("config[%d] (from %s)", b.index, src)
	}
	return fmt.Sprintf("config[%d] (from %s, requests %v)", b.index, src, b.requests)
}

// blocksFor returns this driver's opaque blocks that apply to one request,
// ordered so that a later block overrides an earlier one: class before
// claim, and within a source the blocks naming no request before those
// naming this one. The request may be a subrequest ("req/sub"); a block may
// name either it or its parent request.
func blocksFor(driver string, alloc *resourceapi.AllocationResult, request string) []opaqueBlock {
	var out []opaqueBlock
	for i, c := range alloc.Devices.Config {
		if c.Opaque == nil || c.Opaque.Driver != driver {
			continue
		}
		if len(c.Requests) > 0 && !slices.Contains(c.Requests, request) && !slices.Contains(c.Requests, resourceclaim.BaseRequestRef(request)) {
			continue
		}
		out = append(out, opaqueBlock{index: i, source: c.Source, requests: c.Requests, raw: c.Opaque.Parameters.Raw})
	}
	rank := func(b opaqueBlock) int {
		r := 0
		if b.source == resourceapi.AllocationConfigSourceClaim {
			r += 2
		}
		if len(b.requests) > 0 {
			r++
		}
		return r
	}
	slices.SortStableFunc(out, func(a, b opaqueBlock) int { return cmp.Compare(rank(a), rank(b)) })
	return out
}

// decodeParams merges blocks onto a fresh P field by field: a later block
// sets only the keys it names. Decoding is strict: an unknown or duplicated
// key is an error that names the key and the block.
func decodeParams[P any](blocks []opaqueBlock) (P, error) {
	var p P
	if d, ok := any(&p).(Defaulter); ok {
		d.Default()
	}
	for _, b := range blocks {
		raw := bytes.TrimSpace(b.raw)
		if len(raw) == 0 || raw[0] != '{' {
			return p, fmt.Errorf("opaque %s: parameters must be a JSON object", b.describe())
		}
		strict, err := json.UnmarshalStrict(raw, &p, json.DisallowDuplicateFields, json.DisallowUnknownFields)
		if err != nil {
			return p, fmt.Errorf("opaque %s: %w", b.describe(), err)
		}
		if len(strict) > 0 {
			return p, fmt.Errorf("opaque %s: %w", b.describe(), errors.Join(strict...))
		}
	}
	if v, ok := any(&p).(Validator); ok {
		if err := v.Validate(); err != nil {
			return p, fmt.Errorf("opaque parameters: %w", err)
		}
	}
	return p, nil
}

// ParamsOf decodes the parameters of request in claim for driver, as
// prepare receives them in DeviceRequest.Params (class blocks before
// claim blocks, general before request-specific, strictly, validated),
// for a prepare that needs the parameters of the claim's other requests
// too. An unallocated claim has none: P's defaults.
func ParamsOf[P any](driver string, claim *resourceapi.ResourceClaim, request string) (P, error) {
	if claim.Status.Allocation == nil {
		return decodeParams[P](nil)
	}
	return decodeParams[P](blocksFor(driver, claim.Status.Allocation, request))
}
