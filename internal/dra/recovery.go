// SPDX-License-Identifier: Apache-2.0

package dra

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/klog/v2"
	"tags.cncf.io/container-device-interface/pkg/cdi"
)

// loadCheckpoint reads the prepared-claim state. A file that cannot be
// trusted (corrupt, or a version this driver does not know, e.g. after a
// rollback) is moved aside, never deleted, and the state is rebuilt from
// this driver's CDI specs: each spec is a claim some pod may be using, so it
// must stay, and its devices must stay held. Refusing to start instead would
// leave every pod on the node without its devices.
func (d *Driver) loadCheckpoint(ctx context.Context) error {
	logger := klog.FromContext(ctx)
	path := filepath.Join(d.opts.PluginDir, CheckpointFile)
	cp, err := loadCheckpoint(path)
	if errors.Is(err, errCorruptCheckpoint) {
		cause := err
		moved, qerr := quarantine(path)
		if qerr != nil {
			return fmt.Errorf("dra: %v; %w", err, qerr)
		}
		cp, err = loadCheckpoint(path)
		if err == nil {
			adopted := d.adoptSpecs(ctx, cp)
			logger.Error(cause, "Checkpoint cannot be trusted; rebuilt the prepared claims from their CDI specs", "movedTo", moved, "adopted", adopted)
			err = cp.save()
		}
	}
	if err != nil {
		return fmt.Errorf("dra: %w", err)
	}
	boot := readBootID(d.opts.BootIDPath)
	if cp.body.BootID != "" && boot != "" && cp.body.BootID != boot {
		logger.Info("Node rebooted since the checkpoint was written; prepared claims keep their CDI specs", "claims", len(cp.body.Claims))
	}
	if boot != cp.body.BootID && boot != "" {
		cp.body.BootID = boot
		if err := cp.save(); err != nil {
			return fmt.Errorf("dra: %w", err)
		}
	}
	d.cp = cp
	d.metrics.preparedClaims.Set(float64(len(cp.body.Claims)))
	return nil
}

// repairCDI makes the CDI directory agree with the checkpoint: every
// completed claim has its spec (a reboot wipes a tmpfs /var/run/cdi while the
// kubelet still holds the claims prepared), and no spec of this driver
// exists for a claim the checkpoint does not know. It logs one summary line.
func (d *Driver) repairCDI(ctx context.Context) {
	logger := klog.FromContext(ctx)
	unlock, lerr := d.lockState()
	if lerr != nil {
		logger.Error(lerr, "Reconciling CDI specs with the checkpoint")
		return
	}
	defer unlock()
	rebuilt, removed, failed := 0, 0, 0
	for uid, rec := range d.cp.body.Claims {
		if rec.Phase != phaseCompleted || d.cdi.current(uid, rec.Devices) {
			continue
		}
		if err := d.cdi.write(uid, rec.Devices); err != nil {
			failed++
			logger.Error(err, "Rebuilding CDI spec", "claim", klog.KRef(rec.Namespace, rec.Name), "uid", uid)
			continue
		}
		rebuilt++
	}
	uids, err := d.cdi.claimUIDs()
	if err != nil {
		logger.Error(err, "Listing CDI specs", "dir", d.opts.CDIDir)
	}
	for _, uid := range uids {
		if rec, ok := d.cp.body.Claims[uid]; ok && rec.Phase == phaseCompleted {
			continue
		}
		if err := d.cdi.remove(uid); err != nil {
			failed++
			logger.Error(err, "Removing orphan CDI spec", "uid", uid)
			continue
		}
		removed++
	}
	logger.Info("Reconciled CDI specs with the checkpoint", "preparedClaims", len(d.cp.body.Claims),
		"rebuilt", rebuilt, "removedOrphans", removed, "failed", failed)
	d.cp.removeStaleTemps(logger)
}

// forgetAbandoned drops claims whose prepare started but never completed
// (the process died half way) once the API server confirms the claim no
// longer exists. A completed claim is never dropped this way: only the
// kubelet's unprepare ends it.
func (d *Driver) forgetAbandoned(ctx context.Context) {
	unlock, err := d.lockState()
	if err != nil {
		klog.FromContext(ctx).Error(err, "Reading the checkpoint for abandoned claims")
		return
	}
	var started []types.UID
	for uid, rec := range d.cp.body.Claims {
		if rec.Phase == phaseStarted {
			started = append(started, uid)
		}
	}
	unlock()
	for _, uid := range started {
		_ = wait.PollUntilContextCancel(ctx, 5*time.Second, true, func(ctx context.Context) (bool, error) {
			d.mu.Lock()
			rec, ok := d.cp.body.Claims[uid]
			d.mu.Unlock()
			if !ok || rec.Phase != phaseStarted {
				return true, nil
			}
			claim, err := d.opts.KubeClient.ResourceV1().ResourceClaims(rec.Namespace).Get(ctx, rec.Name, metav1.GetOptions{})
			switch {
			case apierrors.IsNotFound(err), err == nil && claim.UID != uid:
			case err != nil:
				return false, nil // API server unreachable: try again
			default:
				return true, nil // still exists: the kubelet will prepare or unprepare it
			}
			if forgot, err := d.dropStarted(uid); err != nil || !forgot {
				return err == nil, nil
			}
			klog.FromContext(ctx).Info("Forgot a claim whose prepare never completed and which no longer exists", "claim", klog.KRef(rec.Namespace, rec.Name), "uid", uid)
			return true, nil
		})
	}
}

// dropStarted removes a claim's spec and record if, under the state lock,
// it is still only started: another process may have completed it since.
func (d *Driver) dropStarted(uid types.UID) (bool, error) {
	unlock, err := d.lockState()
	if err != nil {
		return false, err
	}
	defer unlock()
	if rec, ok := d.cp.body.Claims[uid]; !ok || rec.Phase != phaseStarted {
		return false, nil
	}
	if err := d.cdi.remove(uid); err != nil {
		return false, err
	}
	if err := d.cp.update(func(c map[types.UID]*claimRecord) { delete(c, uid) }); err != nil {
		return false, err
	}
	d.metrics.preparedClaims.Set(float64(len(d.cp.body.Claims)))
	return true, nil
}

// adoptSpecs records every CDI spec of this driver as a completed claim:
// its devices (the spec's device names minus the claim UID), their edits,
// and this node's pool. Namespace and name are unknown and stay empty; the
// kubelet's unprepare needs only the UID. It returns how many it adopted.
func (d *Driver) adoptSpecs(ctx context.Context, cp *checkpoint) int {
	logger := klog.FromContext(ctx)
	uids, err := d.cdi.claimUIDs()
	if err != nil {
		logger.Error(err, "Listing CDI specs to adopt", "dir", d.opts.CDIDir)
		return 0
	}
	for _, uid := range uids {
		spec, err := cdi.ReadSpec(d.cdi.path(uid), 0)
		if err != nil {
			logger.Error(err, "CDI spec not adopted", "uid", uid)
			continue
		}
		rec := &claimRecord{Phase: phaseCompleted, Updated: time.Now().UTC()}
		for _, dev := range spec.Devices {
			device := strings.TrimPrefix(dev.Name, string(uid)+"-")
			rec.Devices = append(rec.Devices, preparedDevice{Pool: d.opts.NodeName, Device: device, CDIName: dev.Name, Edits: dev.ContainerEdits})
		}
		cp.body.Claims[uid] = rec
	}
	return len(cp.body.Claims)
}
