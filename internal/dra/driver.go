// SPDX-License-Identifier: Apache-2.0

package dra

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"

	resourceapi "k8s.io/api/resource/v1"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/dynamic-resource-allocation/kubeletplugin"
	"k8s.io/klog/v2"
)

// DeviceRequest is one allocated device of a claim, handed to the operator's
// PrepareFunc with the claim's merged opaque parameters for its request.
type DeviceRequest[P any] struct {
	// Claim is the allocated claim as the API server returned it.
	Claim *resourceapi.ResourceClaim
	// Result is the allocation result of this device: its request name
	// (possibly "request/subrequest"), pool, device name, admin access and
	// share ID. Result.Driver is always this driver.
	Result resourceapi.DeviceRequestAllocationResult
	// Params is P after defaults and every applicable opaque block of this
	// driver, class blocks before claim blocks, general before
	// request-specific, decoded strictly and validated.
	Params P
}

// PrepareFunc returns the container edits that give a consumer one
// allocated device (device nodes, mounts, environment). An error fails the
// whole claim with that message, so it should name the device and the cause.
type PrepareFunc[P any] func(ctx context.Context, req DeviceRequest[P]) (ContainerEdits, error)

// Driver is a running DRA kubelet plugin: registered with the kubelet,
// serving prepare and unprepare, publishing this node's devices.
type Driver struct {
	opts    Options
	helper  *kubeletplugin.Helper
	pub     *publisher
	slices  *sliceController
	cdi     *cdiWriter
	metrics *metrics
	plan    planFunc
	health  *healthFeed
	status  *statusWriter
	reg     *registration

	mu sync.Mutex // guards cp and serializes prepare/unprepare
	cp *checkpoint

	ctx    context.Context
	cancel context.CancelCauseFunc
	wg     sync.WaitGroup
}

// planFunc decodes and validates everything about a claim's devices before
// any side effect, returning one step per device.
type planFunc func(claim *resourceapi.ResourceClaim, results []resourceapi.DeviceRequestAllocationResult) ([]func(context.Context) (ContainerEdits, error), error)

// Start loads the checkpoint, repairs the CDI directory against it,
// registers with the kubelet and starts the publisher. The driver runs until
// ctx ends, Stop is called, or a fatal background error occurs (Done then
// closes and Err says why).
//
// Errors: a missing required option, a directory that cannot be created, an
// unreadable (not corrupt: corrupt files are moved aside) checkpoint, or a
// kubelet plugin that cannot listen on its sockets.
func Start[P any](ctx context.Context, opts Options, prepare PrepareFunc[P]) (*Driver, error) {
	if err := opts.complete(); err != nil {
		return nil, err
	}
	if prepare == nil {
		return nil, errors.New("dra: a PrepareFunc is required")
	}
	logger := klog.FromContext(ctx).WithValues("driver", opts.DriverName)
	ctx = klog.NewContext(ctx, logger)
	for _, dir := range []string{opts.RegistrarDir, opts.PluginDir, opts.CDIDir} {
		if err := os.MkdirAll(dir, 0o750); err != nil {
			return nil, fmt.Errorf("dra: %w", err)
		}
	}
	cdiw, err := newCDIWriter(opts.CDIDir, opts.DriverName, opts.CDIClass)
	if err != nil {
		return nil, fmt.Errorf("dra: %w", err)
	}
	d := &Driver{opts: opts, cdi: cdiw, metrics: newMetrics(opts.Registerer, opts.DriverName), health: newHealthFeed(opts.NodeName), reg: newRegistration()}
	d.plan = planner(opts.DriverName, prepare)
	d.status = newStatusWriter(opts.DriverName, opts.KubeClient, d.statusClaims, d.metrics)
	if err := d.loadCheckpoint(ctx); err != nil {
		return nil, err
	}
	d.repairCDI(ctx)

	d.ctx, d.cancel = context.WithCancelCause(ctx)
	pluginOpts := []kubeletplugin.Option{
		kubeletplugin.DriverName(opts.DriverName),
		kubeletplugin.NodeName(opts.NodeName),
		kubeletplugin.KubeClient(opts.KubeClient),
		kubeletplugin.RegistrarDirectoryPath(opts.RegistrarDir),
		kubeletplugin.PluginDataDirectoryPath(opts.PluginDir),
		kubeletplugin.GRPCInterceptor(d.interceptor),
	}
	if opts.PodUID != "" {
		pluginOpts = append(pluginOpts, kubeletplugin.RollingUpdate(opts.PodUID))
	}
	helper, err := kubeletplugin.Start(d.ctx, d, pluginOpts...)
	if err != nil {
		d.cancel(err)
		return nil, fmt.Errorf("dra: start kubelet plugin: %w", err)
	}
	d.helper = helper
	d.slices = &sliceController{d: d}
	d.pub = newPublisher(opts.NodeName, opts.SettleQuiet, opts.SettleCap, d.slices.publish, d.metrics)
	d.pub.onWrite = func(devices []Device) {
		d.health.publish(devices)
		d.status.publish(devices)
	}
	d.wg.Add(4)
	go func() { defer d.wg.Done(); d.status.run(d.ctx) }()
	go func() { defer d.wg.Done(); d.pub.run(d.ctx) }()
	go func() { defer d.wg.Done(); d.forgetAbandoned(d.ctx) }()
	go func() { defer d.wg.Done(); d.watchRegistration(d.ctx) }()
	logger.Info("DRA driver started", "node", opts.NodeName, "pluginDir", opts.PluginDir,
		"registrarDir", opts.RegistrarDir, "cdiDir", opts.CDIDir, "preparedClaims", len(d.cp.body.Claims))
	return d, nil
}

