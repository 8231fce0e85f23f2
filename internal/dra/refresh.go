// SPDX-License-Identifier: Apache-2.0

package dra

import (
	"context"
	"fmt"
	"slices"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
)

// EditsFunc returns the container edits a device of this driver gives
// now, given the edits it was prepared with; ok false leaves them as they
// are.
type EditsFunc func(device string, prepared ContainerEdits) (edits ContainerEdits, ok bool)

// ClaimEditsFunc is EditsFunc told which claim the device is prepared
// for, for edits that are the claim's own (a node made for that claim).
type ClaimEditsFunc func(claim types.UID, device string, prepared ContainerEdits) (edits ContainerEdits, ok bool)

// RefreshEdits brings every prepared claim's CDI spec up to date with the
// hardware: for each device of each prepared claim it asks current for
// the device's edits now, and rewrites the spec (then the checkpoint) of
// every claim whose edits changed. It is for hardware whose node moves
// under a prepared claim (a USB device's usbfs node gets a new number at
// each enumeration): the runtime reads the spec when it creates a
// container, so the next container of the claim's pod receives the
// current node, while a running one keeps what it has. It returns how
// many claims were rewritten; an error names the claim whose spec or
// record could not be written, whose old spec then stays.
//
// A device keeps, for its claim's life, whether it has a CDI ID: the
// kubelet holds the IDs it was answered at prepare and hands them to the
// runtime at every container start. So edits that would turn empty (the
// device would leave the spec, and the ID would no longer resolve), or
// turn non-empty for a device prepared without edits (no ID to carry
// them), are not applied; each such device is logged.
func (d *Driver) RefreshEdits(ctx context.Context, current EditsFunc) (int, error) {
	return d.RefreshClaimEdits(ctx, func(_ types.UID, device string, prepared ContainerEdits) (ContainerEdits, bool) {
		return current(device, prepared)
	})
}

// RefreshClaimEdits is RefreshEdits with the claim's UID handed to
// current. current runs with the driver's state locked (no prepare or
// unprepare runs meanwhile, in this process or a rolling update's other
// one): it must not call the Driver.
func (d *Driver) RefreshClaimEdits(ctx context.Context, current ClaimEditsFunc) (int, error) {
	unlock, err := d.lockState()
	if err != nil {
		return 0, err
	}
	defer unlock()
	uids := make([]types.UID, 0, len(d.cp.body.Claims))
	for uid := range d.cp.body.Claims {
		uids = append(uids, uid)
	}
	slices.Sort(uids)
	rewritten := 0
	for _, uid := range uids {
		rec := d.cp.body.Claims[uid]
		if rec.Phase != phaseCompleted {
			continue
		}
		devices := slices.Clone(rec.Devices)
		changed := false
		for i := range devices {
			edits, ok := current(uid, devices[i].Device, devices[i].Edits)
			if !ok || equality.Semantic.DeepEqual(edits, devices[i].Edits) {
				continue
			}
			if hasEdits(edits) != hasEdits(devices[i].Edits) {
				klog.FromContext(ctx).Info("Prepared device's edits changed between none and some; kept as prepared, since the kubelet's CDI IDs for the claim cannot change",
					"claim", klog.KRef(rec.Namespace, rec.Name), "uid", uid, "device", devices[i].Device, "editsNow", hasEdits(edits))
				continue
			}
			devices[i].Edits, changed = edits, true
		}
		if !changed {
			continue
		}
		if err := d.cdi.write(uid, devices); err != nil {
			return rewritten, fmt.Errorf("dra: refresh claim %s/%s: %w", rec.Namespace, rec.Name, err)
		}
		next := *rec
		next.Devices, next.Updated = devices, time.Now().UTC()
		if err := d.cp.update(func(c map[types.UID]*claimRecord) { c[uid] = &next }); err != nil {
			return rewritten, fmt.Errorf("dra: refresh claim %s/%s: %w", rec.Namespace, rec.Name, err)
		}
		rewritten++
		klog.FromContext(ctx).Info("Prepared claim's devices changed; its CDI spec now names them", "claim", klog.KRef(rec.Namespace, rec.Name), "uid", uid)
	}
	return rewritten, nil
}
