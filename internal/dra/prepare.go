// SPDX-License-Identifier: Apache-2.0

package dra

import (
	"context"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"time"

	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/dynamic-resource-allocation/kubeletplugin"
	"k8s.io/klog/v2"
	drapbv1 "k8s.io/kubelet/pkg/apis/dra/v1"
)

// planner binds the operator's typed PrepareFunc into a planFunc.
func planner[P any](driver string, prepare PrepareFunc[P]) planFunc {
	return func(claim *resourceapi.ResourceClaim, results []resourceapi.DeviceRequestAllocationResult) ([]func(context.Context) (ContainerEdits, error), error) {
		steps := make([]func(context.Context) (ContainerEdits, error), 0, len(results))
		for _, r := range results {
			params, err := decodeParams[P](blocksFor(driver, claim.Status.Allocation, r.Request))
			if err != nil {
				return nil, fmt.Errorf("request %q, device %q: %w", r.Request, r.Device, err)
			}
			req := DeviceRequest[P]{Claim: claim, Result: r, Params: params}
			steps = append(steps, func(ctx context.Context) (ContainerEdits, error) { return prepare(ctx, req) })
		}
		return steps, nil
	}
}

// PrepareResourceClaims implements kubeletplugin.DRAPlugin. Each claim gets
// its own result: one claim's failure never touches another's state.
func (d *Driver) PrepareResourceClaims(ctx context.Context, claims []*resourceapi.ResourceClaim) (map[types.UID]kubeletplugin.PrepareResult, error) {
	out := make(map[types.UID]kubeletplugin.PrepareResult, len(claims))
	for _, claim := range claims {
		start := time.Now()
		devices, err := d.prepareClaim(ctx, claim)
		d.metrics.prepareTotal.WithLabelValues(result(err)).Inc()
		d.metrics.prepareSeconds.Observe(time.Since(start).Seconds())
		if err != nil {
			klog.FromContext(ctx).Error(err, "Prepare failed", "claim", klog.KObj(claim), "uid", claim.UID)
			out[claim.UID] = kubeletplugin.PrepareResult{Err: fmt.Errorf("claim %s/%s: %w", claim.Namespace, claim.Name, err)}
			continue
		}
		out[claim.UID] = kubeletplugin.PrepareResult{Devices: devices}
	}
	return out, nil
}

func (d *Driver) prepareClaim(ctx context.Context, claim *resourceapi.ResourceClaim) ([]kubeletplugin.Device, error) {
	logger := klog.FromContext(ctx).WithValues("claim", klog.KObj(claim), "uid", claim.UID)
	if err := validUID(claim.UID); err != nil {
		return nil, err
	}
	unlock, err := d.lockState()
	if err != nil {
		return nil, err
	}
	defer unlock()

	if rec := d.cp.body.Claims[claim.UID]; rec != nil && rec.Phase == phaseCompleted {
		return d.answerAgain(logger, claim.UID, rec)
	}

	if claim.Status.Allocation == nil {
		return nil, fmt.Errorf("not allocated")
	}
	var results []resourceapi.DeviceRequestAllocationResult
	var others []string
	for _, r := range claim.Status.Allocation.Devices.Results {
		if r.Driver == d.opts.DriverName {
			results = append(results, r)
		} else if !slices.Contains(others, r.Driver) {
			others = append(others, r.Driver)
		}
	}
	if len(results) == 0 {
		return nil, fmt.Errorf("no device of driver %s is allocated to it (allocated drivers: %s)", d.opts.DriverName, strings.Join(others, ", "))
	}
	steps, err := d.plan(claim, results)
	if err != nil {
		return nil, err
	}
	if err := d.checkExclusive(claim, results); err != nil {
		return nil, err
	}

	rec := &claimRecord{Namespace: claim.Namespace, Name: claim.Name, Phase: phaseStarted, Updated: time.Now().UTC()}
	if err := d.cp.update(func(c map[types.UID]*claimRecord) { c[claim.UID] = rec }); err != nil {
		return nil, err
	}
	reached(stepPrepareRecordedStarted)
	devices := make([]preparedDevice, 0, len(results))
	for i, r := range results {
		edits, err := runStep(ctx, steps[i])
		if err != nil {
			d.abandon(ctx, claim.UID)
			return nil, fmt.Errorf("device %s: %w", r.Device, err)
		}
		devices = append(devices, preparedDevice{
			Requests: []string{r.Request}, Pool: r.Pool, Device: r.Device, ShareID: r.ShareID,
			AdminAccess: r.AdminAccess != nil && *r.AdminAccess,
			CDIName:     deviceName(claim.UID, r.Device, r.ShareID), Edits: edits,
		})
		reached(stepPrepareDevicePrepared)
	}
	if err := d.cdi.write(claim.UID, devices); err != nil {
		d.abandon(ctx, claim.UID)
		return nil, err
	}
	reached(stepPrepareSpecWritten)
	done := &claimRecord{Namespace: claim.Namespace, Name: claim.Name, Phase: phaseCompleted, Updated: time.Now().UTC(), Devices: devices}
	if err := d.cp.update(func(c map[types.UID]*claimRecord) { c[claim.UID] = done }); err != nil {
		// Without the record a restarted driver would not know the claim;
		// fail so the kubelet retries, and leave no spec behind.
		d.abandon(ctx, claim.UID)
		return nil, err
	}
	reached(stepPrepareRecordedCompleted)
	d.metrics.preparedClaims.Set(float64(len(d.cp.body.Claims)))
	d.claimsChanged()
	logger.V(2).Info("Prepared claim", "devices", len(devices))
	return d.kubeletDevices(claim.UID, devices), nil
}