// SetDevices replaces the complete set of devices this node publishes. The
// write happens after the settle window and only if the content changed.
// It returns an error naming the first device the API server would refuse
// (empty name, duplicate name, too many taints, unknown taint effect); the
// previously published set then stays as it was.
func (d *Driver) SetDevices(devices []Device) error {
	if _, err := d.pub.apiDevices(devices); err != nil {
		return fmt.Errorf("dra: %w", err)
	}
	d.pub.set(devices)
	return nil
}

// Done is closed when the driver stops, by Stop, by its context, or by a
// fatal background error.
func (d *Driver) Done() <-chan struct{} { return d.ctx.Done() }

// Err returns why the driver stopped, or nil while it runs.
func (d *Driver) Err() error { return context.Cause(d.ctx) }

// Stop unregisters from the kubelet, closes the sockets and ends background
// work. Published slices stay: the kubelet removes a vanished driver's slices
// itself, and a replacement pod republishes the same pool.
func (d *Driver) Stop() {
	d.cancel(errors.New("driver stopped"))
	d.helper.Stop()
	d.slices.stop()
	d.wg.Wait()
}

// RegistrarSocket is the path of the registration socket the kubelet
// discovers; under a rolling update it carries the pod UID.
func (d *Driver) RegistrarSocket() string {
	name := d.opts.DriverName + "-reg.sock"
	if d.opts.PodUID != "" {
		name = kubeletplugin.RollingUpdateRegistrarSocketFile(d.opts.RegistrarDir, d.opts.DriverName, d.opts.PodUID)
	}
	return filepath.Join(d.opts.RegistrarDir, name)
}

// HandleError implements kubeletplugin.DRAPlugin: background errors (slice
// publishing) are logged and counted; a fatal one stops the driver so the
// process can exit and be restarted.
func (d *Driver) HandleError(ctx context.Context, err error, msg string) {
	fatal := !errors.Is(err, kubeletplugin.ErrRecoverable)
	d.metrics.backgroundErrors.WithLabelValues(fmt.Sprint(fatal)).Inc()
	utilruntime.HandleErrorWithContext(ctx, err, msg)
	if fatal {
		d.cancel(fmt.Errorf("%s: %w", msg, err))
	}
}
