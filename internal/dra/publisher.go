// SPDX-License-Identifier: Apache-2.0

package dra

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/dynamic-resource-allocation/resourceslice"
	"k8s.io/klog/v2"

	"github.com/liken-sh/operators/internal/settle"
)

// Default settle window: a slice is written once the device set has been
// quiet for DefaultSettleQuiet, and at the latest DefaultSettleCap after the
// first unpublished change, so that a steady trickle of events cannot hold a
// real change back for ever.
const (
	DefaultSettleQuiet = 1500 * time.Millisecond
	DefaultSettleCap   = 10 * time.Second
)

// maxDevicesPerSlice is the API limit for a slice whose devices carry taints
// (resource.k8s.io/v1 ResourceSliceMaxDevicesWithAdvancedFeatures).
// Using it always keeps the split independent of which devices are tainted
// right now, so a taint appearing never reshuffles devices between slices.
const maxDevicesPerSlice = resourceapi.ResourceSliceMaxDevicesWithAdvancedFeatures

// PublishFunc hands a pool description to whatever writes ResourceSlices;
// in production it is the driver's own slice controller (slices.go).
type PublishFunc func(ctx context.Context, resources resourceslice.DriverResources) error

// publisher turns device-set updates into debounced slice writes.
type publisher struct {
	pool    string
	window  *settle.Window
	publish PublishFunc
	metrics *metrics
	// onWrite receives the devices the slice holds after every
	// successful write, and after a set that left the slice as it was
	// (a Device.Problem is not in the slice): the health reports.
	onWrite func([]Device)

	mu      sync.Mutex
	pending []Device
	// have is false until the first set; retry is true while the last
	// write of pending failed, so a set of the same devices pokes again.
	have, retry bool

	writeMu   sync.Mutex // one write at a time: the settled one or a flush
	published []resourceapi.Device
	wrote     bool
}

func newPublisher(pool string, quiet, capWait time.Duration, publish PublishFunc, m *metrics) *publisher {
	if quiet <= 0 {
		quiet = DefaultSettleQuiet
	}
	if capWait <= 0 {
		capWait = DefaultSettleCap
	}
	return &publisher{pool: pool, window: settle.New(quiet, capWait), publish: publish, metrics: m}
}

// set records the complete device set; it never blocks on the API server.
// Only a set that differs from the last one (or one whose write failed)
// pokes the settle window: operators call set on every reconcile pass, and
// passes that change nothing (a graph batch, a status write echoed back)
// must not keep the window from going quiet, or a real change waits for
// the cap instead of the quiet time.
func (p *publisher) set(devices []Device) {
	p.mu.Lock()
	same := p.have && !p.retry && equality.Semantic.DeepEqual(p.pending, devices)
	p.pending, p.have = slices.Clone(devices), true
	p.mu.Unlock()
	if !same {
		p.window.Poke()
	}
}

// run writes settled device sets until ctx ends.
func (p *publisher) run(ctx context.Context) {
	p.window.Run(ctx, func(ctx context.Context) {
		p.mu.Lock()
		devices := p.pending
		p.mu.Unlock()
		err := p.write(ctx, devices)
		p.mu.Lock()
		p.retry = err != nil
		p.mu.Unlock()
		if err != nil {
			klog.FromContext(ctx).Error(err, "Publishing devices failed", "pool", p.pool)
		}
	})
}

// flush writes the latest set now, without waiting for the window, and
// returns what was published.
func (p *publisher) flush(ctx context.Context) ([]resourceapi.Device, error) {
	p.mu.Lock()
	devices := p.pending
	p.mu.Unlock()
	if err := p.write(ctx, devices); err != nil {
		return nil, err
	}
	p.writeMu.Lock()
	defer p.writeMu.Unlock()
	return p.published, nil
}

// write publishes devices unless they equal what was last published.
func (p *publisher) write(ctx context.Context, devices []Device) error {
	p.writeMu.Lock()
	defer p.writeMu.Unlock()
	logger := klog.FromContext(ctx)
	api, err := p.apiDevices(devices)
	if err != nil {
		return err
	}
	if p.wrote && equality.Semantic.DeepEqual(api, p.published) {
		p.metrics.sliceUnchanged.Inc()
		logger.V(5).Info("Device set unchanged, no slice write", "pool", p.pool, "devices", len(api))
		if p.onWrite != nil {
			p.onWrite(devices)
		}
		return nil
	}
	var slicesOut []resourceslice.Slice
	for chunk := range slices.Chunk(api, maxDevicesPerSlice) {
		slicesOut = append(slicesOut, resourceslice.Slice{Devices: chunk})
	}
	if len(slicesOut) == 0 {
		// An empty pool tells the scheduler the driver is alive and has
		// nothing; no pool at all would tell it nothing.
		slicesOut = []resourceslice.Slice{{}}
	}
	res := resourceslice.DriverResources{Pools: map[string]resourceslice.Pool{p.pool: {Slices: slicesOut}}}
	if err := p.publish(ctx, res); err != nil {
		p.metrics.sliceErrors.Inc()
		return fmt.Errorf("publish pool %q: %w", p.pool, err)
	}
	p.published, p.wrote = api, true
	tainted := 0
	for _, d := range devices {
		if d.Tainted() {
			tainted++
		}
	}
	p.metrics.sliceWrites.Inc()
	p.metrics.publishedDevices.Set(float64(len(api)))
	p.metrics.taintedDevices.Set(float64(tainted))
	logger.Info("Published devices", "pool", p.pool, "devices", len(api), "tainted", tainted, "slices", len(slicesOut))
	if p.onWrite != nil {
		p.onWrite(devices)
	}
	return nil
}

// apiDevices validates and converts, sorted by name so that the order the
// operator happened to discover devices in never causes a write.
func (p *publisher) apiDevices(devices []Device) ([]resourceapi.Device, error) {
	out := make([]resourceapi.Device, 0, len(devices))
	seen := make(map[string]bool, len(devices))
	for _, d := range devices {
		if err := d.validate(); err != nil {
			return nil, err
		}
		if seen[d.Name] {
			return nil, fmt.Errorf("device %q published twice", d.Name)
		}
		seen[d.Name] = true
		out = append(out, d.apiDevice())
	}
	slices.SortFunc(out, func(a, b resourceapi.Device) int { return strings.Compare(a.Name, b.Name) })
	return out, nil
}