// abandon undoes a prepare that failed half way: its spec and its record.
// Failures are only logged; the record left behind is retried or cleaned up.
func (d *Driver) abandon(ctx context.Context, uid types.UID) {
	logger := klog.FromContext(ctx)
	if err := d.cdi.remove(uid); err != nil {
		logger.Error(err, "Cleaning up after a failed prepare", "uid", uid)
	}
	if err := d.cp.update(func(c map[types.UID]*claimRecord) { delete(c, uid) }); err != nil {
		logger.Error(err, "Cleaning up after a failed prepare", "uid", uid)
	}
}

// checkExclusive refuses a device that another prepared claim holds. The
// scheduler should never allocate it twice; the driver is the last line of
// defence. Admin access and shared (ShareID) grants are not exclusive.
func (d *Driver) checkExclusive(claim *resourceapi.ResourceClaim, results []resourceapi.DeviceRequestAllocationResult) error {
	for _, r := range results {
		if (r.AdminAccess != nil && *r.AdminAccess) || r.ShareID != nil {
			continue
		}
		for uid, rec := range d.cp.body.Claims {
			if uid == claim.UID {
				continue
			}
			for _, held := range rec.Devices {
				if held.Pool == r.Pool && held.Device == r.Device && !held.AdminAccess && held.ShareID == nil {
					return fmt.Errorf("device %s/%s is already prepared for claim %s/%s (uid %s)", r.Pool, r.Device, rec.Namespace, rec.Name, uid)
				}
			}
		}
	}
	return nil
}

// preparedAnswer is the kubelet's answer for a claim the checkpoint holds
// as completed under the same namespace and name, its spec rebuilt if a
// reboot wiped it; ok is false for any other claim (and when the spec
// cannot be rebuilt, so that the full path reports why).
func (d *Driver) preparedAnswer(ctx context.Context, c *drapbv1.Claim) (*drapbv1.NodePrepareResourceResponse, bool) {
	uid := types.UID(c.Uid)
	if validUID(uid) != nil {
		return nil, false
	}
	unlock, err := d.lockState()
	if err != nil {
		return nil, false
	}
	defer unlock()
	rec := d.cp.body.Claims[uid]
	if rec == nil || rec.Phase != phaseCompleted || rec.Namespace != c.Namespace || rec.Name != c.Name {
		return nil, false
	}
	devices, err := d.answerAgain(klog.FromContext(ctx).WithValues("claim", klog.KRef(rec.Namespace, rec.Name), "uid", uid), uid, rec)
	if err != nil {
		return nil, false
	}
	d.metrics.prepareTotal.WithLabelValues(result(nil)).Inc()
	res := &drapbv1.NodePrepareResourceResponse{}
	for _, dev := range devices {
		requests := make([]string, 0, len(dev.Requests))
		for _, r := range dev.Requests {
			// The kubelet knows requests by their top-level name: a
			// subrequest "gpu/large" is answered as "gpu", as the
			// helper does.
			requests = append(requests, strings.SplitN(r, "/", 2)[0])
		}
		res.Devices = append(res.Devices, &drapbv1.Device{
			RequestNames: requests, PoolName: dev.PoolName, DeviceName: dev.DeviceName,
			CdiDeviceIds: dev.CDIDeviceIDs, ShareId: (*string)(dev.ShareID),
		})
	}
	return res, true
}

// answerAgain is the answer for a claim already prepared: the kubelet
// asks again after its own restart, and after a reboot wiped the CDI
// directory (often a tmpfs) while it still holds the claim as prepared.
// The answer is the same, with the spec rebuilt if it is missing. The
// caller holds the state lock.
func (d *Driver) answerAgain(logger klog.Logger, uid types.UID, rec *claimRecord) ([]kubeletplugin.Device, error) {
	if !d.cdi.current(uid, rec.Devices) {
		if err := d.cdi.write(uid, rec.Devices); err != nil {
			return nil, err
		}
		logger.Info("Rebuilt missing CDI spec of a prepared claim")
	}
	return d.kubeletDevices(uid, rec.Devices), nil
}

// kubeletDevices is the kubelet's answer for a prepared claim: each
// device with its CDI ID, except a device without edits, which is in no
// spec (hasEdits) and so carries none.
func (d *Driver) kubeletDevices(uid types.UID, devices []preparedDevice) []kubeletplugin.Device {
	out := make([]kubeletplugin.Device, 0, len(devices))
	for _, p := range devices {
		dev := kubeletplugin.Device{Requests: p.Requests, PoolName: p.Pool, DeviceName: p.Device, ShareID: p.ShareID}
		if hasEdits(p.Edits) {
			dev.CDIDeviceIDs = []string{d.cdi.qualified(p.CDIName)}
		}
		out = append(out, dev)
	}
	return out
}

// UnprepareResourceClaims implements kubeletplugin.DRAPlugin. Unpreparing a
// claim this driver never prepared (or already unprepared) is success.
func (d *Driver) UnprepareResourceClaims(ctx context.Context, claims []kubeletplugin.NamespacedObject) (map[types.UID]error, error) {
	out := make(map[types.UID]error, len(claims))
	for _, ref := range claims {
		start := time.Now()
		err := d.unprepareClaim(ctx, ref.UID)
		d.metrics.unprepareTotal.WithLabelValues(result(err)).Inc()
		d.metrics.unprepareSeconds.Observe(time.Since(start).Seconds())
		if err != nil {
			klog.FromContext(ctx).Error(err, "Unprepare failed", "claim", ref.NamespacedName, "uid", ref.UID)
			err = fmt.Errorf("claim %s: %w", ref.NamespacedName, err)
		}
		out[ref.UID] = err
	}
	return out, nil
}

func (d *Driver) unprepareClaim(ctx context.Context, uid types.UID) error {
	if err := validUID(uid); err != nil {
		return err
	}
	unlock, err := d.lockState()
	if err != nil {
		return err
	}
	defer unlock()
	// The spec goes first: a record without a spec is repaired by the next
	// call, a spec without a record would be an orphan grant.
	if err := d.cdi.remove(uid); err != nil {
		return err
	}
	reached(stepUnprepareSpecRemoved)
	if _, ok := d.cp.body.Claims[uid]; !ok {
		return nil
	}
	if err := d.cp.update(func(c map[types.UID]*claimRecord) { delete(c, uid) }); err != nil {
		return err
	}
	reached(stepUnprepareRecordRemoved)
	d.metrics.preparedClaims.Set(float64(len(d.cp.body.Claims)))
	d.claimsChanged()
	klog.FromContext(ctx).V(2).Info("Unprepared claim", "uid", uid)
	return nil
}

// runStep runs an operator's prepare step, turning a panic into an error:
// one bad device must fail its claim, not kill the plugin that serves every
// claim on the node (the gRPC server does not recover handler panics).
func runStep(ctx context.Context, step func(context.Context) (ContainerEdits, error)) (edits ContainerEdits, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("prepare panicked: %v", r)
		}
	}()
	return step(ctx)
}

// uidPattern is what a claim UID may look like: the API server issues
// RFC 4122 UUIDs; anything with a path separator or a dot could name a file
// outside this driver's specs, since the UID becomes part of a file name.
var uidPattern = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9-]{0,127}$`)

func validUID(uid types.UID) error {
	if !uidPattern.MatchString(string(uid)) {
		return fmt.Errorf("claim UID %q is not a UID", uid)
	}
	return nil
}
